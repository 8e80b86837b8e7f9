"""No silent outcome: a command that did nothing, or skipped what it was asked to do, exits
non-zero and says why and what to do; it creates and changes nothing it should not. One test
per case a new user ran into (from a fresh clone, the README, a template folder of their own
and the common mistakes)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from calibrate.demo import DEMO_DIR
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.fake_openai import FakeOpenAI
from tests.test_formats import write_jsonl

CLAIM = {"id": "1", "claim": "the sky is green", "response": "no"}


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file in the folder, a database by its rows (what SQLite keeps beside it aside)."""
    out = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".db":
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
                tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1")]
                rows = [(t, sorted(map(repr, conn.execute(f"SELECT * FROM [{t}]")))) for t in tables]
            out[path.name] = hashlib.sha256(repr(rows).encode()).hexdigest()
        elif not path.name.endswith(("-wal", "-shm")):
            out[path.name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
    return out


@pytest.fixture
def my_templates(tmp_path) -> Path:
    """A user's template folder as people write one: no [fields] table; `broken` refers to a
    variable no item has."""
    folder = tmp_path / "tpl" / "mine"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'family = "mine"\n'
        '[[template]]\nid = "mine/en/factcheck"\nfile = "factcheck.j2"\nlang = "en"\ntasks = ["mine/factcheck"]\n'
        'required = ["claim", "response"]\nverdict = "yes_no_en"\n'
        '[[template]]\nid = "mine/en/broken"\nfile = "broken.j2"\nlang = "en"\ntasks = ["mine/broken"]\n'
        'required = ["claim"]\nverdict = "yes_no_en"\n', encoding="utf-8")
    (folder / "factcheck.j2").write_text("Claim: {{ claim }}\nAnswer: {{ response }}\n", encoding="utf-8")
    (folder / "broken.j2").write_text("Claim: {{ claim }} {{ undefined_thing }}\n", encoding="utf-8")
    return tmp_path / "tpl"


@pytest.fixture
def mine_db(tmp_path, my_templates) -> Calibrate:
    """Two items of a task of one's own and two of a task whose template cannot render."""
    work = tmp_path / "work"
    work.mkdir()
    run = Calibrate(work / "mine.db")
    items = write_jsonl(tmp_path / "mine.jsonl", [CLAIM, {**CLAIM, "id": "2"}])
    for task in ("mine/factcheck", "mine/broken"):
        run("--templates", str(my_templates), "import", "jsonl", str(items), "--task", task, "--lang", "en")
    return run


def test_judge_without_the_templates_of_a_task_names_the_task_and_the_flag(mine_db):
    before = fingerprint(mine_db.db.parent)
    with FakeOpenAI() as server:
        out = mine_db("judge", "--model", "m", "--base-url", server.url, ok=False)
        assert server.requests == []
    assert out.exit_code == 1 and "Error: nothing was judged" in out.output
    assert "4 items of tasks no template serves not judged (mine/broken (en): 2, mine/factcheck (en): 2)" in out.output
    assert "--templates DIR" in out.output
    assert fingerprint(mine_db.db.parent) == before


def test_a_template_that_cannot_render_is_an_error_naming_the_items(mine_db, my_templates):
    with FakeOpenAI() as server:
        out = mine_db("judge", "--templates", str(my_templates), "--model", "m", "--base-url", server.url, ok=False)
        assert len(server.requests) == 2, "the items that render are judged"
    assert out.exit_code == 1
    broken = my_templates / "mine" / "broken.j2"
    assert (f"2 items cannot be rendered (template mine/en/broken ({broken}): missing field ('undefined_thing' is "
            "undefined)): id 3, 4") in " ".join(out.output.split())
    assert "some items were not judged (see above); the next run asks only for them" in out.output
    assert {j.judge_name for j in Store(mine_db.db).judgments()} == {"m"} and len(list(Store(mine_db.db).judgments())) == 2


def test_render_of_a_task_without_its_templates_says_how_to_add_them(mine_db):
    out = mine_db("render", "1", ok=False)
    assert out.exit_code == 1
    assert "unknown task 'mine/factcheck' for language 'en': no template serves it" in out.output
    assert "a task of your own needs its template folder: --templates DIR" in out.output


