"""Text from data never reaches the terminal raw: every command and widget that prints data
shows escape sequences, C1 controls and bidi overrides visibly and names invisible characters
(escape.safe); exports keep the data exactly (JSON escapes, CSV neutralises formulas only)."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import select
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.escape import json_text_safe, safe, safe_json
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.fake_openai import FakeOpenAI, Reply
from tests.tui_helpers import make_app, screen_text

# an OSC 52 clipboard write, a screen clear, a one-byte CSI (U+009B), a right-to-left override
# and a zero-width space
NASTY = "\x1b]52;c;aGk=\x07\x1b[2J\x9b31m\u202eevil\u200b"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\u200b")


def assert_safe(text: str) -> None:
    assert not [c for c in RAW if c in text], f"raw control characters reached the terminal: {text!r}"
    assert "\\x1b" in text, f"the escape is not shown visibly: {text!r}"


def test_safe_shows_every_dangerous_character_visibly():
    assert safe(NASTY) == "\\x1b]52;c;aGk=\\x07\\x1b[2J\\x9b31m\\u202eevil<U+200B>"
    assert safe("\u2066a\u2069 b\u200f\x85\x7f") == "\\u2066a\\u2069 b\\u200f\\x85\\x7f"
    assert safe("line\nnext\tcol") == "line\nnext    col" and safe("中文 ok") == "中文 ok"


def test_invisible_characters_are_named_and_shaping_ones_kept():
    assert safe("a\u200bb\u2060c\ufeffd\u2028e\u2029f\u00adg\U000e0041h") == (
        "a<U+200B>b<U+2060>c<U+FEFF>d<U+2028>e<U+2029>f<U+00AD>g<U+E0041>h")
    family, heart = "👨\u200d👩\u200d👧", "\u2764\ufe0f"
    assert safe(f"{family} {heart} می\u200cخواهم") == f"{family} {heart} می\u200cخواهم", "joiners and VS16 shape text"
    text = "id\u200b1 \U000e0068\U000e0069 \x1b[2J"
    assert json.loads(safe_json(text)) == text and "\u200b" not in safe_json(text)


# every character `safe` shows differently (a JSON \\u escape in an export), and some it keeps: ASCII, Chinese,
# an emoji, a character beside the escaped ones beyond the Basic Multilingual Plane
SHOWN_DIFFERENTLY = [c for c in [*range(0x30000), *range(0xE0000, 0xE0200)] if safe(chr(c)) != chr(c)]
KEPT = ["a", '"', "\\", "\n", "是", "😀", "\U0001bca4", "\U000e0200", "\u200d", "\ufe0f", "é"]


@given(st.lists(st.sampled_from([chr(c) for c in SHOWN_DIFFERENTLY]) | st.sampled_from(KEPT)))
@settings(max_examples=300)
def test_json_text_safe_escapes_exactly_what_safe_shows_differently(chars):
    text = "".join(chars)
    assert json_text_safe(text) == "".join(json.dumps(c)[1:-1] if safe(c) != c else c for c in chars)


def test_json_text_safe_escapes_every_such_character_in_any_text():
    for c in SHOWN_DIFFERENTLY:
        assert json_text_safe(f"是{chr(c)}a") == f"是{json.dumps(chr(c))[1:-1]}a"
        assert json_text_safe(f"😀{chr(c)}") == f"😀{json.dumps(chr(c))[1:-1]}"


@pytest.fixture
def nasty_db(tmp_path):
    """Items, judgments, labels and notes whose every text field carries escape sequences."""
    path = tmp_path / "nasty.db"
    store = Store(path)
    ids, _ = store.add_items([
        NewItem("c3/lexical", "en", f"id-{NASTY}-{k}", {"content": f"c{NASTY}", "notation": NASTY, "response": NASTY,
                                                    f"field{NASTY}": "x"}) for k in range(3)
    ], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name=f"judge{NASTY}", judge_key="k", status="verdict", verdict="yes",
                                     raw_output=f"{NASTY}\nThe answer is: yes.", template_id=f"t{NASTY}",
                                     confidence=0.9) for i in ids])
    for annotator in (f"ana{NASTY}", "bo"):
        for i in ids:
            store.annotate(i, annotator, "label", label="yes" if i != ids[0] else "no", note=f"note {NASTY}")
    store.close()
    return path


@pytest.mark.parametrize("args", [
    ["items"], ["status"], ["render", "1"], ["report"], ["report", "--format", "markdown"],
    ["scores"], ["scores", "--format", "markdown"], ["scores", "--format", "html"], ["trust"],
], ids=" ".join)
def test_commands_show_escapes_visibly(nasty_db, args):
    store = Store(nasty_db)
    store.add_items([NewItem(f"c3/lexical{NASTY}", "en", "t", {"content": "c"})])  # only `status` lists tasks
    store.close()
    out = Calibrate(nasty_db)(*args)
    assert_safe(out.output)


@pytest.mark.parametrize("args", [["items", "--json"], ["export"], ["report", "--format", "json"],
                                  ["scores", "--format", "json"]], ids=" ".join)
def test_json_outputs_escape_as_json_and_keep_the_values(nasty_db, args):
    result = Calibrate(nasty_db)(*args)
    out = result.output  # stdout and stderr (the export says on stderr where no trust threshold was certified)
    assert not [c for c in RAW if c in out] and "\\u009b" in out
    first = json.loads(result.stdout) if args[0] != "export" else json.loads(result.stdout.splitlines()[0])
    assert any(NASTY in text for text in strings(first)), "the values themselves are unchanged"


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def test_items_json_stays_valid_json_with_the_same_values(nasty_db):
    out = Calibrate(nasty_db)("items", "--json").output
    assert "\\u009b" in out and json.loads(out)[0]["source_id"] == f"id-{NASTY}-0"


def test_markdown_and_html_reports_escape(nasty_db):
    run = Calibrate(nasty_db)
    markdown = run("report", "--format", "markdown").output
    assert "judge\\\\x1b\\]52" in markdown, "markdown specials in data are escaped"
    page = run("report", "--format", "html").output
    assert "\x1b" not in page and "judge\\x1b]52" in page


def test_import_and_merge_messages_show_escapes_visibly(nasty_db, tmp_path, demo_db):
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"task": "c3/lexical", "lang": "en", "source_id": "x", "annotator": "a",
                                  "label": NASTY}) + "\n" +
                      json.dumps({"task": "c3/lexical", "lang": "en", "source_id": f"id-{NASTY}-0", "annotator": "z",
                                  "label": "yes"}) + "\n")
    out = Calibrate(nasty_db)("import", "labels", str(labels), "--skip-bad")
    assert_safe(out.output)
    store = Store(nasty_db)
    store.annotate(1, f"x{NASTY}", "label", label=NASTY)
    store.close()
    merged = Calibrate(demo_db)("merge", str(nasty_db), ok=False)
    assert merged.exit_code == 1 and "refused" in merged.output
    assert_safe(merged.output)


def test_judge_messages_show_escapes_visibly(nasty_db):
    run = Calibrate(nasty_db)
    with FakeOpenAI() as server:
        server.then(*[Reply(status=500, raw_body=json.dumps({"error": {"message": NASTY}}))] * 3)
        out = run("judge", "--model", "m", "--judge-name", f"judge{NASTY}", "--base-url", server.url,
                  "--max-retries", "0", "--concurrency", "1", "--force", "--limit", "1", ok=False)
    assert out.exit_code == 1
    assert_safe(out.output)


async def test_every_widget_shows_escapes_visibly(nasty_db, tmp_path):
    guidelines = tmp_path / "guide.txt"
    guidelines.write_text(f"guide {NASTY}")
    app = make_app(nasty_db, annotator="carl", guidelines_file=guidelines, overlap=3)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.press("p")  # the prompt panel
        await pilot.pause()
        assert_safe(screen_text(app))  # item panel, verdict panel, status bar, prompt panel, notes
        await pilot.press("n")  # the status line's last decision, and the next item
        assert_safe(screen_text(app))
        await pilot.press("g")
        await pilot.pause()
        assert_safe(screen_text(app))  # the guidelines screen
        await pilot.press("escape", "t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = screen_text(app)  # the statistics screen, with judge and annotator names
        assert "judge" in text
        assert_safe(text)


def on_a_terminal(db, *args: str) -> str:
    """What `calibrate --db DB ARGS` writes when its standard output is a terminal (a pty)."""
    leader, follower = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(db), *args], stdout=follower,
                               stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        try:
            chunk = os.read(leader, 65536) if ready else b""
        except OSError:  # the program ended and closed the terminal
            chunk = b""
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert process.wait(60) == 0
    return out.decode("utf-8")


@pytest.mark.parametrize("args", [["export", "--format", "csv"], ["report", "--format", "csv"],
                                  ["scores", "--format", "csv"]], ids=" ".join)
def test_csv_on_a_terminal_shows_escapes_visibly(nasty_db, args):
    assert_safe(on_a_terminal(nasty_db, *args))


def test_the_csv_export_keeps_the_data_and_neutralises_only_formulas(tmp_path):
    path = tmp_path / "exact.db"
    store = Store(path)
    ids = [f"id-{NASTY}", "id\u200b1", "id1", "=cmd|' /C calc'!A0", "tab\there\r\nnext line", "-0.5"]
    store.add_items([NewItem("c3/lexical", "en", source_id, {"content": "c"}) for source_id in ids])
    store.close()
    out = tmp_path / "gold.csv"
    run = Calibrate(path)
    run("export", "--format", "csv", "--out", str(out))
    piped = run("export", "--format", "csv").stdout_bytes.decode("utf-8")
    for text in (out.read_bytes().decode("utf-8"), piped):
        rows = list(csv.DictReader(io.StringIO(text, newline="")))
        assert [r["source_id"] for r in rows] == [*ids[:3], "'" + ids[3], *ids[4:]]


def test_json_bytes_safe_decodes_every_character_json_text_safe_changes():
    """Every character beyond ASCII that `json_text_safe` writes as an escape (checked over all of
    Unicode) is found in its UTF-8 bytes by `json_bytes_safe`, so text it leaves undecoded needs
    no change (ASCII JSON text holds no control character but DEL outside escapes); and what it
    changes equals `json_text_safe`'s output."""
    from calibrate.escape import _JSON_ESCAPED_UTF8, json_bytes_safe

    changed = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and json_text_safe(chr(c)) != chr(c)]
    assert len(changed) > 400 and "\u202e" in changed and "\U000e0041" in changed
    missed = [c for c in changed if c >= "\x80" and not _JSON_ESCAPED_UTF8.search(c.encode())]
    assert not missed, [f"U+{ord(c):04X}" for c in missed]
    for text in ('{"a":"是\u202e,\u200b"}', '{"a":"plain 是 ascii, “quotes”"}', '{"a":"\U000e0041\x7f"}'):
        assert json_bytes_safe(text.encode()) == json_text_safe(text).encode()
