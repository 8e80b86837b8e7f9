"""Small C3-layout trees shaped like C3's users' files (for the C3 round-trip tests and for
recording the fixtures in tests/fixtures/c3 with C3's own scripts).

Every one of the 25 task x language cells has items. What real files hold and these trees
copy: responses written on Windows (CRLF line endings, one with a lone CR), a response with a
trailing newline, a reference entry repeated in English omission (C3's evaluate.py skips a
record whose notation is already in its results) and in Chinese omission (not skipped there),
dialogues sharing their first turn in multi-turn (skipped in both languages), a Chinese
history line holding U+2028, and text only: no `.wav` beside the `.txt` files (C3's
evaluate.py counts every file in a response folder, so it cannot run on a tree with audio).
"""

from __future__ import annotations

import json
from pathlib import Path

PHON, SEM, CTX = "ambiguity/phonological", "ambiguity/semantic", "context-dependency"

EN_REFERENCE = {
    f"{PHON}/generation.json": [
        {"content": "I scream, you scream, we all scream for ice cream.", "notation": "Say 'I scream' like 'ice cream'."},
        {"content": "Let's eat, grandma.", "notation": "Pause after 'eat'."},
        {"content": "I never said she stole my money.", "notation": "Stress 'she'."},
    ],
    f"{PHON}/heterograph.json": [
        {"content": "The knight rode at night.", "notation": "a warrior", "problem": "Who rode?"},
        {"content": "She threw it through the window.", "notation": "tossed", "problem": "What did she do?"},
    ],
    f"{PHON}/pause.json": [
        {"content": "Woman without her man is nothing.", "notation": "Woman: without her, man is nothing."},
        {"content": "Let's eat grandma.", "notation": "Let's eat, grandma."},
    ],
    f"{PHON}/stress.json": [
        {"content": "I didn't take the BOOK.", "notation": "I took something else."},
        {"content": "SHE didn't say that.", "notation": "Someone else said it."},
    ],
    f"{PHON}/intonation.json": [
        {"content": "You're leaving?", "notation": "A surprised question."},
        {"content": "Great.", "notation": "Sarcasm: it is not great."},
    ],
    f"{SEM}/lexical.json": [
        {"content": "She went to the bank.", "notation": "the river bank"},
        {"content": "He saw the bat.", "notation": "the animal"},
    ],
    f"{SEM}/syntactic.json": [
        {"content": "I saw the man with the telescope.",
         "notation": {"ambiguity": "who has the telescope", "interpretations": ["I used the telescope.", "The man had it."]}},
        {"content": "Flying planes can be dangerous.",
         "notation": {"ambiguity": "flying as verb or adjective", "interpretations": ["To fly planes.", "Planes that fly."]}},
    ],
    f"{CTX}/omission.json": [
        {"content": "A: Who wants tea? B: Me.", "notation": "I want tea."},
        {"content": "A: Did you call her? B: Yesterday.", "notation": "I called her yesterday."},
        {"content": "A: Did you call her? B: Yesterday.", "notation": "I called her yesterday."},
        {"content": "A: Coffee or tea? B: Tea, please.", "notation": "I would like tea, please."},
    ],
    f"{CTX}/coreference.json": [
        {"content": "Tom told Bob he had won.", "problem": "Who won?", "answer": "Tom"},
        {"content": "The cup hit the glass and it broke.", "problem": "What broke?", "answer": "the glass"},
    ],
    f"{CTX}/multi-turn.json": [
        ["My name is Ann. What is my name?", "I like green.", "What is my name?"],
        ["I live in Paris. Where do I live?", "It rains today.", "Where do I live?"],
        ["My name is Ann. What is my name?", "I like red.", "What is my name?"],
    ],
}

