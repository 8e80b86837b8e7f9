"""Every command, and the --help of every command, run piped at COLUMNS=80 on the demo database
after people's work: no line is wider than 80 terminal cells (a CJK character counts 2).

The commands run in one child process whose environment has COLUMNS=80 when calibrate is
imported, as a user's shell would give it; only `render` and `templates show` print lines of a
prompt as the judge receives it, and those lines are never folded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rich.cells import cell_len

from calibrate.demo import DEMO_DIR
from calibrate.store import Store
from tests.test_formats import write_jsonl

RUN_AT_WIDTH = """
import json, sys
from click.testing import CliRunner
import calibrate.serve
from calibrate.cli import cli
class Bound:  # said to listen on the port asked for: nothing is bound
    def __init__(self, port):
        self.port = port
    def getsockname(self):
        return ("0.0.0.0", self.port)
calibrate.serve.listening_socket = lambda host, port: Bound(port)
calibrate.serve.CalibrateServer.serve = lambda self, listening: None  # print the URLs, do not serve
out = {}
for args in json.load(sys.stdin):
    result = CliRunner().invoke(cli, args)
    out[" ".join(args)] = [result.exit_code, result.stdout + result.stderr]
json.dump(out, sys.stdout)
"""


def every_command_path(group=None, prefix=()):
    """The name path of every command and group under calibrate's."""
    from calibrate.cli import cli

    group = group or cli
    for name, command in sorted(group.commands.items()):
        yield (*prefix, name)
        if hasattr(command, "commands"):
            yield from every_command_path(command, (*prefix, name))


def run_at(width: int, commands: list[list[str]], cwd: Path) -> dict[str, tuple[int, str]]:
    env = {**os.environ, "COLUMNS": str(width)}
    done = subprocess.run([sys.executable, "-c", RUN_AT_WIDTH], input=json.dumps(commands), capture_output=True,
                          text=True, env=env, cwd=cwd, check=True)
    return json.loads(done.stdout)


def test_every_command_and_every_help_fits_80_columns(labelled_demo_db, tmp_path):
    db = str(labelled_demo_db)
    item = Store(labelled_demo_db).items(task="c3/lexical", lang="en")[0]
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"task": "c3/lexical", "lang": "en", "system": "sdm-alpha",
                                                      "source_id": item.source_id, "annotator": "cy", "label": "no"}])
    items = write_jsonl(tmp_path / "items.jsonl", [{"id": "w1", "content": "c", "notation": "n", "response": "r"}])
    c3, sg = DEMO_DIR / "c3" / "en", DEMO_DIR / "superglue"
    other = tmp_path / "other.db"
    commands = [
        ["--db", str(other), "demo", "--no-tui"],
        *(["--db", db, *args] for args in (
            ["status"], ["items"], ["items", "--system", "sdm-beta", "--status", "labelled"],
            ["templates", "list"], ["templates", "show", "c3-official/zh/multi-turn"], ["config"],
            ["render", str(item.id)], ["parse"],
            ["judge", "--judge", "rule", "--force"],
            ["judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--export-batch", str(tmp_path / "b.jsonl")],
            ["report"], ["report", "--wide"], ["report", "--by", "system,task,lang", "--wide"], ["report", "--by", "task"],
            ["scores"], ["scores", "--by", "system"], ["trust"], ["trust", "--by", "system,task,lang"],
            ["export", "--format", "csv", "--out", str(tmp_path / "gold.csv")],
            ["export", "c3", "--lang", "zh", str(tmp_path / "c3"), "--system", "sdm-beta", "--judge", "demo-judge",
             "--judge", "demo-judge-2"],
            ["import", "jsonl", str(items), "--task", "c3/lexical", "--lang", "en", "--system", "sdm-alpha"],
            ["import", "c3", "--reference", str(c3 / "reference"), "--responses", str(c3 / "responses"), "--lang", "en",
             "--system", "sdm-alpha"],
            ["import", "c3-results", str(c3 / "results"), "--lang", "en", "--judge-name", "demo-judge",
             "--system", "sdm-alpha"],
            ["import", "superglue", "--task", "cb", str(sg / "cb.jsonl"), "--predictions",
             str(sg / "cb.predictions.jsonl"), "--system", "sdm-alpha"],
            ["import", "rubric", str(DEMO_DIR / "rubric" / "rubric.jsonl"), "--judge-output", "judge_output",
             "--judge-name", "demo-judge", "--system", "sdm-alpha"],
            ["import", "labels", str(labels)], ["merge", str(other)],
            ["serve", "--host", "0.0.0.0", "--port", "8123"],
        )),
        *([*path, "--help"] for path in every_command_path()), ["--help"],
    ]
    outputs = run_at(80, commands, tmp_path)
    judged = Store(labelled_demo_db).judgments_for_item(item.id)[0]
    prompts = f"{judged.prompt}\n{judged.system_prompt}".splitlines()
    from calibrate.templates import TemplateSet

    shown = TemplateSet().get("c3-official/zh/multi-turn")
    prompts += f"{shown.text}\n{shown.system}".splitlines()
    too_wide = {}
    for args, (code, text) in outputs.items():
        assert code == 0, (args, text)
        over = [line for line in text.splitlines() if cell_len(line) > 80 and line not in prompts]
        if over:
            too_wide[args] = over
    assert not too_wide, too_wide
    assert {" ".join([*path, "--help"]) for path in every_command_path()} <= set(outputs)
    assert any(cell_len(line) > 80 for line in outputs[f"--db {db} render {item.id}"][1].splitlines()), \
        "the prompt itself is printed whole (the exemption above is needed, so it is tested)"