def test_global_options_go_before_or_after_the_command(mine_db, my_templates, tmp_path):
    from click.testing import CliRunner

    from calibrate.cli import cli

    run = lambda *args: CliRunner().invoke(cli, args)  # noqa: E731
    status = run("status", "--db", str(mine_db.db))
    assert status.exit_code == 0 and "mine/factcheck" in status.output
    shown = run("templates", "show", "mine/en/factcheck", "--templates", str(my_templates))
    assert shown.exit_code == 0 and "Claim: {{ claim }}" in shown.output
    both = run("--templates", str(my_templates), "--db", str(mine_db.db), "render", "1", "--db", str(mine_db.db))
    assert both.exit_code == 0 and "Claim: the sky is green" in both.output
    twice = run("--db", str(tmp_path / "a.db"), "status", "--db", str(tmp_path / "b.db"))
    assert twice.exit_code == 2 and "--db given twice" in twice.output
    assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()
    assert "--templates DIRECTORY" in run("judge", "--help").output


def test_a_failed_import_into_a_new_file_removes_it_and_leaves_an_old_one_unchanged(demo_db, tmp_path):
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"id": 1, "content": "c", "notation": "n", "response": "r"}, "{broken"])
    new = tmp_path / "new.db"
    out = Calibrate(new)("import", "jsonl", str(bad), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert out.exit_code == 1 and "bad.jsonl:2: malformed JSON" in out.output
    assert not list(tmp_path.glob("new.db*"))
    before = fingerprint(demo_db.parent)
    Calibrate(demo_db)("import", "jsonl", str(bad), "--task", "c3/lexical", "--lang", "en", ok=False)
    assert fingerprint(demo_db.parent) == before


@pytest.mark.parametrize(("ending", "given"), [(signal.SIGHUP, "new"), (signal.SIGTERM, "new"),
                                              (signal.SIGTERM, "empty")])
def test_a_closed_terminal_or_a_kill_during_an_import_into_a_new_file_removes_it(tmp_path, ending, given):
    """SIGHUP (a dropped SSH connection) or SIGTERM (`kill`, `timeout`) ends the command as a
    failure does: the file it created goes, or the empty file it was given is empty again,
    instead of a file with the schema and part of the items (the signals' default)."""
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": k, "content": f"c{k}", "notation": "n", "response": "r"}) + "\n"
                             for k in range(300_000)))
    new = tmp_path / "new.db"
    if given == "empty":
        new.touch()
    run = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(new), "import", "jsonl", str(items),
                            "--task", "c3/lexical", "--lang", "en"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(1200):  # the database (or its log) has content once the import has begun; 60 s at most
            if sum(path.stat().st_size for path in tmp_path.glob("new.db*")) or run.poll() is not None:
                break
            time.sleep(0.05)
        assert run.poll() is None, "the import was still running when the signal came"
        run.send_signal(ending)
        assert run.wait(timeout=60) == 128 + ending
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        run.stderr.close()
    left = {path.name: path.stat().st_size for path in tmp_path.glob("new.db*")}
    assert left == ({"new.db": 0} if given == "empty" else {}), "no database left behind"


def test_a_reader_gone_before_the_summary_keeps_the_new_database_the_import_filled(tmp_path):
    items = write_jsonl(tmp_path / "items.jsonl", [{"id": k, "content": "c", "notation": "n", "response": "r"}
                                                   for k in range(3)])
    new = tmp_path / "new.db"
    reader, writer = os.pipe()
    os.close(reader)  # `calibrate import … | head -0`: every write to standard output fails
    try:
        done = subprocess.run([sys.executable, "-m", "calibrate", "--db", str(new), "import", "jsonl", str(items),
                               "--task", "c3/lexical", "--lang", "en"], stdout=writer, stderr=subprocess.PIPE,
                              timeout=120)
    finally:
        os.close(writer)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    store = Store(new, read_only=True)
    assert store.count_items() == 3, "the items the import saved are kept: only telling the user failed"
    store.close()


def test_the_demo_refuses_a_database_holding_other_items_and_adds_nothing_to_its_own(demo_db, tmp_path):
    real = tmp_path / "real" / "calibrate.db"
    real.parent.mkdir()
    calibrate = Calibrate(real)
    calibrate("import", "jsonl", str(write_jsonl(tmp_path / "mine.jsonl", [CLAIM | {"id": "x", "content": "c",
              "notation": "n"}])), "--task", "c3/lexical", "--lang", "en", "--system", "my-sdm")
    before = fingerprint(real.parent)
    refused = calibrate("demo", "--no-tui", ok=False)
    assert refused.exit_code == 1
    assert (f"{real} holds items that are not the demo's (system 'my-sdm'): the demo would mix its made-up items"
            in " ".join(refused.output.split()))
    assert fingerprint(real.parent) == before
    again = Calibrate(demo_db)("demo", "--no-tui")  # the demo's own file: a re-run adds nothing
    assert "0 items and 0 judgments added" in again.output


