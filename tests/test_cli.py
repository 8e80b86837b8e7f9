"""The CLI as a user scripts it: --db / CALIBRATE_DB, listings, templates, render, parse."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

import calibrate
from calibrate.cli import cli
from calibrate.store import Store
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
    result = subprocess.run([sys.executable, "-m", "calibrate", "status", "--json"], cwd=tmp_path,
                            capture_output=True, text=True, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": checkout})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [] and (tmp_path / "calibrate.db").exists()


def test_status_and_items_json(demo_db):
    run = Calibrate(demo_db)
    status = json.loads(run("status", "--json").output)
    cell = next(c for c in status if c["task"] == "c3/stress")
    assert cell == {"task": "c3/stress", "lang": "en", "items": 1, "judged": 1, "unparsed": 1, "errors": 0, "labelled": 0}
    assert sum(c["items"] for c in status) == 40
    unparsed = json.loads(run("items", "--status", "unparsed", "--json").output)
    assert {i["task"] for i in unparsed} == {"c3/stress", "c3/tone", "rubric/reference"}
    zh = json.loads(run("items", "--lang", "zh", "--task", "c3/multi-turn", "--json").output)
    assert len(zh) == 1 and zh[0]["fields"]["question"] == "中国的首都是哪里？"


def test_templates_list_and_show(calibrate):
    listing = json.loads(calibrate("templates", "list", "--json").output)
    ids = {t["id"] for t in listing}
    assert {"c3/en/heterograph", "c3-official/zh/multi-turn", "rubric/reference", "superglue/record"} <= ids
    shown = calibrate("templates", "show", "c3/en/syntactic").output
    assert "The {{ loop.index }} meaning of this sentence is:" in shown and "--- system ---" in shown
    missing = calibrate("templates", "show", "nope", ok=False)
    assert missing.exit_code != 0 and "unknown template 'nope'" in missing.output


def test_render_works_on_every_demo_item(demo_db):
    run = Calibrate(demo_db)
    store = Store(demo_db)
    for item in store.items():
        out = run("render", str(item.id)).output
        if "generation" in item.task:
            assert "has no judge prompt" in out
        elif item.task.startswith("c3/"):
            assert out.startswith("[system]\n") and "[user]\n" in out
        else:
            assert out.strip()
    hetero = store.items(task="c3/heterograph", lang="en")[0]
    official = run("render", str(hetero.id), "--variant", "c3-official").output
    assert "and so on in English" in official and f"```\n{hetero.fields['content']}\n```" in official


def test_parse_reports_changes_and_keeps_raw_outputs(demo_db):
    store = Store(demo_db)
    judgment = next(j for j in store.judgments() if j.verdict == "yes")
    raw_before = judgment.raw_output
    store.conn.execute("UPDATE judgments SET status = 'unparsed', verdict = NULL WHERE id = ?", (judgment.id,))
    out = Calibrate(demo_db)("parse").output
    assert re.search(r"│ unparsed\s*│ yes\s*│ 1\s*│", out), out
    after = next(j for j in store.judgments() if j.id == judgment.id)
    assert after.verdict == "yes" and after.raw_output == raw_before
    assert "no verdict changed" in Calibrate(demo_db)("parse").output


def test_help_lists_the_commands():
    out = CliRunner().invoke(cli, ["--help"]).output
    for command in ("import", "items", "status", "templates", "render", "parse", "judge", "demo"):
        assert command in out


def test_the_database_reads_with_the_sqlite_utils_cli(demo_db):
    """No calibrate needed to read the file: sqlite-utils (or Datasette) sees plain tables."""
    tables = subprocess.run([sys.executable, "-m", "sqlite_utils", "tables", str(demo_db), "--counts"],
                            capture_output=True, text=True, check=True).stdout
    counts = {row["table"]: row["count"] for row in json.loads(tables)}
    assert counts["items"] == 40 and counts["judgments"] == 36 and counts["annotations"] == 0
    rows = json.loads(subprocess.run(
        [sys.executable, "-m", "sqlite_utils", "query", str(demo_db),
         "select task, lang, source_id, reference from items where task = 'superglue/copa'"],
        capture_output=True, text=True, check=True).stdout)
    assert rows == [{"task": "superglue/copa", "lang": "en", "source_id": "0", "reference": "1"}]
