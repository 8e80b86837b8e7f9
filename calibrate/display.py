"""How an item reads to a person: its fields in a sensible order, the dialogue as turns, the
response under test, the reference, and the judge's verdict in words.

Kept apart from the Textual app so the same text serves the TUI, tests and any other view.
Whatever shows this text passes it through calibrate.escape first.
"""

from __future__ import annotations

import json
import re

from calibrate.model import Item
from calibrate.templates import Template

_SENT = re.compile(r"<b>\s*Sent\s*(\d+)\s*:\s*</b>", re.IGNORECASE)


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


WORD_CHARS = 200
"""How far back from a page's end a space is looked for: a longer run of characters is no word."""


def page_of(text: str, page: int) -> tuple[str, int]:
    """Page `page` (from 0, clamped) of `text`, and how many pages it has. A page holds at most
    PAGE_CHARS characters and ends after a space or a line break in its last WORD_CHARS (so no
    page starts mid-word), else at PAGE_CHARS (text without spaces, such as Chinese)."""
    starts = [0]
    while starts[-1] + PAGE_CHARS < len(text):
        end = starts[-1] + PAGE_CHARS
        cut = max(text.rfind(" ", end - WORD_CHARS, end), text.rfind("\n", end - WORD_CHARS, end))
        starts.append(cut + 1 if cut >= 0 else end)
    page = min(max(page, 0), len(starts) - 1)
    end = starts[page + 1] if page + 1 < len(starts) else len(text)
    return text[starts[page] : end], len(starts)


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
        return "gold: " + ", ".join(dict.fromkeys(fields["answers"]))  # each once, however often the file lists it
    return f"gold label: {item.reference}" if item.reference else "(no reference)"
