"""Text from data made safe for where it is written: a terminal, Markdown, a spreadsheet, JSON.

Text from data is never interpreted: `safe` is the one function every command and widget
passes data through before printing it (values, field names, ids, judge and annotator names,
notes), so an escape sequence in a benchmark item cannot clear a screen, retitle a window or
write the clipboard, and a bidi override cannot reorder what the annotator reads; and no
character is invisible, so two ids that differ by a zero-width space look different. Exports
keep the data exactly: JSON writes those characters as \\u escapes, CSV only neutralises
formulas, Markdown table cells have their markup characters made literal, and text bound for
a terminal is made safe only when it really goes to one (`for_terminal`).
"""

from __future__ import annotations

import json
import re
import sys

# C0 controls but newline, DEL, C1 controls (U+0080-U+009F, U+009B is a one-byte CSI), and the
# bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E-F, U+202A-E, U+2066-9).
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Characters that draw nothing: the soft hyphen, the combining grapheme joiner, Hangul and
# Khmer fillers, Mongolian variation selectors and vowel separator, the zero-width space, the
# line and paragraph separators, the word joiner and invisible operators, the deprecated format
# characters, the BOM, interlinear annotation marks, shorthand and musical format controls,
# the tag characters (hidden text) and the variation selectors 17-256. Kept as they are: the
# zero-width (non-)joiners and variation selectors 1-16, which shape emoji and scripts visibly.
_INVISIBLE_BMP = ("\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u2028\u2029\u2060-\u2064\u206a-\u206f"
                  "\u3164\ufeff\uffa0\ufff9-\ufffb")
_INVISIBLE_ASTRAL = "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f\U000e0100-\U000e01ef"
_INVISIBLE = re.compile(f"[{_INVISIBLE_BMP}{_INVISIBLE_ASTRAL}]")
# What JSON writes as \u escapes: both sets, those in the Basic Multilingual Plane in one class (one pass over
# the text), those beyond it in another, looked for only in text that has characters beyond it (a class
# holding them is matched range by range, about three times slower on a Chinese line).
_JSON_ESCAPED = re.compile(_UNSAFE.pattern[:-1] + _INVISIBLE_BMP + "]")
_JSON_ESCAPED_ASTRAL = re.compile(f"[{_INVISIBLE_ASTRAL}]")


def safe(text) -> str:
    """Any text from data, safe to print on a terminal: control characters (ESC included), C1
    controls and bidirectional overrides, which act on the terminal, are shown as escapes
    (`\\x1b`, `\\u202e`), never interpreted; characters that draw nothing are named
    (`<U+200B>`). Newlines stay; a tab becomes four spaces; None becomes ""."""
    if text is None:
        return ""
    text = str(text).replace("\r\n", "\n").replace("\t", "    ")
    return _INVISIBLE.sub(_named, _UNSAFE.sub(_visible, text))


def safe_json(value, indent: int | None = 2) -> str:
    """`value` as JSON that is also terminal-safe: the characters `safe` shows differently are
    written as JSON \\u escapes, so the text stays valid JSON with exactly the same value."""
    return json_text_safe(json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False))


def json_text_safe(text: str) -> str:
    """JSON text (any number of documents, such as JSON lines) with the characters `safe` shows
    differently written as JSON \\u escapes: the same values, terminal-safe (see `safe_json`)."""
    text = _JSON_ESCAPED.sub(_json_escape, text)
    if len(text.encode("utf-16-le", "surrogatepass")) > 2 * len(text):  # a character beyond the BMP: two units
        text = _JSON_ESCAPED_ASTRAL.sub(_json_escape, text)
    return text


# UTF-8 that may hold a character beyond ASCII that `json_text_safe` changes: every such character's bytes
# match (a few other characters' too); each branch starts with a byte, so that the search skips to them
_JSON_ESCAPED_UTF8 = re.compile(rb"\xc2[\x80-\x9f\xad]|\xcd\x8f|\xd8\x9c|\xe1[\x85\x9e\xa0]|\xe2\x80[\x8b-\x8f\xa8-\xae]"
                                rb"|\xe2\x81[\xa0-\xaf]|\xe3\x85\xa4|\xef\xbb\xbf|\xef\xbe\xa0|\xef\xbf[\xb9-\xbb]|\xf0\x9b"
                                rb"|\xf0\x9d\x85|\xf3\xa0")


def json_bytes_safe(data: bytes) -> bytes:
    """`json_text_safe` of compact JSON text in UTF-8 (no control characters but in escapes, as
    SQLite and `json.dumps` write it on one line), decoded only where it may hold a character to
    change: DEL, or one beyond ASCII that `_JSON_ESCAPED_UTF8` finds (most text, in any script,
    holds none). They are looked for among the bytes left once the ASCII ones are dropped (every
    byte of a character beyond ASCII is 0x80 or more, so each such character's bytes stay whole
    and in order): a few passes over what is mostly ASCII text, where the search itself would
    look at every byte."""
    if data.isascii() and b"\x7f" not in data:
        return data
    beyond = data.translate(None, _ASCII_BUT_DEL)
    if b"\x7f" not in beyond and _JSON_ESCAPED_UTF8.search(beyond) is None:
        return data
    return json_text_safe(data.decode()).encode()


_ASCII_BUT_DEL = bytes(range(0x7F))


def for_terminal(text: str, stream=None) -> str:
    """`text` about to be written to `stream` (default: standard output): made safe (see
    `safe`) when the stream is a terminal, else left exactly as it is, so a file or a pipe gets
    the data (a CSV export redirected to a file keeps an ESC in a field)."""
    stream = sys.stdout if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return safe(text) if isatty is not None and isatty() else text


def _json_escape(match: re.Match) -> str:
    """One character as a JSON \\u escape (a surrogate pair beyond the BMP)."""
    return json.dumps(match.group(), ensure_ascii=True)[1:-1]


def _named(match: re.Match) -> str:
    return f"<U+{ord(match.group()):04X}>"


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def spreadsheet_safe(value) -> str:
    """A CSV cell that a spreadsheet will not run as a formula: text starting with = + - @, a
    tab or a carriage return gets a leading apostrophe; numbers such as -0.05 stay numbers.
    Nothing else changes (None becomes ""): a CSV file keeps the data, and what prints it on a
    terminal makes it safe there (`for_terminal`)."""
    text = "" if value is None else str(value)
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _NUMBER.match(text):
        return "'" + text
    return text


def spreadsheet_unsafe(cell: str) -> str:
    """A cell as it was before `spreadsheet_safe`: the apostrophe it puts first taken off (a
    gold export's CSV read back)."""
    return cell[1:] if cell[:1] == "'" and spreadsheet_safe(cell[1:]) == cell else cell


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_safe(value) -> str:
    """Data as literal Markdown text inside a table cell or list item: terminal-safe (see `safe`),
    newlines as spaces, and the characters that make emphasis, code, links, HTML, strike-through
    or a new table column backslash-escaped (line-start markers such as # and - cannot occur
    here: every line the reports write starts with their own text)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", safe(value).replace("\n", " "))