def test_status_of_an_empty_database_or_an_unknown_system(demo_db, tmp_path):
    Store(tmp_path / "empty.db").close()
    empty = Calibrate(tmp_path / "empty.db")("status", ok=False)
    assert empty.exit_code == 1 and "Error: no items in" in empty.output and "import items first" in empty.output
    (tmp_path / "zero.db").touch()  # a file of 0 bytes: a command that reads leaves it so
    for args in (["status"], ["report"], ["export"]):
        zero = Calibrate(tmp_path / "zero.db")(*args, ok=False)
        assert zero.exit_code == 1
        assert f"{tmp_path / 'zero.db'} is an empty file, not yet a database: import items first" in zero.output
        assert (tmp_path / "zero.db").stat().st_size == 0 and not list(tmp_path.glob("zero.db-*"))
    nope = Calibrate(demo_db)("status", "--system", "sdm-alfa", ok=False)
    assert nope.exit_code == 2 and "unknown system 'sdm-alfa' (did you mean sdm-alpha?)" in nope.output
    assert "sdm-alpha, sdm-beta" in nope.output
    none = Calibrate(demo_db)("status", "--system", "", ok=False)
    assert none.exit_code == 1 and "no items without a system" in none.output


@pytest.mark.parametrize(("args", "code", "message"), [
    (["judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--task", "c3/lexcal"], 2,
     "Invalid value for '--task': unknown task 'c3/lexcal' (did you mean c3/lexical?); known tasks: "),
    (["judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--lang", "EN"], 2,
     "Invalid value for '--lang': unknown language 'EN' (did you mean en?); languages: en, zh"),
    (["items", "--lang", "english"], 2, "unknown language 'english' (did you mean en?); languages: en, zh"),
    (["templates", "show", "c3/en/phonologcal"], 2,
     "Invalid value for 'TEMPLATE_ID': unknown template 'c3/en/phonologcal' (did you mean c3/en/phonological?)"),
    (["items", "--task", "essay/score"], 2, "unknown task 'essay/score'; known tasks: c3/coreference-detection"),
    (["annotate", "--system", "sdm-gamma"], 2, "unknown system 'sdm-gamma'"),
    (["report", "--judge", "demo-jugde"], 2, "unknown judge 'demo-jugde' (did you mean demo-judge?)"),
    # a judge and a system that each exist but meet nowhere: named, with the judges of the system's items
    (["report", "--judge", "demo-judge-2", "--system", "sdm-alpha"], 1,
     "demo-judge-2 judged none of the items of system 'sdm-alpha' in"),
    (["scores", "--judge", "demo-judge-2", "--system", "sdm-alpha"], 1,
     ": nothing to score; judges of its items: demo-judge, rule"),
    # one of two judges meeting the system is named, not dropped without a word
    (["scores", "--judge", "demo-judge-2", "--judge", "demo-judge", "--system", "sdm-alpha"], 1,
     "demo-judge-2 judged none of the items of system 'sdm-alpha' in"),
    (["import", "superglue", "--task", "boolk", "x.jsonl"], 2,
     "Invalid value for '--task': unknown SuperGLUE task 'boolk' (did you mean boolq?)"),
    (["items", "--status", "flagged"], 1, "no items in"),
    (["items", "--offset", "500"], 1, "demo.db at --offset 500: 62 match"),
    # a missing folder is said before --system is asked for (the demo has two systems' C3 items)
    (["import", "c3-results", "no-such-results", "--lang", "en", "--judge-name", "x"], 1,
     "no-such-results: no such folder"),
    (["judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--task", "c3/generation"], 1,
     "nothing to judge: the 1 item selected is of a task people decide (no judge prompt)"),
    # counted as cells and judges, not as the report's 70 cell × judge blocks
    (["report"], 1, "no agreement to report yet: none of the items that demo-judge, demo-judge-2, jury, rule in 32 cells "
                    "judged is labelled by people"),
    (["trust"], 1, "nothing to assess: no judge verdict in"),
    (["annotate", "--annotator", "x", "--task", "superglue/boolq", "--lang", "zh"], 1,
     "match --task 'superglue/boolq' --lang 'zh'"),
    (["serve", "--task", "superglue/boolq", "--lang", "zh"], 1, "match --task 'superglue/boolq' --lang 'zh'"),
    (["annotate", "--annotator", "   "], 2, "--annotator: an annotator name is 1-64 printable characters without '@'"),
    (["annotate", "--annotator", "ana@tab1"], 2, "an annotator name is 1-64 printable characters without '@'"),
    (["annotate", "--annotator", "gold"], 2, "'gold' names the label several people decided in exports, not a person"),
])
def test_empty_selections_and_unknown_values_say_so(demo_db, args, code, message):
    before = fingerprint(demo_db.parent)
    out = Calibrate(demo_db)(*args, ok=False)
    assert out.exit_code == code and message in out.output, out.output
    assert fingerprint(demo_db.parent) == before