ZH_REFERENCE = {
    **{f"{PHON}/{name}.json": [
        {"content": f"{name}句子一", "annotation": f"{name}的正确理解一"},
        {"content": f"{name}句子二", "annotation": f"{name}的正确理解二"},
    ] for name in ("pause", "heteronym", "heterograph", "tone")},
    **{f"{PHON}/generation/{name}.json": [
        {"content": f"{name}生成一", "annotation": f"{name}的读法一", "answer": f"{name}的参考回答一"},
        {"content": f"{name}生成二", "annotation": f"{name}的读法二", "answer": f"{name}的参考回答二"},
    ] for name in ("pause", "heteronym", "tone")},
    "ambiguity/semantic.json": [
        {"content": "咬死了猎人的狗", "annotation": "狗咬死了猎人"},
        {"content": "我们三个人一组", "annotation": "每组三个人"},
    ],
    f"{CTX}/omission.json": [
        {"history": ["甲：你喝茶吗？", "乙：喝。"], "omission_complete": "乙：我喝茶。"},
        {"history": ["甲：昨天去了哪里？\u2028（停顿）", "乙：公园。"], "omission_complete": "乙：昨天我去了公园。"},
        {"history": ["甲：你喝茶吗？", "乙：喝。"], "omission_complete": "乙：我喝茶。"},
    ],
    f"{CTX}/coreference.json": [
        {"history": ["甲：小王说他赢了。", "乙：他真厉害。"], "coreference_complete": "乙：小王真厉害。"},
        {"history": ["甲：杯子碰到了瓶子，它碎了。"], "coreference_complete": "甲：杯子碰到了瓶子，瓶子碎了。"},
    ],
    f"{CTX}/multi-turn.json": [
        {"history": ["我叫小明，我叫什么？", "今天天气很好。"], "question": "我叫什么？"},
        {"history": ["我住在北京，我住在哪里？", "我喜欢猫。"], "question": "我住在哪里？"},
        {"history": ["我叫小明，我叫什么？", "我喜欢狗。"], "question": "我叫什么？"},
    ],
}

EN_RESPONSE_FOLDERS = {
    f"{PHON}/generation.json": [f"{PHON}/generation"],
    f"{PHON}/heterograph.json": [f"{PHON}/heterograph"],
    f"{PHON}/pause.json": [f"{PHON}/pause"],
    f"{PHON}/stress.json": [f"{PHON}/stress"],
    f"{PHON}/intonation.json": [f"{PHON}/intonation"],
    f"{SEM}/lexical.json": [f"{SEM}/lexical"],
    f"{SEM}/syntactic.json": [f"{SEM}/syntactic"],
    f"{CTX}/omission.json": [f"{CTX}/omission-detection", f"{CTX}/omission-completion"],
    f"{CTX}/coreference.json": [f"{CTX}/coreference-detection", f"{CTX}/coreference-resolution"],
}


def _response(folder: str, index: int) -> str:
    """The system's answer for one item: every other one written on Windows (CRLF), one with a
    lone CR, one ending in a newline."""
    name = folder.rsplit("/", 1)[-1]
    lines = [f"Answer {index} for {name}.", "I think the second reading is meant." if index % 2 else "It means what it says."]
    if index == 1 and name == "pause":
        return "\r".join(lines)
    if index % 2:
        return "\r\n".join(lines) + "\r\n"
    return "\n".join(lines) + ("\n" if name == "lexical" else "")


def _zh_response(folder: str, index: int) -> str:
    name = folder.rsplit("/", 1)[-1]
    text = [f"{name}的回答{index}。", "我觉得是第二种意思。" if index % 2 else "意思就是字面意思。"]
    return "\r\n".join(text) if index % 2 else "\n".join(text)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))  # bytes: line endings exactly as given


def write_tree(root: Path, lang: str) -> tuple[Path, Path]:
    """Writes <root>/reference and <root>/responses for `lang` ("en" or "zh"); returns both."""
    reference, responses = Path(root) / "reference", Path(root) / "responses"
    data = EN_REFERENCE if lang == "en" else ZH_REFERENCE
    answer = _response if lang == "en" else _zh_response
    for rel, entries in data.items():
        _write(reference / rel, json.dumps(entries, ensure_ascii=False, indent=4))
        stem = rel.removesuffix(".json")
        if stem.endswith("multi-turn"):
            for i, entry in enumerate(entries):
                turns = len(entry) if lang == "en" else len(entry["history"]) + 1
                for j in range(turns):
                    _write(responses / stem / str(i) / f"{j}.txt", answer(f"turn{j}", i))
            continue
        if lang == "en":
            folders = EN_RESPONSE_FOLDERS[rel]
        elif stem.endswith(("omission", "coreference")):
            folders = [f"{stem}-detection", f"{stem}-{'completion' if 'omission' in stem else 'resolution'}"]
        else:
            folders = [stem]
        for folder in folders:
            for i in range(len(entries)):
                _write(responses / folder / f"{i}.txt", answer(folder, i))
    return reference, responses


NOT_JUDGED_BY_C3 = {
    "en": {("c3/omission-detection", f"{CTX}/omission/2"), ("c3/omission-completion", f"{CTX}/omission/2"),
           ("c3/multi-turn", f"{CTX}/multi-turn/2")},
    "zh": {("c3/multi-turn", f"{CTX}/multi-turn/2")},
}
"""The items C3's evaluate.py skips on these trees (a repeated notation or first turn)."""
