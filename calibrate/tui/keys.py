"""Keys as a person types them: Textual names keys (`slash`, `question_mark`, `pagedown`);
help pages and messages show `/`, `?`, `pgdn` instead."""

from __future__ import annotations

import unicodedata

from textual.keys import Keys, format_key

_NAMED = {"enter": "Enter", "space": "space", "tab": "Tab", "escape": "Esc"}


def typed_key(key: str) -> str:
    """One key as typed: `slash` -> `/`, `question_mark` -> `?`, `enter` -> `Enter`."""
    return _NAMED.get(key) or format_key(key)


def typed_keys(keys: str) -> str:
    """A binding's comma-separated keys as typed, e.g. `right,j` -> `→ j`."""
    return " ".join(typed_key(k.strip()) for k in keys.split(",") if k.strip())


_MODIFIERS = {"ctrl", "shift", "alt", "meta", "super", "hyper"}
_KEY_NAMES = {key.value.rsplit("+", 1)[-1] for key in Keys} | {"space", "tab", "enter", "backspace", "delete"}


def key_problem(key: str) -> str | None:
    """Why Textual would never see `key` as written in a keymap (None when it can): modifiers
    (ctrl, shift, alt, meta, super, hyper) joined by + to one key, named as Textual names it
    (`a`, `enter`, `pagedown`, `f5`, `question_mark`)."""
    *modifiers, name = key.split("+")
    if unknown := [m for m in modifiers if m not in _MODIFIERS]:
        return f"{key!r}: {unknown[0]!r} is not a modifier (ctrl, shift, alt, meta, super, hyper)"
    if len(name) == 1 or name in _KEY_NAMES:
        return None
    try:
        unicodedata.lookup(name.replace("_", " "))
        return None
    except KeyError:
        return f"{key!r}: no key is named {name!r} (a character, or a name such as enter, pagedown, f5, question_mark)"
