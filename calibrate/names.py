"""Names a user types (a task, a language, a system, a judge): the closest known name to a
misspelt one, and how a message lists the valid ones. Shared by the CLI's option checks and
the app's filter."""

from __future__ import annotations

import difflib

CLOSE_ENOUGH = 0.75  # difflib's ratio from which a known name is offered as the one meant


def closest(value: str, known: list[str]) -> str | None:
    """The known name closest to a misspelt one (case aside), if any is close enough."""
    by_folded = {name.casefold(): name for name in known}
    found = difflib.get_close_matches(value.casefold(), list(by_folded), n=1, cutoff=CLOSE_ENOUGH)
    return by_folded[found[0]] if found else None


def listing(names: list[str], limit: int | None = None) -> str:
    """The names comma-separated ("(none)" for the empty name), at most `limit` of them."""
    shown = names if limit is None or len(names) <= limit else names[:limit]
    text = ", ".join(name or "(none)" for name in shown) or "none yet"
    return text + (f" and {len(names) - len(shown)} more" if len(shown) < len(names) else "")


def unknown_value(what: str, value: str, known: list[str], known_as: str) -> str:
    """"unknown task 'c3/lexcal' (did you mean c3/lexical?); known tasks: …": a value no list
    holds, the closest match and every valid value."""
    match = closest(value, known)
    return f"unknown {what} {value!r}" + (f" (did you mean {match}?)" if match else "") + f"; {known_as}: {listing(known)}"
