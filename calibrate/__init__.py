"""calibrate: can an LLM judge be trusted? Import items, render judge prompts, run judges,
label verdicts in a terminal, and measure judge-vs-human agreement, all in one SQLite file."""

import os

__version__ = "0.1.0"

# The statistics run numpy and scipy on small arrays, where OpenBLAS's pool of threads costs more than it gives:
# its threads spin between calls, on the cores SQLite's threads need (a 1M-item `scores` took 11.8 s of CPU for
# 7.6 s with one BLAS thread). One BLAS thread, unless the environment says otherwise; set before numpy loads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