def test_a_system_no_judge_has_judged_is_said_so(demo_db, tmp_path):
    run = Calibrate(demo_db)
    lines = tmp_path / "fresh.jsonl"
    lines.write_text(json.dumps({"id": "1", "content": "c", "notation": "n", "response": "r"}) + "\n", encoding="utf-8")
    run("import", "jsonl", str(lines), "--task", "c3/lexical", "--lang", "en", "--system", "fresh")
    for command in ("scores", "report"):
        out = run(command, "--system", "fresh", ok=False)
        assert out.exit_code == 1, out.output
        assert "no judge has judged the items of system 'fresh' in" in " ".join(out.output.split()), out.output


@pytest.mark.parametrize("args", [["export", "--format", "jsonl"], ["export", "--format", "csv"], ["report"],
                                  ["scores"], ["export", "inspect", "log.eval"]])
def test_an_output_file_in_a_missing_folder_is_refused_before_any_work(demo_db, tmp_path, args):
    missing = tmp_path / "no-such-folder"
    before = fingerprint(demo_db.parent)
    out = Calibrate(demo_db)(*args, "--out", str(missing / "out.txt"), ok=False)
    assert out.exit_code == 2, out.output
    assert f"Invalid value for '--out': {missing} does not exist: create the folder first" in out.output
    assert "trust marks" not in out.output and "no confidence threshold" not in out.output  # refused before the work
    assert fingerprint(demo_db.parent) == before and not missing.exists()


def test_nothing_left_to_judge_is_done_not_an_error(demo_db):
    out = Calibrate(demo_db)("judge", "--judge", "rule")
    assert out.exit_code == 0 and "nothing to judge: rule has judged all 14 (--force judges them again)" in out.output


