"""How an item reads to a person: its fields in a sensible order, the dialogue as turns, the
response under test, the reference, and the judge's verdict in words.

Kept apart from the Textual app so the same text serves the TUI, tests and any other view.
Text from data is never interpreted: `safe` is the one function every command and widget
passes data through before printing it (values, field names, ids, judge and annotator names,
notes), so an escape sequence in a benchmark item cannot clear a screen, retitle a window or
write the clipboard, and a bidi override cannot reorder what the annotator reads; and no
character is invisible, so two ids that differ by a zero-width space look different. Exports
keep the data exactly: JSON writes those characters as \\u escapes, CSV only neutralises
formulas, and text bound for a terminal is made safe only when it really goes to one.
"""

from __future__ import annotations

import json
import re
import sys

from calibrate.model import Item
from calibrate.templates import Template

# C0 controls but newline, DEL, C1 controls (U+0080-U+009F, U+009B is a one-byte CSI), and the
# bidirectional marks, embeddings, overrides and isolates (U+061C, U+200E-F, U+202A-E, U+2066-9).
_UNSAFE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Characters that draw nothing: the soft hyphen, the combining grapheme joiner, Hangul and
# Khmer fillers, Mongolian variation selectors and vowel separator, the zero-width space, the
# line and paragraph separators, the word joiner and invisible operators, the deprecated format
# characters, the BOM, interlinear annotation marks, shorthand and musical format controls,
# the tag characters (hidden text) and the variation selectors 17-256. Kept as they are: the
# zero-width (non-)joiners and variation selectors 1-16, which shape emoji and scripts visibly.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b\u2028\u2029\u2060-\u2064\u206a-\u206f"
    "\u3164\ufeff\uffa0\ufff9-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
    "\U000e0100-\U000e01ef]"
)
_SENT = re.compile(r"<b>\s*Sent\s*(\d+)\s*:\s*</b>", re.IGNORECASE)


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
    text = json.dumps(value, ensure_ascii=False, indent=indent, allow_nan=False)
    return _INVISIBLE.sub(_json_escape, _UNSAFE.sub(_json_escape, text))


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


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def markdown_safe(value) -> str:
    """Data as literal Markdown text inside a table cell or list item: terminal-safe (see `safe`),
    newlines as spaces, and the characters that make emphasis, code, links, HTML, strike-through
    or a new table column backslash-escaped (line-start markers such as # and - cannot occur
    here: every line the reports write starts with their own text)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", safe(value).replace("\n", " "))


def readable_passage(text: str) -> str:
    """MultiRC marks sentences with <b>Sent k: </b> and <br>: show them as numbered lines."""
    if "<" not in text:  # a plain passage (of any size) is left as it is, at once
        return text.strip()
    text = _SENT.sub(lambda m: f"[{m.group(1)}] ", text)
    text = re.sub(r"<br\s*/?>", "\n", text, flags=re.IGNORECASE)
    return text.strip()


def as_text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(f"• {v}" for v in value)
    return json.dumps(value, ensure_ascii=False, indent=2)


def dialogue(item: Item) -> list[tuple[str, str]] | None:
    """(speaker, text) turns of a multi-turn item: the user's turns and the model's answers."""
    fields = item.fields
    if item.task != "c3/multi-turn":
        return None
    users = fields["turns"] if item.lang == "en" else [*fields.get("history", []), fields.get("question", "")]
    answers = fields.get("response") or []
    speakers = ("A", "B") if item.lang == "en" else ("甲", "乙")
    turns: list[tuple[str, str]] = []
    for n, user in enumerate(users):
        turns.append((speakers[0], user))
        if n < len(answers):
            turns.append((speakers[1], answers[n]))
    return turns


FIELD_ORDER = ("content", "text", "passage", "premise", "sentence1", "sentence2", "word", "history", "problem",
               "question", "query", "hypothesis", "choice1", "choice2", "target")


def item_sections(item: Item, template: Template) -> list[tuple[str, str]]:
    """(title, text) for the item itself: instance, question, dialogue, passage…, the
    instance first and the question after it, as a reader expects."""
    turns = dialogue(item)
    if turns is not None:
        return [("dialogue", "\n".join(f"{speaker}: {text}" for speaker, text in turns))]
    skip = {template.response, template.reference, "answers", "response", *template.hidden_fields}
    rank = {name: n for n, name in enumerate(FIELD_ORDER)}
    sections = []
    for name, value in sorted(item.fields.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])):
        if name in skip or name in ("llm_reasoning",):
            continue
        if name == "history":
            sections.append(("dialogue", "\n".join(value)))
        elif name == "notation" and isinstance(value, dict):
            continue  # syntactic notation is the reference
        elif name == "passage" and isinstance(value, str):
            sections.append(("passage", readable_passage(value)))
        elif name == "target" and isinstance(value, dict):
            sections.append(("target", f"does “{value.get('span2_text')}” refer to “{value.get('span1_text')}”?"))
        elif name == "entities":
            sections.append(("entities", ", ".join(value)))
        else:
            sections.append((name, as_text(value)))
    return sections


# WiC gives the target word's character offsets in each sentence (end exclusive)
_MARKED = {"superglue/wic": {"sentence1": ("start1", "end1"), "sentence2": ("start2", "end2")}}


def marked_span(item: Item, name: str) -> tuple[int, int] | None:
    """(start, end) of the text to highlight in field `name` (WiC's target word), if any."""
    keys = _MARKED.get(item.task, {}).get(name)
    if keys is None:
        return None
    start, end = (item.fields.get(k) for k in keys)
    text = item.fields.get(name)
    if not (isinstance(start, int) and isinstance(end, int) and isinstance(text, str) and 0 <= start < end <= len(text)):
        return None
    return start, end


PAGE_CHARS = 5_000
"""A field longer than this is shown a page at a time, so no item costs more than a page to draw."""

FOLD_CHARS = 240
"""The item's own text (a passage, a dialogue) beyond this is folded until asked for, so the
response and reference stay within reach on a small terminal."""


def page_of(text: str, page: int) -> tuple[str, int]:
    """Page `page` (from 0, clamped) of `text` in PAGE_CHARS slices, and how many pages it has."""
    pages = max(1, -(-len(text) // PAGE_CHARS))
    page = min(max(page, 0), pages - 1)
    return text[page * PAGE_CHARS : (page + 1) * PAGE_CHARS], pages


def folded(text: str) -> tuple[str, int]:
    """The first FOLD_CHARS of `text` cut at a word boundary, and how many characters are hidden."""
    if len(text) <= FOLD_CHARS:
        return text, 0
    cut = text.rfind(" ", FOLD_CHARS // 2, FOLD_CHARS)
    cut = cut if cut > 0 else FOLD_CHARS
    return text[:cut], len(text) - cut


def response_text(item: Item, template: Template) -> str:
    """The answer of the model under test (its reasoning too, for the rubric)."""
    fields = item.fields
    if dialogue(item) is not None:
        answers = fields.get("response") or []
        return f"last answer: {answers[-1]}" if answers else "(no response)"
    value = fields.get(template.response)
    text = as_text(value) if value is not None else "(no response imported)"
    if "llm_reasoning" in fields:
        text += f"\n\nreasoning:\n{as_text(fields['llm_reasoning'])}"
    return text


def reference_text(item: Item, template: Template) -> str:
    fields = item.fields
    if dialogue(item) is not None:
        answers = fields.get("response") or []
        return f"first answer (the last must agree with it): {answers[0]}" if answers else "(none)"
    if template.reference and template.reference in fields:
        value = fields[template.reference]
        if isinstance(value, dict) and "interpretations" in value:
            meanings = "\n".join(f"  {k}. {m}" for k, m in enumerate(value["interpretations"], 1))
            return f"{value.get('ambiguity', '')}\n\nmeanings:\n{meanings}"
        return as_text(value)
    if "answers" in fields:
        return "gold: " + ", ".join(fields["answers"])
    return f"gold label: {item.reference}" if item.reference else "(no reference)"