def test_distinct_judges_stay_distinct_when_names_are_shortened(labelled_demo_db, tmp_path):
    outputs = run_at(70, [["--db", str(labelled_demo_db), "trust"]], tmp_path)  # narrow enough to shorten names
    code, text = outputs[f"--db {labelled_demo_db} trust"]
    assert code == 0 and max(map(cell_len, text.splitlines())) <= 70
    judges = {line.split()[0] for line in text.splitlines() if line.startswith("demo-")}
    assert len(judges) == 2, f"demo-judge and demo-judge-2 must read differently: {judges}"
    header = next(line for line in text.splitlines() if line.startswith("judge "))
    assert header.split()[:2] == ["judge", "n"] and "lang" not in text, "n kept; lang moved to the cell headings"
    assert "c3/coreference-detection · en" in text


def test_piped_without_columns_a_message_stays_one_line(labelled_demo_db, tmp_path):
    """A log keeps each message on one line (grep finds it); tables still fit 80 columns."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    missing = tmp_path / ("a-rather-long-folder-name-" * 3) / "nothing.db"
    done = subprocess.run([sys.executable, "-m", "calibrate", "--db", str(missing), "status"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1 and str(missing) in done.stderr
    status = subprocess.run([sys.executable, "-m", "calibrate", "--db", str(labelled_demo_db), "status"],
                            capture_output=True, text=True, env=env, check=True)
    titles = [line for line in status.stdout.splitlines() if line.startswith(f"status of {labelled_demo_db}")]
    tables = [line for line in status.stdout.splitlines() if line not in titles]
    assert len(titles) == 2 and cell_len(titles[0]) > 80 and max(map(cell_len, tables)) <= 80


def test_an_emoji_sequence_in_an_item_is_cut_whole_in_the_items_preview(calibrate, tmp_path):
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"  # one emoji: three people joined by U+200D
    # the preview's 24 cells end inside the sequence counted a character at a time (2 cells each)
    data = write_jsonl(tmp_path / "items.jsonl", [{"id": "1", "content": f"Family {family} and more", "notation": "n",
                                                   "response": "r"}])
    calibrate("import", "jsonl", str(data), "--task", "c3/lexical", "--lang", "en")
    (row,) = [line for line in calibrate("items").output.splitlines() if "Family" in line]
    assert f'"content": "Family {family} …' in row, "the emoji kept whole, the preview filled to its width"
    assert "\u200d…" not in row, "a joiner left before the … would join it to the emoji"
