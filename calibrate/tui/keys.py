"""Keys as a person types them: Textual names keys (`slash`, `question_mark`, `pagedown`);
help pages and messages show `/`, `?`, `pgdn` instead."""

from __future__ import annotations

from textual.keys import format_key

_NAMED = {"enter": "Enter", "space": "space", "tab": "Tab", "escape": "Esc"}


def typed_key(key: str) -> str:
    """One key as typed: `slash` -> `/`, `question_mark` -> `?`, `enter` -> `Enter`."""
    return _NAMED.get(key) or format_key(key)


def typed_keys(keys: str) -> str:
    """A binding's comma-separated keys as typed, e.g. `right,j` -> `→ j`."""
    return " ".join(typed_key(k.strip()) for k in keys.split(",") if k.strip())
