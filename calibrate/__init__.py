"""calibrate: can an LLM judge be trusted? Import items, render judge prompts, run judges,
label verdicts in a terminal, and measure judge-vs-human agreement, all in one SQLite file."""

__version__ = "0.1.0"
