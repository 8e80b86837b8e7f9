"""Hostile input a user hands over, run as the user runs the command: files that are not UTF-8
or not TOML, settings of the wrong type, an unknown annotator or family name, a batch request
file given as results, negative counts, and the app without a terminal. Each is a clear
`Error: …` naming the file or the value (exit 1, or 2 for a usage error), never a traceback,
and nothing already saved changes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Calibrate
from tests.test_cli_outcomes import fingerprint
from tests.test_templates import custom_template

NOT_UTF8 = b'caf\xe9 "x"\n'


def one_line(output: str) -> str:
    """The output with its folding undone (an error is folded to the terminal's width)."""
    return " ".join(output.split())


def test_a_template_folder_that_is_not_utf8_is_named(demo_db, tmp_path):
    folder = custom_template(tmp_path, "Judge {{ content }}")
    manifest = folder / "custom" / "manifest.toml"
    good = manifest.read_bytes()
    manifest.write_bytes(b'description = "caf\xe9"\n' + good)
    out = Calibrate(demo_db)("--templates", str(folder), "status", ok=False)
    assert out.exit_code == 1 and f"Error: {manifest}: not UTF-8 text (invalid continuation byte at byte 18); " \
        "save it as UTF-8" in one_line(out.output)
    manifest.write_bytes(good)
    (folder / "custom" / "l.j2").write_bytes(NOT_UTF8)
    out = Calibrate(demo_db)("--templates", str(folder), "status", ok=False)
    assert out.exit_code == 1 and f"{folder / 'custom' / 'l.j2'}: not UTF-8 text" in one_line(out.output)
    manifest.write_text("family = = 1\n")
    out = Calibrate(demo_db)("--templates", str(folder), "status", ok=False)
    assert out.exit_code == 1 and f"Error: {manifest}: not valid TOML (Invalid value" in one_line(out.output)


def test_a_system_prompt_that_is_not_utf8_is_refused_before_any_request(demo_db, tmp_path):
    from tests.fake_openai import FakeOpenAI

    prompt = tmp_path / "sp.txt"
    prompt.write_bytes(b"caf\xe9")
    before = fingerprint(demo_db.parent)
    with FakeOpenAI() as server:
        out = Calibrate(demo_db)("judge", "--model", "m", "--base-url", server.url, "--system-prompt", str(prompt),
                                 ok=False)
    assert out.exit_code == 1 and f"Error: {prompt}: not UTF-8 text (unexpected end of data at byte 3)" \
        in one_line(out.output)
    assert server.count == 0 and fingerprint(demo_db.parent) == before


def test_serve_refuses_a_keymap_whose_key_would_do_two_things_before_it_listens(demo_db, tmp_path):
    keymap = tmp_path / "km.toml"
    keymap.write_text('"annotate.next" = "y"\n', encoding="utf-8")
    out = Calibrate(demo_db)("serve", "--keymap", str(keymap), "--port", "0", ok=False)
    assert out.exit_code == 1 and f"Error: {keymap}: y would be both annotate.yes and annotate.next" in one_line(out.output)
    assert "token=" not in out.output


@pytest.mark.parametrize(("content", "message"), [
    (NOT_UTF8, "not UTF-8 text (invalid continuation byte at byte 3); save it as UTF-8"),
    (b"x = = 1\n", "not valid TOML (Invalid value (at line 1, column 5))"),
    (b'"annotate.next" = 1\n', 'annotate.next = 1: expected the keys as a quoted text, e.g. "annotate.next" = "right,m"'),
])
def test_annotate_and_serve_refuse_a_keymap_they_cannot_read_before_the_app_starts(demo_db, tmp_path, content,
                                                                                    message):
    keymap = tmp_path / "km.toml"
    keymap.write_bytes(content)
    for command in ("annotate", "serve"):
        out = Calibrate(demo_db)(command, "--keymap", str(keymap), ok=False)
        assert out.exit_code == 1 and f"Error: {keymap}: {message}" in one_line(out.output), command
        assert "token=" not in out.output


def test_annotate_reads_its_keymap_file_once(demo_db, tmp_path, monkeypatch):
    import calibrate.cli
    import calibrate.user_files
    from calibrate.tui import CalibrateApp
    from calibrate.tui.annotate_screen import AnnotateScreen

    keymap = tmp_path / "km.toml"
    keymap.write_text('"annotate.next" = "m"\n', encoding="utf-8")
    reads, read, used = [], calibrate.user_files.read_toml_file, []
    monkeypatch.setattr(calibrate.user_files, "read_toml_file",
                        lambda path, *rest: reads.append(Path(path)) or read(path, *rest))
    monkeypatch.setattr(calibrate.cli, "in_terminal", lambda: True)
    following = next(b for b in AnnotateScreen.BINDINGS if getattr(b, "id", None) == "annotate.next")
    monkeypatch.setattr(CalibrateApp, "run", lambda app: used.append(app.keys_of(following)))
    assert ": nothing saved in " in Calibrate(demo_db)("annotate", "--keymap", str(keymap)).output
    assert used == [["m"]], "the app made as annotate makes it (not run) has the keymap"
    assert reads.count(keymap) == 1, "the file could change between two reads: the app would not use what was checked"


def test_annotate_refuses_guidelines_that_are_not_utf8_before_the_app_starts(demo_db, tmp_path):
    guidelines = tmp_path / "g.txt"
    guidelines.write_bytes(b"caf\xe9")
    out = Calibrate(demo_db)("annotate", "--guidelines", str(guidelines), ok=False)
    assert out.exit_code == 1 and f"Error: {guidelines}: not UTF-8 text" in one_line(out.output)


@pytest.mark.parametrize(("line", "shown", "example"), [
    ("db = 5", "db = 5", 'db = "calibrate.db"'),
    ("db = {a=1}", "db = a table", 'db = "calibrate.db"'),
    ("keymap = 1", "keymap = 1", 'keymap = "keys.toml"'),
    ("templates = [1]", "templates = [1]", "expected a quoted text or a list of them"),
])
def test_a_setting_of_the_wrong_type_names_the_file_and_the_key(tmp_path, monkeypatch, line, shown, example):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "calibrate.toml").write_text(line + "\n")
    for args in (["status"], ["config"]):
        out = Calibrate(tmp_path / "x.db")(*args, ok=False)
        assert out.exit_code == 1 and f"Error: {tmp_path / 'calibrate.toml'}: {shown}: expected" in one_line(out.output)
        assert example in one_line(out.output)
    assert not (tmp_path / "x.db").exists()