def test_commands_with_nothing_to_work_on_say_what_to_do(tmp_path):
    Store(tmp_path / "empty.db").close()
    items = write_jsonl(tmp_path / "items.jsonl", [{"id": 1, "content": "c", "notation": "n", "response": "r"}])
    run = Calibrate(tmp_path / "one.db")
    run("import", "jsonl", str(items), "--task", "c3/lexical", "--lang", "en")
    for db, args, message in (
        ("one.db", ["parse"], "no judgments in"),
        ("one.db", ["report"], "no judge verdicts in"),
        ("one.db", ["trust"], "no judge verdicts with a yes/no or label verdict in"),
        ("one.db", ["judge", "--judge", "rule"], "no SuperGLUE items with a model response"),
        ("empty.db", ["export", "--out", str(tmp_path / "gold.jsonl")], "no items to export in"),
        ("empty.db", ["judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], "empty.db: import items first"),
    ):
        before = fingerprint(tmp_path)
        out = Calibrate(tmp_path / db)(*args, ok=False)
        assert out.exit_code == 1 and message in out.output, (args, out.output)
        assert fingerprint(tmp_path) == before, args


def test_a_byte_order_mark_and_other_delimiters_are_read(demo_db, tmp_path):
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps({"id": 1, "content": "c", "notation": "n", "response": "r"}).encode() + b"\n")
    assert "1 item added" in Calibrate(tmp_path / "new.db")("import", "jsonl", str(bom), "--task", "c3/lexical",
                                                              "--lang", "en").output
    lexical = "c3/lexical\ten\tsdm-alpha\tambiguity/semantic/lexical/0"
    (tmp_path / "tab.tsv").write_text(f"task\tlang\tsystem\tsource_id\tannotator\tlabel\n{lexical}\tana\tyes\n")
    (tmp_path / "semi.csv").write_bytes("\ufefftask;lang;system;source_id;annotator;label\n".encode()
                                        + lexical.replace("\t", ";").encode() + b";bo;no\n")
    run = Calibrate(demo_db)
    assert "1 label added" in run("import", "labels", str(tmp_path / "tab.tsv")).output
    assert "1 label added" in run("import", "labels", str(tmp_path / "semi.csv")).output
    (tmp_path / "pipe.csv").write_text(f"task|lang|source_id|annotator|label\n{lexical.replace(chr(9), '|')}|cy|yes\n")
    before = fingerprint(demo_db.parent)
    out = run("import", "labels", str(tmp_path / "pipe.csv"), ok=False)
    assert out.exit_code == 1 and "pipe.csv:1: the first row names none of the label columns" in out.output
    assert "with a comma, semicolon or tab between them" in out.output
    assert fingerprint(demo_db.parent) == before


def test_an_import_of_only_consolidated_gold_labels_imports_nothing_and_fails(labelled_demo_db, tmp_path):
    only_gold = write_jsonl(tmp_path / "g.jsonl", [
        {"task": "superglue/copa", "lang": "en", "system": "sdm-alpha", "source_id": "0", "annotator": "gold", "label": "1"}])
    before = fingerprint(labelled_demo_db.parent)
    out = Calibrate(labelled_demo_db)("import", "labels", str(only_gold), ok=False)
    assert out.exit_code == 1 and f"{only_gold}: no valid labels; nothing was imported (1 row refused: annotator " \
        "'gold' is the label several people decided" in " ".join(out.output.split())
    assert fingerprint(labelled_demo_db.parent) == before


def test_default_systems_follow_the_layout_people_have(tmp_path):
    c3 = DEMO_DIR / "c3" / "en"
    responses = tmp_path / "my-sdm" / "english"
    shutil.copytree(c3 / "responses", responses)
    run = Calibrate(tmp_path / "s.db")
    out = run("import", "c3", "--reference", str(c3 / "reference"), "--responses", str(responses), "--lang", "en")
    assert "system my-sdm (the folder above english in C3's layout; --system names another)" in out.output
    assert Store(tmp_path / "s.db").systems() == ["my-sdm"]
    sg = DEMO_DIR / "superglue"
    (tmp_path / "my-llm").mkdir()
    shutil.copy(sg / "boolq.predictions.jsonl", tmp_path / "my-llm" / "boolq.jsonl")
    out = run("import", "superglue", "--task", "boolq", str(sg / "boolq.jsonl"), "--predictions",
              str(tmp_path / "my-llm" / "boolq.jsonl"))
    assert "system my-llm (the predictions' folder" in out.output
    before = fingerprint(tmp_path)
    gold_only = run("import", "superglue", "--task", "cb", str(sg / "cb.jsonl"), "--system", "my-llm", ok=False)
    assert gold_only.exit_code == 2 and "give --predictions too" in " ".join(gold_only.output.split())
    assert fingerprint(tmp_path) == before, "nothing stored under a system the items would not have"
    before = fingerprint(tmp_path)
    beside = run("import", "superglue", "--task", "cb", str(sg / "cb.jsonl"), "--predictions",
                 str(sg / "cb.predictions.jsonl"), ok=False)
    assert beside.exit_code == 2 and "--system is required: the folder of" in beside.output
    assert fingerprint(tmp_path) == before
    assert Store(tmp_path / "s.db").systems() == ["my-llm", "my-sdm"]
    results = tmp_path / "Mooer-Omni" / "gpt-4o" / "english"  # C3's results of a system, kept per judge
    shutil.copytree(c3 / "results", results)
    (results / "context-dependency" / "multi-turn.json").unlink()  # (it needs the C3 tree imported first)
    out = Calibrate(tmp_path / "r.db")("import", "c3-results", str(results), "--lang", "en", "--judge-name", "gpt-4o")
    assert "system Mooer-Omni (the folder above gpt-4o/english in C3's layout" in out.output, "not the judge's folder"


def test_items_a_predictions_file_does_not_answer_are_said_to_be_stored_without_a_system(tmp_path):
    sg = DEMO_DIR / "superglue"
    (tmp_path / "my-llm").mkdir()
    first = (sg / "boolq.predictions.jsonl").read_text(encoding="utf-8").splitlines()[0]
    (tmp_path / "my-llm" / "boolq.jsonl").write_text(first + "\n", encoding="utf-8")  # the first of two items
    out = Calibrate(tmp_path / "s.db")("import", "superglue", "--task", "boolq", str(sg / "boolq.jsonl"),
                                       "--predictions", str(tmp_path / "my-llm" / "boolq.jsonl"))
    assert "2 items added" in out.output
    assert (f"1 item of {sg / 'boolq.jsonl'} had no prediction in {tmp_path / 'my-llm' / 'boolq.jsonl'}: stored "
            "gold-only, without a system") in " ".join(out.output.split())
    assert Store(tmp_path / "s.db").systems() == ["", "my-llm"]


def test_a_template_folder_without_fields_works_and_a_wrong_verdict_kind_lists_the_kinds(my_templates, tmp_path):
    listing = Calibrate(tmp_path / "x.db")("--templates", str(my_templates), "templates", "list", "--json").output
    assert {"mine/en/factcheck", "mine/en/broken"} <= {t["id"] for t in json.loads(listing)}
    manifest = my_templates / "mine" / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('verdict = "yes_no_en"', 'verdict = "yesno"', 1))
    out = Calibrate(tmp_path / "x.db")("--templates", str(my_templates), "templates", "list", ok=False)
    assert out.exit_code == 1 and "unknown verdict kind 'yesno'; verdict kinds: yes_no_en, yes_no_zh, rubric_scores, " \
                                  "label_set, record_entity" in out.output
    assert not (tmp_path / "x.db").exists()


