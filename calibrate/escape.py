"""Text from data made safe for where it is written: a terminal, Markdown, a spreadsheet, JSON.

Text from data is never interpreted: `safe` is the one function every command and widget
passes data through before printing it (values, field names, ids, judge and annotator names,
notes), so an escape sequence in a benchmark item cannot clear a screen, retitle a window or
write the clipboard, and a bidi override cannot reorder what the annotator reads. The other
writers build on it: JSON with the same characters as \\u escapes, CSV cells a spreadsheet will
not run as formulas, Markdown table cells whose markup characters are literal.
"""

from __future__ import annotations

import json
import re

# C0 controls but newline, DEL, C1 controls (U+0080-U+009F, U+009B is a one-byte CSI), and the
# bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E-F, U+202A-E, U+2066-9).
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def safe(text) -> str:
    """Any text from data, safe to print on a terminal: control characters (ESC included), C1
    controls and bidirectional overrides are shown as visible escapes (`\\x1b`, `\\u202e`),
    never interpreted. Newlines stay; a tab becomes four spaces; None becomes ""."""
    if text is None:
        return ""
    text = str(text).replace("\r\n", "\n").replace("\t", "    ")
    return _UNSAFE.sub(_visible, text)


def safe_json(value, indent: int | None = 2) -> str:
    """`value` as JSON that is also terminal-safe: the characters `safe` shows as escapes are
    written as JSON \\u escapes, so the text stays valid JSON with exactly the same value."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def spreadsheet_safe(value) -> str:
    """A CSV cell that is terminal-safe (see `safe`) and that a spreadsheet will not run as a
    formula: text starting with = + - @ gets a leading apostrophe; numbers such as -0.05 stay
    numbers."""
    text = safe(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.match(text):
        return "'" + text
    return text


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_safe(value) -> str:
    """Data as literal Markdown text inside a table cell or list item: terminal-safe (see `safe`),
    newlines as spaces, and the characters that make emphasis, code, links, HTML, strike-through
    or a new table column backslash-escaped (line-start markers such as # and - cannot occur
    here: every line the reports write starts with their own text)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", safe(value).replace("\n", " "))