def test_a_settings_file_that_is_not_utf8_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "calibrate.toml").write_bytes(b'annotator = "caf\xe9"\n')
    out = Calibrate(tmp_path / "x.db")("config", ok=False)
    assert out.exit_code == 1 and f"{tmp_path / 'calibrate.toml'}: not UTF-8 text" in one_line(out.output)


def test_annotate_without_a_terminal_refuses_at_once(demo_db):
    before = fingerprint(demo_db.parent)
    done = subprocess.run([sys.executable, "-m", "calibrate", "--db", str(demo_db), "annotate"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == "", "no app drawn into a file"
    assert "Error: annotate opens a full-screen app and needs a terminal" in one_line(done.stderr)
    assert "run it in a terminal, or label in a browser with calibrate serve" in one_line(done.stderr)
    assert fingerprint(demo_db.parent) == before


@pytest.mark.parametrize("command", ["report", "trust"])
def test_an_unknown_gold_from_annotator_is_a_usage_error(labelled_demo_db, command):
    out = Calibrate(labelled_demo_db)(command, "--gold-from", "anna", ok=False)
    assert out.exit_code == 2 and "Invalid value for '--gold-from': unknown annotator 'anna' (did you mean ana?); " \
        f"{labelled_demo_db} has: ana, bo" in one_line(out.output)
    assert "gold (anna)" not in out.output


def test_an_unknown_family_name_is_a_usage_error(demo_db):
    out = Calibrate(demo_db)("report", "--family", "demo-jugde=openai", ok=False)
    assert out.exit_code == 2 and "Invalid value for '--family': unknown judge or system 'demo-jugde' (did you mean " \
        f"demo-judge?); {demo_db} has: demo-judge, demo-judge-2, rule, sdm-alpha, sdm-beta" in one_line(out.output)


def test_import_batch_refuses_the_request_file_and_stores_nothing(demo_db, tmp_path):
    run = Calibrate(demo_db)
    requests = tmp_path / "b.jsonl"
    base = ("judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1")
    run(*base, "--export-batch", str(requests), "--task", "c3/pause")
    first = json.loads(requests.read_text().splitlines()[0])
    results = tmp_path / "r.jsonl"  # a line of neither kind
    results.write_text(json.dumps({"custom_id": first["custom_id"], "error": None}) + "\n")
    before = fingerprint(demo_db.parent)
    out = run(*base, "--import-batch", str(requests), ok=False)
    assert out.exit_code == 1 and f"Error: {requests}:1: a batch request (what --export-batch writes), not a " \
        "result: give --import-batch the output file the batch API returns" in one_line(out.output)
    out = run(*base, "--import-batch", str(results), ok=False)
    assert out.exit_code == 1 and f"Error: {results}:1: not a batch result line (no 'response' object" \
        in one_line(out.output)
    assert fingerprint(demo_db.parent) == before


@pytest.mark.parametrize(("option", "value", "range_"), [("--limit", "-5", "x>=1"), ("--limit", "0", "x>=1"),
                                                         ("--offset", "-1", "x>=0")])
def test_items_refuses_a_negative_limit_or_offset(demo_db, option, value, range_):
    out = Calibrate(demo_db)("items", option, value, ok=False)
    assert out.exit_code == 2 and f"Invalid value for '{option}': {value} is not in the range {range_}" in out.output
