"""Names a user types (a task, a language, a system, a judge, who is labelling): the closest
known name to a misspelt one, how a message lists the valid ones, and what an annotator's name
may be. Shared by the CLI's option checks, the app's filter and the browser's name form."""

from __future__ import annotations

import difflib

from calibrate.escape import safe

CLOSE_ENOUGH = 0.75  # difflib's ratio from which a known name is offered as the one meant
MAX_NAME = 64  # the longest annotator name
CONSOLIDATED = "gold"
"""The annotator an export names for a gold label several people's labels make: no person, so
no one labels under it, and `calibrate import labels` refuses it (it would vote beside the
people it consolidates)."""


class AnnotatorNameError(ValueError):
    """An annotator name that labels cannot be kept under (empty, too long, unprintable, or with '@')."""


def annotator_name(value: str | None, where: str = "name") -> str:
    """Who is labelling, as typed (a flag, the browser's name form, an annotators file), stripped:
    non-empty, at most MAX_NAME printable characters, without '@' (which names a browser tab),
    and not CONSOLIDATED."""
    name = (value or "").strip()
    if not name or len(name) > MAX_NAME or safe(name) != name or "\n" in name or "@" in name:
        raise AnnotatorNameError(f"{where}: an annotator name is 1-{MAX_NAME} printable characters without '@'")
    if name == CONSOLIDATED:
        raise AnnotatorNameError(f"{where}: {CONSOLIDATED!r} names the label several people decided in exports, "
                                 "not a person: choose another name")
    return name


LANGUAGE_NAMES = {"english": "en", "eng": "en", "英文": "en", "英语": "en",
                  "chinese": "zh", "mandarin": "zh", "zho": "zh", "chi": "zh", "cn": "zh", "中文": "zh", "汉语": "zh"}
"""Language names a user may type for a language code: no spelling of "english" is close to "en"."""


def closest(value: str, known: list[str]) -> str | None:
    """The known name closest to a misspelt one (case aside), if any is close enough: the code
    of a language named in words (LANGUAGE_NAMES) where the code is known."""
    by_folded = {name.casefold(): name for name in known}
    if by_folded.get(LANGUAGE_NAMES.get(value.casefold(), "")):
        return by_folded[LANGUAGE_NAMES[value.casefold()]]
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