def test_an_import_whose_judge_outputs_mostly_do_not_parse_warns_with_the_reasons(tmp_path):
    source = tmp_path / "outputs.jsonl"
    source.write_text("".join(json.dumps({"id": k, "content": "c", "notation": "n", "response": "r",
                                          "jo": "The answer is: yes." if k == 0 else "maybe"}) + "\n" for k in range(3)))
    out = Calibrate(tmp_path / "o.db")("import", "jsonl", str(source), "--task", "c3/lexical", "--lang", "en",
                                       "--judge-output", "jo", "--judge-name", "q")
    said = " ".join(out.output.split())
    assert "3 judgments added" in said and "warning: 2 of the 3 outputs of q did not parse as a verdict (2 × " in said


def test_a_judge_whose_every_call_failed_is_named_not_taken_for_missing_labels(calibrate, tmp_path):
    """Labelled items whose judge's calls all failed (a judge's outputs all null, a server that
    answered 500): `report` and `trust` say the calls failed and how to
    replace them, not that nobody labelled the items or that no judge ran."""
    lines = [{"id": str(k), "content": "c", "notation": "n", "response": "r", "out": None} for k in range(4)]
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    calibrate("import", "jsonl", str(items), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
              "--judge-name", "ext")
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label\n" + "".join(f"c3/lexical,en,{k},ann,yes\n" for k in range(3)),
                      encoding="utf-8")
    calibrate("import", "labels", str(labels))
    again = ("ask the judge again (calibrate judge), or import its outputs: a verdict replaces a failed call")
    report = calibrate("report", ok=False)
    assert report.exit_code == 1 and " ".join(report.output.split()) == (
        "Error: no agreement to report yet: the calls of ext in 1 cell on labelled items failed, no verdict (calibrate "
        f"items --status error lists them): {again}")
    trust = calibrate("trust", ok=False)
    assert trust.exit_code == 1 and " ".join(trust.output.split()) == (
        f"Error: no judge verdicts with a yes/no or label verdict in {calibrate.db}: every call of ext (4 errors) "
        f"failed, no verdict (calibrate items --status error lists them): {again}")
    # a judge that did judge, on unlabelled items only, beside it: named with what helps there
    judged = tmp_path / "judged.jsonl"
    judged.write_text("".join(json.dumps({**line, "out": "yes"}) + "\n" for line in lines[3:]), encoding="utf-8")
    calibrate("import", "jsonl", str(judged), "--task", "c3/lexical", "--lang", "en", "--judge-output", "out",
              "--judge-name", "good")
    both = " ".join(calibrate("report", ok=False).output.split())
    assert both == (
        "Error: no agreement to report yet: the calls of ext in 1 cell on labelled items failed, no verdict (calibrate "
        f"items --status error lists them): {again}. None of the items that good in 1 cell judged is labelled "
        "by people: label some (calibrate annotate) or import labels (calibrate import labels FILE)"), both
