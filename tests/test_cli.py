"""The CLI as a user scripts it: --db / CALIBRATE_DB, listings, templates, render, parse."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

import calibrate
from calibrate.cli import cli
from calibrate.store import NewItem, Store
from tests.conftest import Calibrate


def test_calibrate_db_env_var_chooses_the_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CALIBRATE_DB", str(tmp_path / "from-env.db"))
    result = CliRunner().invoke(cli, ["demo", "--no-tui"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "from-env.db").exists() and not (tmp_path / "calibrate.db").exists()


def test_default_database_is_calibrate_db_in_the_working_directory(tmp_path):
    # PYTHONPATH: the calibrate under test, not whichever one the interpreter has installed
    checkout = str(Path(calibrate.__file__).resolve().parents[1])
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": checkout}
    seed = tmp_path / "seed.jsonl"
    seed.write_text(json.dumps({"id": 1, "content": "c", "notation": "n", "response": "r"}) + "\n")
    imported = subprocess.run([sys.executable, "-m", "calibrate", "import", "jsonl", str(seed), "--task", "c3/lexical",
                               "--lang", "en"], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert imported.returncode == 0, imported.stderr
    result = subprocess.run([sys.executable, "-m", "calibrate", "status", "--json"], cwd=tmp_path,
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)[0]["items"] == 1 and (tmp_path / "calibrate.db").exists()


def test_read_only_commands_on_a_missing_database_say_so_and_create_nothing(tmp_path):
    missing = tmp_path / "nothing.db"
    run = Calibrate(missing)
    for args in (["status"], ["items"], ["render", "1"], ["report"], ["export"], ["annotate"],
                 ["export", "c3", "--lang", "en", str(tmp_path / "out")]):
        result = run(*args, ok=False)
        assert result.exit_code == 1 and f"Error: no database at {missing}" in result.output, (args, result.output)
    assert list(tmp_path.iterdir()) == []


def test_commands_that_need_data_create_no_database_in_an_empty_folder(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    labels = elsewhere / "labels.jsonl"
    labels.write_text(json.dumps({"task": "c3/lexical", "lang": "en", "source_id": "1", "annotator": "a",
                                  "label": "yes"}) + "\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.chdir(empty)
    monkeypatch.delenv("CALIBRATE_DB", raising=False)
    for args in (["trust"], ["judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"], ["judge", "--judge", "rule"],
                 ["report"], ["scores"], ["status"], ["items"], ["export"], ["export", "--out", str(elsewhere / "g.jsonl")],
                 ["parse"], ["import", "labels", str(labels)]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 1, (args, result.output)
        assert "Error: no database at calibrate.db: import items first (calibrate import …)" in result.output, args
        assert list(empty.iterdir()) == [], args
    assert sorted(p.name for p in elsewhere.iterdir()) == ["labels.jsonl"]


def test_a_file_that_is_not_a_calibrate_database_is_refused_and_left_as_it_is(tmp_path):
    import sqlite3

    foreign = tmp_path / "notes.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
    before = foreign.read_bytes()
    seed = tmp_path / "seed.jsonl"
    seed.write_text(json.dumps({"id": 1, "content": "c", "notation": "n", "response": "r"}) + "\n")
    run = Calibrate(foreign)
    for args in (["status"], ["report"], ["judge", "--judge", "rule"],
                 ["import", "jsonl", str(seed), "--task", "c3/lexical", "--lang", "en"]):
        result = run(*args, ok=False)
        assert result.exit_code == 1, (args, result.output)
        assert f"Error: {foreign}: an SQLite database, but not a calibrate one" in result.output, (args, result.output)
    assert foreign.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db", "seed.jsonl"]
    text = tmp_path / "text.db"
    text.write_text("hello\n")
    result = Calibrate(text)("status", ok=False)
    assert result.exit_code == 1 and f"Error: {text}: not an SQLite database" in result.output
    assert "Traceback" not in result.output


def test_every_format_of_report_scores_and_trust_goes_through_the_one_emit(labelled_demo_db, tmp_path, monkeypatch):
    import calibrate.cli as cli_module

    seen = []
    real_emit = cli_module.emit

    def recording_emit(result, fmt, out, what, *args, **kwargs):
        seen.append((what, fmt))
        real_emit(result, fmt, out, what, *args, **kwargs)

    monkeypatch.setattr(cli_module, "emit", recording_emit)
    run = Calibrate(labelled_demo_db)
    expected = []
    for command, what, extra in (("report", "report", ["--resamples", "200"]), ("scores", "scores", []),
                                 ("trust", "trust thresholds", [])):
        formats = next(p for p in cli.commands[command].params if p.name == "fmt").type.choices
        for fmt in formats:
            out = tmp_path / f"{command}.{fmt}"
            result = run(command, "--format", fmt, "--out", str(out), *extra)
            assert f"wrote {fmt} {what} to {out}" in result.output and out.stat().st_size > 0
            expected.append((what, fmt))
    assert seen == expected
    assert {fmt for what, fmt in seen if what == "trust thresholds"} == {"table", "json", "csv", "markdown"}
    trust_rows = json.loads((tmp_path / "trust.json").read_text())
    assert {"system", "task", "lang", "judge", "met", "threshold"} <= set(trust_rows[0])
    assert (tmp_path / "trust.csv").read_text().splitlines()[0].startswith("system,task,lang,judge,met,")
    assert (tmp_path / "trust.markdown").read_text().startswith("# Trust or escalate")
    styles = {re.search(r"<style>.*</style>", (tmp_path / f"{c}.html").read_text(), re.S).group() for c in ("report", "scores")}
    assert len(styles) == 1, "report and scores share one stylesheet"


def test_filters_name_what_the_database_has(demo_db, tmp_path):
    run = Calibrate(demo_db)
    out = run("items", "--task", "c3/nonexistent", ok=False)
    assert out.exit_code == 2 and "unknown task 'c3/nonexistent'; known tasks: c3/coreference-detection" in out.output
    out = run("items", "--lang", "fr", ok=False)
    assert out.exit_code == 2 and "unknown language 'fr'; languages: en, zh" in out.output
    out = run("annotate", "--judge", "gpt-9", ok=False).output
    assert f"unknown judge 'gpt-9'; {demo_db} has: demo-judge, demo-judge-2, rule" in out
    out = run("export", "c3", "--lang", "en", str(tmp_path / "c3"), "--judge", "gpt-9", ok=False)
    assert out.exit_code == 2 and f"unknown judge 'gpt-9'; {demo_db} has: demo-judge, demo-judge-2, rule" in out.output
    assert not (tmp_path / "c3").exists()


def test_status_and_items_json(demo_db):
    run = Calibrate(demo_db)
    status = json.loads(run("status", "--json").output)
    cell = next(c for c in status if c["task"] == "c3/stress" and c["system"] == "sdm-alpha")
    assert cell == {"task": "c3/stress", "lang": "en", "system": "sdm-alpha", "items": 1, "judged": 1, "unparsed": 1,
                    "errors": 0, "labelled": 0}
    assert sum(c["items"] for c in status) == 62
    beta = json.loads(run("status", "--system", "sdm-beta", "--json").output)
    assert {c["system"] for c in beta} == {"sdm-beta"} and sum(c["items"] for c in beta) == 22
    unparsed = json.loads(run("items", "--status", "unparsed", "--system", "sdm-alpha", "--json").output)
    assert {i["task"] for i in unparsed} == {"c3/stress", "c3/tone", "rubric/reference"}
    zh = json.loads(run("items", "--lang", "zh", "--task", "c3/multi-turn", "--json").output)
    assert len(zh) == 1 and zh[0]["fields"]["question"] == "中国的首都是哪里？"


def test_items_says_when_more_match_than_it_shows(demo_db):
    run = Calibrate(demo_db)
    first = run("items", "--limit", "10")
    assert "items 1–10 shown; more match: --offset 10 shows the next ones" in " ".join(first.output.split())
    last = run("items", "--limit", "10", "--offset", "60")
    assert "more match" not in last.output and "\n61 " in last.output and "\n62 " in last.output
    assert "more match" not in run("items", "--limit", "62").output, "exactly all of them: nothing more"


def test_a_failed_judgment_is_not_judged_in_status_items_report_or_scores(tmp_path):
    # C3's judge call failed on pause/1: its result file holds an empty check_answer, stored as an error
    reference, responses, results = (tmp_path / name / "ambiguity" / "phonological" for name in ("ref", "resp", "res"))
    for folder in (reference, responses / "pause", results):
        folder.mkdir(parents=True)
    (reference / "pause.json").write_text(json.dumps([{"content": "s0", "notation": "n0"},
                                                      {"content": "s1", "notation": "n1"}]), encoding="utf-8")
    for k in range(2):
        (responses / "pause" / f"{k}.txt").write_text(f"A says {k}\n", encoding="utf-8")
    (results / "pause.json").write_text(json.dumps([
        {"content": "s0", "notation": "n0", "answer": "A says 0\n", "check_answer": "The answer is: yes."},
        {"content": "s1", "notation": "n1", "answer": "A says 1\n", "check_answer": ""}]), encoding="utf-8")
    run = Calibrate(tmp_path / "e.db")
    run("import", "c3", "--reference", str(tmp_path / "ref"), "--responses", str(tmp_path / "resp"), "--lang", "en",
        "--system", "A")
    run("import", "c3-results", str(tmp_path / "res"), "--lang", "en", "--judge-name", "gpt-4o", "--system", "A")
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,system,source_id,annotator,label\n"
                      "c3/pause,en,A,ambiguity/phonological/pause/0,ana,yes\n"
                      "c3/pause,en,A,ambiguity/phonological/pause/1,ana,no\n", encoding="utf-8")
    run("import", "labels", str(labels))

    (cell,) = json.loads(run("status", "--json").stdout)
    assert (cell["items"], cell["judged"], cell["unparsed"], cell["errors"]) == (2, 1, 0, 1)
    assert "a failed judgment (errors) is no verdict" in " ".join(run("status").stdout.split())
    ids = {status: [i["source_id"] for i in json.loads(run("items", "--status", status, "--json").stdout)]
           for status in ("judged", "unjudged")}
    assert ids == {"judged": ["ambiguity/phonological/pause/0"], "unjudged": ["ambiguity/phonological/pause/1"]}
    (report,) = json.loads(run("report", "--format", "json").stdout)["cells"]
    assert (report["judged"], report["unparsed"], report["errors"]) == (1, 0, 1)
    scores = json.loads(run("scores", "--format", "json").stdout)
    (judge,) = next(c for c in scores["cells"] if c["task"] == "c3/pause")["judges"]
    assert (judge["judged"], judge["unparsed"], judge["errors"]) == (1, 0, 1)
    assert judge["c3_rule"] == {"right": 1, "n": 2, "accuracy": 0.5}, "C3 counts a failed call as wrong"
    table = run("scores", "--format", "csv").stdout
    assert {row["judged"] for row in csv.DictReader(io.StringIO(table))} == {"1"}
    assert "1 failed judgment (errors: no output, no verdict), not counted as judged" in table


def test_templates_list_and_show(calibrate):
    listing = json.loads(calibrate("templates", "list", "--json").output)
    ids = {t["id"] for t in listing}
    assert {"c3/en/heterograph", "c3-official/zh/multi-turn", "rubric/reference", "superglue/record"} <= ids
    shown = calibrate("templates", "show", "c3/en/syntactic").output
    assert "The {{ loop.index }} meaning of this sentence is:" in shown and "--- system ---" in shown
    missing = calibrate("templates", "show", "nope", ok=False)
    assert missing.exit_code != 0 and "unknown template 'nope'" in missing.output


def test_render_prints_the_prompt_the_item_was_judged_with_or_the_default(demo_db):
    run = Calibrate(demo_db)
    store = Store(demo_db)
    for item in store.items():
        result = run("render", str(item.id))
        judged = next((j for j in store.judgments_for_item(item.id) if j.prompt), None)
        if judged is not None:
            assert f"template {judged.template_id}" in result.stderr and judged.prompt in result.stdout
        elif "generation" in item.task:
            assert "has no judge prompt" in result.stdout
        else:
            assert "no judgment yet: the default template" in result.stderr and result.stdout.strip()
    pause = store.items(task="c3/pause", lang="en")[0]
    result = run("render", str(pause.id))
    assert "judge demo-judge was given (template c3-official/en/phonological" in result.stderr
    assert result.stdout.rstrip("\n").endswith(store.judgments_for_item(pause.id)[0].prompt.rstrip("\n"))
    unjudged = store.add_items([NewItem("c3/pause", "en", "new", {**pause.fields})])[1]
    assert unjudged == 1
    new_id = store.items(task="c3/pause", lang="en")[-1].id
    fresh = run("render", str(new_id))
    assert "no judgment yet: the default template c3/en/phonological" in fresh.stderr
    assert fresh.stdout.startswith("[system]\n")
    hetero = store.items(task="c3/heterograph", lang="en")[0]
    official = run("render", str(hetero.id), "--variant", "c3-official").output
    assert "and so on in English" in official and f"```\n{hetero.fields['content']}\n```" in official


def test_parse_reports_changes_and_keeps_raw_outputs(demo_db):
    store = Store(demo_db)
    judgment = next(j for j in store.judgments() if j.verdict == "yes")
    raw_before = judgment.raw_output
    store.conn.execute("UPDATE judgments SET status = 'unparsed', verdict = NULL WHERE id = ?", (judgment.id,))
    out = Calibrate(demo_db)("parse").output
    assert re.search(r"unparsed\s+yes\s+1\b", out), out
    after = next(j for j in store.judgments() if j.id == judgment.id)
    assert after.verdict == "yes" and after.raw_output == raw_before
    assert "no verdict changed" in Calibrate(demo_db)("parse").output


def test_help_lists_the_commands():
    out = CliRunner().invoke(cli, ["--help"]).output
    for command in ("import", "items", "status", "templates", "render", "parse", "judge", "demo"):
        assert command in out


def test_every_option_of_judge_and_items_says_what_it_does():
    for command in ("judge", "items"):
        params = cli.commands[command].params
        undescribed = [p.name for p in params if isinstance(p, click.Option) and not p.help]
        assert undescribed == [], f"calibrate {command}: options without help: {undescribed}"
    helped = " ".join(CliRunner().invoke(cli, ["judge", "--help"]).output.split())
    assert "--task TEXT Only this task." in helped and "Times a failed request is asked again" in helped


def test_the_database_reads_with_the_sqlite_utils_cli(demo_db):
    """No calibrate needed to read the file: sqlite-utils (or Datasette) sees plain tables."""
    tables = subprocess.run([sys.executable, "-m", "sqlite_utils", "tables", str(demo_db), "--counts"],
                            capture_output=True, text=True, check=True).stdout
    counts = {row["table"]: row["count"] for row in json.loads(tables)}
    assert counts["items"] == 62 and counts["judgments"] == 78 and counts["annotations"] == 0
    rows = json.loads(subprocess.run(
        [sys.executable, "-m", "sqlite_utils", "query", str(demo_db),
         "select task, lang, source_id, reference from items where task = 'superglue/copa'"],
        capture_output=True, text=True, check=True).stdout)
    assert rows == [{"task": "superglue/copa", "lang": "en", "source_id": "0", "reference": "1"}]


def test_listings_fit_80_columns_without_squeezed_columns(demo_db):
    """A listing whose columns cannot all fit prints a block per row; none loses a column."""
    from rich.console import Console

    from calibrate import cli as cli_module

    for args, expected in ((("status",), "labelled"), (("items", "--limit", "3"), "source_id"),
                           (("templates", "list"), "required fields")):
        buffer = Console(file=io.StringIO(), width=80, color_system=None)
        original, cli_module.console = cli_module.console, buffer
        try:
            Calibrate(demo_db)(*args)
        finally:
            cli_module.console = original
        text = buffer.file.getvalue()
        assert expected in text and all(len(line) <= 80 for line in text.splitlines()), text


def test_an_argument_that_is_not_utf8_is_refused_before_anything_is_stored(tmp_path):
    run = Calibrate(tmp_path / "c.db")
    source = tmp_path / "items.jsonl"
    source.write_text('{"id": 1, "content": "c", "notation": "n", "response": "r"}\n')
    for option in ("--system", "--id-field"):
        bad = run("import", "jsonl", str(source), "--task", "c3/lexical", "--lang", "en", option, "sys\udcff", ok=False)
        assert bad.exit_code == 2 and "is not UTF-8 text" in bad.output and "sys\\udcff" in bad.output
    assert not (tmp_path / "c.db").exists()


def test_a_required_option_left_out_is_a_usage_error_naming_it(demo_db, tmp_path):
    # click takes an option's default=None for a value given: `export c3` without --lang reached the command with
    # None and raised KeyError, as did the imports that need --lang
    run = Calibrate(demo_db)
    for args in (["export", "c3", str(tmp_path / "out")], ["import", "jsonl", str(demo_db), "--task", "c3/lexical"],
                 ["import", "c3-results", str(tmp_path), "--judge-name", "j"],
                 ["import", "c3", "--reference", str(tmp_path), "--responses", str(tmp_path)]):
        result = run(*args, ok=False)
        assert result.exit_code == 2 and "Missing option '--lang'" in result.output, (args, result.output)



def test_a_ctrl_c_while_the_command_loads_ends_it_as_a_ctrl_c_in_it_does():
    """The `calibrate` command (and `python -m calibrate`) loads the CLI's modules first, a few
    tenths of a second: a Ctrl-C then is "Aborted!" and exit 1, as in a command, never the
    traceback of the import it cut short."""
    code = ("import builtins, os, signal\n"
            "real = builtins.__import__\n"
            "def interrupted(name, *args, **kwargs):\n"
            "    if name == 'calibrate.cli':\n"
            "        os.kill(os.getpid(), signal.SIGINT)\n"
            "    return real(name, *args, **kwargs)\n"
            "builtins.__import__ = interrupted\n"
            "from calibrate.__main__ import run\n"
            "run()\n")
    result = subprocess.run([sys.executable, "-c", code, "status"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stderr, result.stdout) == (1, "Aborted!\n", "")
