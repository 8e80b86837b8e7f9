"""Inspect AI logs in and people's decisions back out: a real log made with inspect's own `eval`
(mock models as solver and grader, the grader's answers scripted), imported, labelled in the
app, exported as score edits that inspect reads back; each kind of bad input named by log and
sample, with nothing half-imported."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import shutil
import subprocess
import sys
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from inspect_ai.log import EvalError, read_eval_log, write_eval_log
from inspect_ai.model import ModelOutput, ModelUsage
from inspect_ai.scorer import Score

from calibrate.formats.inspect import InspectLog
from calibrate.kinds import kind_for
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.conftest import Calibrate
from tests.tui_helpers import make_app, screen_text

GRADER = list("CICCICCICCCI")  # the scripted grader's letter for samples 1..12
PEOPLE = list("CCCCICIICCCC")  # what the people decide: 3 of the grader's letters overturned
TASK, SCORER, JUDGE, SYSTEM = "inspect/qa_demo", "model_graded_qa", "mockllm/grader", "mockllm/model"


def scripted(model: str, text: str) -> ModelOutput:
    """A mock model's answer. Its token usage is given, so the mock model counts no tokens (its
    counter would fetch tiktoken's o200k_base from the internet)."""
    output = ModelOutput.from_content(model=model, content=text)
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


def make_eval_log(folder: Path, samples: int = len(GRADER)) -> Path:
    """A real .eval log made by inspect's own eval: `samples` questions answered by
    mockllm/model, graded by model_graded_qa with mockllm/grader, whose answer to question n
    ends in GRADE: GRADER[n % 12]. Runs offline; inspect's traces go under `folder`."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import get_model
    from inspect_ai.scorer import model_graded_qa
    from inspect_ai.solver import generate

    def solver(messages, tools, tool_choice, config):
        return scripted("model", f"My answer to: {messages[-1].text}")

    def grader(messages, tools, tool_choice, config):
        n = int(messages[-1].text.split("question number ")[1].split(" ")[0])
        return scripted("grader", f"Reasoning about question {n}.\nGRADE: {GRADER[n % len(GRADER)]}")

    dataset = [Sample(id=n + 1, input=f"What is question number {n} about?", target=f"answer {n}")
               for n in range(samples)]
    task = Task(dataset=dataset, solver=generate(), name="qa_demo",
                scorer=model_graded_qa(model=get_model(JUDGE, custom_outputs=grader)))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_DATA_HOME", str(folder / "data"))
        env.setenv("XDG_CACHE_HOME", str(folder / "cache"))
        logs = eval(task, model=get_model(SYSTEM, custom_outputs=solver), log_dir=str(folder / "logs"),
                    log_format="eval", display="none")
    assert logs[0].status == "success", logs[0].error
    return Path(logs[0].location)


@pytest.fixture(scope="session")
def eval_log(tmp_path_factory) -> Path:
    return make_eval_log(tmp_path_factory.mktemp("inspect"))


@pytest.fixture
def log(eval_log, tmp_path) -> Path:
    return Path(shutil.copy(eval_log, tmp_path / "run.eval"))


def rewrite(src: Path, dst: Path, change) -> Path:
    """A copy of the log written by inspect itself after `change(log)`."""
    log = read_eval_log(str(src))
    change(log)
    write_eval_log(log, str(dst))
    return dst


def with_values(values: dict[int, object]):
    """A change giving sample k's score the value values[k] (other samples keep theirs)."""
    def change(log):
        for sample in log.samples:
            if sample.id in values:
                sample.scores[SCORER].value = values[sample.id]
    return change


def db_templates(db: Path) -> TemplateSet:
    """The templates as the CLI sees them: with the tasks the database's imports brought."""
    templates = TemplateSet()
    store = Store(db)
    templates.add_data_tasks(store.data_tasks())
    store.close()
    return templates


def write_labels(path: Path, labels: dict[str, str], annotator: str, notes: dict[str, str] | None = None) -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        out = csv.writer(handle)
        out.writerow(["task", "lang", "system", "source_id", "annotator", "label", "note"])
        for source_id, label in labels.items():
            out.writerow([TASK, "en", SYSTEM, source_id, annotator, label, (notes or {}).get(source_id, "")])
    return path


def counts(db: Path) -> tuple[int, int, int]:
    store = Store(db)
    try:
        return tuple(store.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                     for t in ("items", "judgments", "annotations"))
    finally:
        store.close()


# -- the round trip --------------------------------------------------------------------------------


def test_round_trip_labelled_in_the_app_and_written_back_as_score_edits(log, db_path, tmp_path):
    calibrate = Calibrate(db_path)
    original = log.read_bytes()
    out = calibrate("import", "inspect", str(log)).output
    assert "12 records: 12 items added, 0 already present, 12 judgments added, 0 skipped" in out

    async def label_in_the_app():
        app = make_app(db_path, annotator="ana", templates=db_templates(db_path))
        async with app.run_test(size=(140, 40)) as pilot:
            shown = screen_text(app)
            assert "What is question number 0 about?" in shown and "My answer to: What is question" in shown
            for n, (grader, person) in enumerate(zip(GRADER, PEOPLE, strict=True)):
                assert app.screen.view.item.source_id == str(n + 1) and app.screen.view.verdict == grader
                if n == 1:
                    await pilot.press("a", *"the submission names the answer", "enter")
                await pilot.press("enter" if grader == person else "o")

    # the app's loop is closed before inspect's log API runs (as in `calibrate export inspect`):
    # called while a loop runs, inspect patches asyncio for the whole process
    asyncio.run(label_in_the_app())
    store = Store(db_path)
    assert [label for _, _, label in sorted(store.labels_in_force())] == PEOPLE
    store.close()

    edited = tmp_path / "reviewed.eval"
    out = calibrate("export", "inspect", str(log), "--out", str(edited), "--annotator", "ana").output
    assert "12 score edits (3 change the value, 9 confirm it) of 12 samples" in out
    assert "accuracy: 0.6667 -> 0.75" in out
    assert log.read_bytes() == original, "the log itself is never changed"

    back = read_eval_log(str(edited))  # inspect's own reader
    metrics = back.results.scores[0].metrics
    assert metrics["accuracy"].value == pytest.approx(PEOPLE.count("C") / len(PEOPLE))
    for sample, grader, person in zip(back.samples, GRADER, PEOPLE, strict=True):
        score = sample.scores[SCORER]
        original_score, edit = score.history
        assert (score.value, original_score.value) == (person, grader)
        assert edit.value == ("UNCHANGED" if grader == person else person)
        assert edit.provenance.author == "ana" and edit.provenance.timestamp is not None
        assert edit.provenance.metadata["calibrate"]["action"] == ("confirm" if grader == person else "override")
        assert edit.provenance.reason == ("the submission names the answer" if sample.id == 2 else None)

    report = json.loads(calibrate("report", "--format", "json").output)
    (line,) = [line for cell in report["cells"] for line in cell["lines"]]
    assert (line["task"], line["judge"], line["versus"], line["n"]) == (TASK, JUDGE, "ana", 12)
    assert line["kappa"] == pytest.approx(0.4)  # po 9/12, pe 8/12 * 9/12 + 4/12 * 3/12
    scores = json.loads(calibrate("scores", "--by", "task", "--format", "json").output)
    (cell,) = [c for c in scores["cells"] if c["task"] == TASK]
    assert cell["judges"][0]["parser_unparsed_wrong"] == {"right": 8, "n": 12, "accuracy": pytest.approx(8 / 12)}
    assert cell["judges"][0]["corrected"]["value"] == pytest.approx(0.75)  # every item labelled: 9 of 12

    again = calibrate("export", "inspect", str(edited), "--out", str(edited), "--annotator", "ana", ok=False)
    assert again.exit_code == 1 and "every label by ana is in it already; nothing was written" in again.output
    typo = calibrate("export", "inspect", str(edited), "--out", str(edited), "--annotator", "Ana", ok=False)
    assert typo.exit_code == 2 and "unknown annotator 'Ana' (did you mean ana?)" in typo.output

    # the reviewed log read back: the grader's own scores are its judgments, the edits ana's labels
    before = counts(db_path)
    out = calibrate("import", "inspect", str(edited)).output
    assert ("12 records: 0 items added, 12 already present, 0 judgments added, 0 skipped; system mockllm/model (the "
            "log's evaluated model; --system names another)") in out
    assert counts(db_path) == before
    elsewhere = Calibrate(tmp_path / "elsewhere.db")
    assert "12 judgments added, 12 labels added" in elsewhere("import", "inspect", str(edited)).output
    store = Store(elsewhere.db)
    assert [label for _, _, label in sorted(store.labels_in_force())] == PEOPLE
    assert [(j.judge_name, j.verdict) for j in store.judgments()] == [(JUDGE, grade) for grade in GRADER]
    store.close()
    (line,) = [line for cell in json.loads(elsewhere("report", "--format", "json").output)["cells"]
               for line in cell["lines"]]
    assert (line["judge"], line["versus"], line["n"], line["kappa"]) == (JUDGE, "ana", 12, pytest.approx(0.4))


def test_render_shows_the_graders_exact_messages(log, calibrate):
    calibrate("import", "inspect", str(log))
    grading = read_eval_log(str(log)).samples[0].scores[SCORER].metadata["grading"]
    result = calibrate("render", "1")
    assert result.stdout == grading[0]["content"] + "\n"
    assert f"the prompt judge {JUDGE} was given" in result.stderr
    store = Store(calibrate.db)
    (judgment,) = store.judgments_for_item(1)
    assert (judgment.raw_output, judgment.verdict, judgment.model) == (grading[1]["content"], "C", JUDGE)
    store.close()
    assert "no verdict changed" in calibrate("parse").output, "a score's value is the scorer's, never re-parsed"


def test_json_logs_reimports_and_newer_logs(log, calibrate, tmp_path):
    calibrate("import", "inspect", str(log))
    as_json = rewrite(log, tmp_path / "run.json", lambda _: None)  # the same log in inspect's .json format
    assert "0 items added, 12 already present, 0 judgments added" in calibrate("import", "inspect", str(as_json)).output
    assert "0 items added, 12 already present, 0 judgments added" in calibrate("import", "inspect", str(log)).output

    def answer_again(log):
        log.samples[2].output = scripted("model", "A better answer to question 2")
        log.samples[2].scores[SCORER].value = "C"
    newer = rewrite(log, tmp_path / "newer.eval", answer_again)
    refused = calibrate("import", "inspect", str(newer), ok=False)
    assert refused.exit_code == 1 and (f"{newer}:sample 3: {TASK} (en, system {SYSTEM}) item 3 was imported before "
                                       "with different content; pass --update") in refused.output
    assert counts(calibrate.db) == (12, 12, 0)
    updated = calibrate("import", "inspect", str(newer), "--update").output
    assert "0 items added, 1 new version, 11 already present, 1 judgment added" in updated
    store = Store(calibrate.db)
    (item,) = [item for item in store.items() if item.source_id == "3"]  # the current version
    assert (item.version, item.fields["response"]) == (2, "A better answer to question 2")
    store.close()
    labels = tmp_path / "dee.csv"
    labels.write_text(f"task,lang,system,source_id,annotator,label\n{TASK},en,{SYSTEM},3,dee,I\n", encoding="utf-8")
    calibrate("import", "labels", str(labels))
    onto_older = calibrate("export", "inspect", str(log), "--out", str(tmp_path / "x.eval"), "--annotator", "dee",
                           ok=False)
    assert onto_older.exit_code == 1 and ("the labels by dee of 1 of them are on a newer version of the sample "
                                          "(imported with --update); export onto the log that version came from"
                                          ) in " ".join(onto_older.output.split())
    assert "wrote" in calibrate("export", "inspect", str(newer), "--out", str(tmp_path / "y.eval"), "--annotator",
                                "dee").output


def imported_as_before_eval_ids(calibrate: Calibrate, log: Path):
    """`calibrate import inspect LOG` as calibrate ran it before a judgment's uid named its Inspect eval
    (commit 65c7c0c): each judgment's uid made of its item, judge and output only, as records of no run have."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(InspectLog, "run", property(lambda _: None))
        return calibrate("import", "inspect", str(log))


def later_runs_take_over(calibrate: Calibrate, log: Path, tmp_path: Path, begun: datetime | None = None) -> Path:
    """Imports two more runs of `log`'s eval (begun at `begun`, or when `log`'s began): the first grades sample 1
    otherwise, the second as `log` did. The second's grading is in force (it was taken for `log`'s judgment, and the
    run between kept its verdict in force). Returns the second's log."""
    def run(name: str, values: dict[int, object] | None = None):
        def change(changed):
            changed.eval.eval_id = name
            if begun is not None:
                changed.eval.created = begun.isoformat()
            with_values(values or {})(changed)
        return change

    value = read_eval_log(str(log)).samples[0].scores[SCORER].value
    other = "I" if value == "C" else "C"
    second = rewrite(log, tmp_path / "second.eval", run("second-run", {1: other}))
    third = rewrite(log, tmp_path / "third.eval", run("third-run"))
    assert "12 judgments added" in calibrate("import", "inspect", str(second)).output
    said = " ".join(calibrate("import", "inspect", str(third)).output.split())
    assert "12 judgments added" in said and f"1: {other} -> {value}" in said, said
    store = Store(calibrate.db)
    (item,) = [i for i in store.items() if i.source_id == "1"]
    assert store.verdicts_in_force_of([(item.id, JUDGE)])[item.id, JUDGE] == ("verdict", value)
    store.close()
    return third


def test_a_later_run_grading_as_an_earlier_one_did_is_the_verdict_in_force(log, calibrate, tmp_path):
    assert "12 judgments added" in calibrate("import", "inspect", str(log)).output
    third = later_runs_take_over(calibrate, log, tmp_path)
    again = calibrate("import", "inspect", str(third)).output
    assert "0 judgments added" in again, "the same run's log again adds nothing"


def test_a_log_imported_before_judgments_named_their_eval_adds_nothing_again(log, calibrate, tmp_path):
    """In a database whose Inspect judgments were stored without their eval's id, the same log (or its copy) adds
    no judgment again: it added each a second time, so the eval counted twice. A later eval's grading is a judgment
    of its own, also where it grades as that log did."""
    assert "12 judgments added" in imported_as_before_eval_ids(calibrate, log).output
    before = counts(calibrate.db)
    for again in (log, rewrite(log, tmp_path / "run.json", lambda _: None)):
        said = calibrate("import", "inspect", str(again)).output
        assert "12 records: 0 items added, 12 already present, 0 judgments added" in said, said
    assert counts(calibrate.db) == before
    later_runs_take_over(calibrate, log, tmp_path, begun=datetime.now(UTC))
    assert counts(calibrate.db) == (12, 36, 0)


def test_an_older_evals_log_imported_after_a_newer_ones_does_not_take_over(log, calibrate, tmp_path):
    """An eval a day older grading sample 1 otherwise, imported after the newer log: its
    judgments are added, not in force, and the import says so; one a day newer takes over."""
    def run(name: str, days: int, values: dict[int, object]):
        def change(changed):
            changed.eval.eval_id = name
            changed.eval.created = (datetime.fromisoformat(changed.eval.created) + timedelta(days=days)).isoformat()
            with_values(values)(changed)
        return change

    value = read_eval_log(str(log)).samples[0].scores[SCORER].value
    other = "I" if value == "C" else "C"
    first = rewrite(log, tmp_path / "first.eval", run("first-run", -2, {}))  # newer evals are in the past too
    older = rewrite(log, tmp_path / "older.eval", run("older-run", -3, {1: other}))
    newer = rewrite(log, tmp_path / "newer.eval", run("newer-run", -1, {1: other}))
    calibrate("import", "inspect", str(first))
    late = calibrate("import", "inspect", str(older))
    said = " ".join(late.output.split())
    assert "12 judgments added" in said and "changed by this import" not in said, said
    assert (f"12 of the judgments of {JUDGE} added are older than its verdict in force on the item (the time the "
            "judge made them: an older eval's log?): kept in the history, not put in force") in said, said

    def in_force() -> tuple[str, str]:
        store = Store(calibrate.db)
        (item,) = [i for i in store.items() if i.source_id == "1"]
        found = store.verdicts_in_force_of([(item.id, JUDGE)])[item.id, JUDGE]
        store.close()
        return found
    assert in_force() == ("verdict", value)
    assert f"1: {value} -> {other}" in " ".join(calibrate("import", "inspect", str(newer)).output.split())
    assert in_force() == ("verdict", other)


def test_an_eval_dated_ahead_of_the_clock_is_refused_and_takes_nothing_over(log, calibrate, tmp_path):
    """A log whose eval time lies ahead of this machine's clock (a clock that ran ahead, a time
    without a zone read as UTC) would keep its grading in force over every later eval: `merge`
    refuses such a time, and so does the import, naming the log and its time; nothing of it, or
    of the other logs imported with it, is stored. Five minutes ahead is tolerated, as by merge."""
    def run(name: str, created: str):
        def change(changed):
            changed.eval.eval_id = name
            changed.eval.created = created
            with_values({1: "I" if value == "C" else "C"})(changed)
        return change

    value = read_eval_log(str(log)).samples[0].scores[SCORER].value
    calibrate("import", "inspect", str(log))
    before = counts(calibrate.db)
    ahead = datetime.now(UTC) + timedelta(hours=1)
    future = rewrite(log, tmp_path / "future.eval", run("future-run", "2030-01-01T00:00:00+00:00"))
    naive = rewrite(log, tmp_path / "naive.eval", run("naive-run", ahead.replace(tzinfo=None).isoformat()))
    for logs, named, at in (((future,), future, "2030-01-01T00:00:00+00:00"),
                            ((log, naive), naive, ahead.replace(tzinfo=None).isoformat() + "+00:00")):
        refused = calibrate("import", "inspect", *map(str, logs), ok=False)
        said = " ".join(refused.output.split())
        assert refused.exit_code == 1, said
        assert (f"{named}: the eval was created at {at} (the log's header), which is ahead of this machine's clock"
                in said and "by more than 5 minutes" in said and "nothing is imported" in said), said
    assert counts(calibrate.db) == before
    store = Store(calibrate.db)
    (item,) = [i for i in store.items() if i.source_id == "1"]
    assert store.verdicts_in_force_of([(item.id, JUDGE)])[item.id, JUDGE] == ("verdict", value)
    store.close()
    soon = rewrite(log, tmp_path / "soon.eval", run("soon-run", (datetime.now(UTC) + timedelta(minutes=4)).isoformat()))
    assert "12 judgments added" in calibrate("import", "inspect", str(soon)).output


def test_a_reviewed_log_names_the_grader_its_parameters_name_when_the_header_lists_no_scorers(log, calibrate,
                                                                                               tmp_path):
    def hand_made(log):  # a log written by hand or another tool: the grader named only in the results
        log.eval.scorers = None
        log.results.scores[0].params = {"model": "openai/gpt-grader"}
    made = rewrite(log, tmp_path / "made.json", hand_made)
    calibrate("import", "inspect", str(made))
    calibrate("import", "labels", str(write_labels(tmp_path / "l.csv", {"1": "I", "2": "C", "4": "I"}, "ana")))
    calibrate("export", "inspect", str(made), "--out", str(tmp_path / "reviewed.eval"), "--annotator", "ana")
    assert "0 judgments added" in calibrate("import", "inspect", str(tmp_path / "reviewed.eval")).output
    report = json.loads(calibrate("report", "--format", "json").output)
    assert [(line["judge"], line["n"]) for cell in report["cells"] for line in cell["lines"]] == [("openai/gpt-grader", 3)]


def test_a_gold_edit_reads_back_as_each_persons_label_and_notes(log, calibrate, tmp_path):
    calibrate("import", "inspect", str(log))
    for name, label in (("ana", "I"), ("bo", "I"), ("cy", "C")):
        calibrate("import", "labels", str(write_labels(tmp_path / f"{name}.csv", {"1": label}, name,
                                                       {"1": f"{name} saw it"} if name != "bo" else None)))
    calibrate("export", "inspect", str(log), "--out", str(tmp_path / "gold.eval"), "--gold")
    other = Calibrate(tmp_path / "other.db")
    assert "3 labels added" in other("import", "inspect", str(tmp_path / "gold.eval")).output
    store = Store(other.db)
    assert sorted(store.labels_in_force()) == [(1, "ana", "I"), (1, "bo", "I"), (1, "cy", "C")]
    assert store.note_texts(1) == ["ana: ana saw it", "cy: cy saw it"]  # cy's too, though the gold is not theirs
    store.close()


def test_a_reviewed_log_brings_back_each_persons_notes_once(log, calibrate, tmp_path):
    from inspect_ai.log import ProvenanceData, edit_score
    from inspect_ai.scorer import ScoreEdit

    calibrate("import", "inspect", str(log))
    calibrate("import", "labels", str(write_labels(tmp_path / "a.csv", {"1": "I", "2": "C"}, "ana",
                                                   {"1": "vague\nno answer given"})))
    calibrate("import", "labels", str(write_labels(tmp_path / "b.csv", {"1": "I"}, "ana", {"1": "checked twice"})))
    calibrate("export", "inspect", str(log), "--out", str(tmp_path / "reviewed.eval"), "--annotator", "ana")

    def reviewed_in_inspect(log):  # a person's edit made in Inspect: its reason is their note
        edit_score(log, 3, SCORER, ScoreEdit(value="I", provenance=ProvenanceData(author="dee", reason="off topic")))
    reviewed = rewrite(tmp_path / "reviewed.eval", tmp_path / "more.eval", reviewed_in_inspect)
    before = counts(calibrate.db)
    out = calibrate("import", "inspect", str(reviewed)).output
    assert "1 label added, 0 skipped" in out and counts(calibrate.db) == (before[0], before[1], before[2] + 1)

    other = Calibrate(tmp_path / "other.db")
    out = other("import", "inspect", str(reviewed)).output
    assert "3 labels added, 1 more note beside labels, 0 skipped" in out
    store = Store(other.db)
    assert [store.note_texts(n) for n in (1, 2, 3)] == [["ana: vague\nno answer given", "ana: checked twice"], [],
                                                        ["dee: off topic"]]
    store.close()
    before = counts(other.db)
    assert "0 judgments added, 0 skipped" in other("import", "inspect", str(reviewed)).output
    assert counts(other.db) == before


def test_an_export_onto_an_existing_file_says_it_replaced_it_whole(log, calibrate, tmp_path, monkeypatch):
    """An --out file there before is replaced whole, and the export says so (and how to add to its edits instead);
    an export that fails leaves it as it was."""
    import inspect_ai.log

    calibrate("import", "inspect", str(log))
    calibrate("import", "labels", str(write_labels(tmp_path / "a.csv", {"1": "I"}, "ana")))
    calibrate("import", "labels", str(write_labels(tmp_path / "b.csv", {"2": "C"}, "bob")))
    out = tmp_path / "reviewed.eval"
    first = calibrate("export", "inspect", str(log), "--out", str(out), "--annotator", "ana")
    assert first.stdout.startswith(f"wrote {out}: 1 score edits") and not first.stderr
    again = calibrate("export", "inspect", str(log), "--out", str(out), "--annotator", "bob")
    assert again.stdout.startswith(f"replaced {out}: 1 score edits"), again.stdout
    assert " ".join(again.stderr.split()) == (f"the earlier {out} is now {log} with these edits (to add edits to a log "
                                              f"exported before, give it as LOG: export inspect {out} --out {out})")
    assert [s.id for s in read_eval_log(str(out)).samples if s.scores[SCORER].history] == [2], "ana's edit is gone"
    onto = calibrate("export", "inspect", str(out), "--out", str(out), "--annotator", "ana")
    assert onto.stdout.startswith(f"replaced {out}: 1 score edits") and not onto.stderr
    assert [s.id for s in read_eval_log(str(out)).samples if s.scores[SCORER].history] == [1, 2]

    def fails_half_way(log, location, *args, **kwargs):
        Path(location).write_bytes(b"PK half an archive")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(inspect_ai.log, "write_eval_log", fails_half_way)
    written = out.read_bytes()
    failed = calibrate("export", "inspect", str(log), "--out", str(out), "--annotator", "bob", ok=False)
    assert failed.exit_code == 1 and str(out) in failed.output, failed.output
    assert out.read_bytes() == written and sorted(tmp_path.glob("*reviewed*")) == [out], "as it was, nothing beside it"


def test_an_edited_score_without_its_original_is_refused(log, calibrate, tmp_path):
    from inspect_ai.log import ProvenanceData
    from inspect_ai.scorer import ScoreEdit

    def rescored_by_hand(log):  # as inspect's edit_score leaves a score it created: only the edit in its history
        score = log.samples[1].scores[SCORER]
        score.value = "C"
        score.history = [ScoreEdit(value="C", provenance=ProvenanceData(author="ana"))]
    edited = rewrite(log, tmp_path / "edited.eval", rescored_by_hand)
    result = calibrate("import", "inspect", str(edited), ok=False)
    assert result.exit_code == 1 and (f"{edited}:sample 2: the score was edited (by ana) and its history keeps no "
                                      "original score: the scorer's judgment cannot be told from people's edits") \
        in result.output
    assert counts(calibrate.db) == (0, 0, 0)
    assert "11 judgments added" in calibrate("import", "inspect", str(edited), "--skip-bad").output


def test_an_edit_to_a_value_the_scorer_never_gives_is_refused(log, calibrate, tmp_path):
    from inspect_ai.log import ProvenanceData, edit_score
    from inspect_ai.scorer import ScoreEdit

    def partial_credit(log):  # as Inspect's viewer edits a score: P, on a grader of C or I
        edit_score(log, 6, SCORER, ScoreEdit(value="P", provenance=ProvenanceData(author="zoe", reason="partial")))
    edited = rewrite(log, tmp_path / "p.eval", partial_credit)
    result = calibrate("import", "inspect", str(edited), ok=False)
    assert result.exit_code == 1 and (f"{edited}:sample 6: zoe's edit gives the value 'P', which is not one of the "
                                      "scorer's values (C, I)") in result.output
    assert counts(calibrate.db) == (0, 0, 0)

    def partial_overturned(log):  # the grader's own P, edited to C: P is one of the scorer's values
        log.samples[0].scores[SCORER].value = "P"
        edit_score(log, 1, SCORER, ScoreEdit(value="C", provenance=ProvenanceData(author="ana")))
    calibrate("import", "inspect", str(rewrite(log, tmp_path / "overturned.eval", partial_overturned)))
    assert Store(calibrate.db).data_tasks() == [(TASK, "en", "inspect", ("C", "P", "I"))]


def test_an_older_reviewed_log_leaves_a_persons_newer_decision_in_force(log, calibrate, tmp_path):
    from datetime import UTC, datetime

    from inspect_ai.log import ProvenanceData, edit_score
    from inspect_ai.scorer import ScoreEdit

    calibrate("import", "inspect", str(log))
    calibrate("import", "labels", str(write_labels(tmp_path / "s1.csv", {"1": "C"}, "ana", {"1": "looks fine"})))
    calibrate("export", "inspect", str(log), "--out", str(tmp_path / "r1.eval"), "--annotator", "ana")
    calibrate("import", "labels", str(write_labels(tmp_path / "s2.csv", {"1": "I", "2": "I"}, "ana")))  # she changes her mind

    def in_force():
        store = Store(calibrate.db)
        try:
            return sorted(store.labels_in_force())
        finally:
            store.close()
    before = counts(calibrate.db)
    result = calibrate("import", "inspect", str(tmp_path / "r1.eval"))
    assert "0 judgments added, 0 skipped" in result.stdout, "her older decision is in the history already"
    assert in_force() == [(1, "ana", "I"), (2, "ana", "I")] and counts(calibrate.db) == before

    def reviewed_long_ago(log):  # an edit made in Inspect's viewer before her decisions here
        edit_score(log, 2, SCORER, ScoreEdit(value="C", provenance=ProvenanceData(
            author="ana", reason="fine", timestamp=datetime(2020, 1, 1, tzinfo=UTC))))
    old = rewrite(log, tmp_path / "old.eval", reviewed_long_ago)
    result = calibrate("import", "inspect", str(old))
    assert "0 judgments added, 1 older label not in force, 0 skipped" in result.stdout
    assert ("1 label older than the person's decision in force on the item (its time says so: is the file older than "
            "those decisions?): kept in the history, the newer decision stays in force") in result.stderr
    assert in_force() == [(1, "ana", "I"), (2, "ana", "I")]
    assert "0 judgments added, 0 skipped" in calibrate("import", "inspect", str(old)).stdout


# -- bad input ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("content", "said"), [
    (b"not a log\n", "not an Inspect log ("), (b'{"eval": 1}', "not an Inspect log ("),
    (b"PK\x03\x04 not a zip either", "an .eval log that cannot be read: damaged or cut short ("),
    (b"", "the file is empty")], ids=["text", "other-json", "broken-zip", "empty"])
def test_a_file_that_is_not_an_inspect_log_is_refused(calibrate, tmp_path, content, said):
    path = tmp_path / ("x.json" if content.startswith(b"{") else "x.eval")
    path.write_bytes(content)
    result = calibrate("import", "inspect", str(path), ok=False)
    assert result.exit_code == 1 and f"Error: {path}: {said}" in result.output
    assert not calibrate.db.exists() or counts(calibrate.db) == (0, 0, 0)


def test_a_damaged_sample_in_the_archive_stops_the_import(log, calibrate, tmp_path):
    damaged = tmp_path / "damaged.eval"
    with zipfile.ZipFile(log) as source, zipfile.ZipFile(damaged, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info.filename, b'{"id": 5, "epoch": "one"' if info.filename == "samples/5_epoch_1.json" else data)
    result = calibrate("import", "inspect", str(damaged), ok=False)
    assert result.exit_code == 1 and f"{damaged}:samples/5_epoch_1.json: not a sample inspect wrote" in result.output
    assert counts(calibrate.db) == (0, 0, 0)


def test_a_log_with_no_scores_is_refused(log, calibrate, tmp_path):
    def unscored(log):
        log.results = None
        for sample in log.samples:
            sample.scores = None
    bare = rewrite(log, tmp_path / "bare.eval", unscored)
    result = calibrate("import", "inspect", str(bare), ok=False)
    assert result.exit_code == 1 and f"{bare}: no sample has a score; score the log first" in result.output


def test_a_cancelled_or_failed_eval_says_how_much_of_the_dataset_it_scored(log, calibrate, tmp_path):
    def cancelled(log):  # as a SIGINT leaves it: samples not started are missing, running ones cancelled
        log.status = "cancelled"
        log.samples = log.samples[:8]
        for sample in log.samples[6:]:
            sample.error = EvalError(message='CancelledError("Cancelled via cancel scope 7f57 by <Task cancelling '
                                             "name='inspect_ai._util.asyncfiles.with_async_fs.<locals>.wrapper'>\")",
                                     traceback="", traceback_ansi="")
    stopped = rewrite(log, tmp_path / "cancelled.eval", cancelled)
    result = calibrate("import", "inspect", str(stopped), ok=False)
    assert result.exit_code == 1 and f"{stopped}: the eval was cancelled: 6 of 12 samples scored" in result.stderr
    assert (f"{stopped}:sample 7: the sample was cancelled before it was scored; nothing was imported"
            in result.output) and "CancelledError" not in result.output
    skipped = calibrate("import", "inspect", str(stopped), "--skip-bad")
    assert "the eval was cancelled: 6 of 12 samples scored" in skipped.stderr and "6 items added" in skipped.stdout

    def failed(log):
        log.status, log.error = "error", EvalError(message="RuntimeError('solver exploded')\nat line 3", traceback="",
                                                   traceback_ansi="")
        log.samples[0].scores[SCORER].value = float("nan")  # a sample the scorer left unscored is not scored
    broken = rewrite(log, tmp_path / "error.eval", failed)
    assert (f"{broken}: the eval ended in an error (RuntimeError('solver exploded')): 11 of 12 samples scored"
            in calibrate("import", "inspect", str(broken)).stderr)


def test_a_sample_with_an_error_stops_the_import_or_is_skipped(log, calibrate, tmp_path):
    def fail(log):
        log.samples[3].error = EvalError(message="RuntimeError: the sandbox died\nat line 3", traceback="",
                                         traceback_ansi="")
    failed = rewrite(log, tmp_path / "failed.eval", fail)
    result = calibrate("import", "inspect", str(failed), ok=False)
    assert result.exit_code == 1
    assert (f"{failed}:sample 4: the sample ended in an error (RuntimeError: the sandbox died); nothing was "
            "imported") in result.output
    assert counts(calibrate.db) == (0, 0, 0)
    skipped = calibrate("import", "inspect", str(failed), "--skip-bad")
    assert f"skipped {failed}:sample 4: the sample ended in an error" in skipped.stderr
    assert "11 items added" in skipped.stdout


def test_unknown_score_values_are_named_by_log_and_sample(log, calibrate, tmp_path):
    odd = rewrite(log, tmp_path / "odd.eval", with_values({5: {"x": 1}, 6: 7, 7: True}))
    result = calibrate("import", "inspect", str(odd), "--skip-bad")
    assert f"skipped {odd}:sample 5: score value {{'x': 1}} is not one calibrate reads" in result.stderr
    assert f"skipped {odd}:sample 6: score value 7 is not one calibrate reads" in result.stderr
    assert (f"skipped {odd}:sample 7: score value True is True/False, but the scorer's other values are C/I "
            "letters (C, I)") in result.stderr
    assert "9 items added" in result.stdout


def test_several_scorers_need_one_chosen_and_a_scorer_without_grader_is_imported_without_prompt(log, calibrate,
                                                                                                 tmp_path):
    def add_exact(log):
        for sample in log.samples:
            sample.scores["exact"] = Score(value="C" if sample.id % 2 else "I", explanation="compared as text")
    two = rewrite(log, tmp_path / "two.eval", add_exact)
    refused = calibrate("import", "inspect", str(two), ok=False)
    assert (f"{two}: the log has scores from 2 scorers (model_graded_qa, exact); choose one with "
            "--scorer") in refused.output
    unknown = calibrate("import", "inspect", str(two), "--scorer", "nope", ok=False)
    assert "no scores from scorer 'nope'; the log has model_graded_qa, exact" in unknown.output
    result = calibrate("import", "inspect", str(two), "--scorer", "exact")
    assert "scorer exact is not model-graded (its scores keep no grader messages)" in result.stderr
    store = Store(calibrate.db)
    judgments = list(store.judgments())
    assert {(j.judge_name, j.prompt, j.raw_output) for j in judgments} == {("exact", None, "compared as text")}
    store.close()
    calibrate("import", "inspect", str(two), "--scorer", SCORER)
    assert "judge exact" not in calibrate("render", "1").stderr


def test_an_unscored_sample_is_an_unparsed_verdict(log, calibrate, tmp_path):
    def grader_failed(log):
        score = log.samples[0].scores[SCORER]
        score.value, score.reason = float("nan"), "grader_failed"
    failed = rewrite(log, tmp_path / "nan.eval", grader_failed)
    calibrate("import", "inspect", str(failed))
    store = Store(calibrate.db)
    judgment = store.judgments_for_item(1)[0]
    assert (judgment.status, judgment.unparsed_reason) == ("unparsed", "the scorer left this sample unscored (grader_failed)")
    store.close()
    write_labels(tmp_path / "l.csv", {"1": "I"}, "ana")
    calibrate("import", "labels", str(tmp_path / "l.csv"))
    calibrate("export", "inspect", str(failed), "--out", str(tmp_path / "out.eval"), "--annotator", "ana")
    score = read_eval_log(str(tmp_path / "out.eval")).samples[0].scores[SCORER]
    assert score.value == "I" and math.isnan(score.history[0].value)


def test_a_sample_without_a_score_is_an_unparsed_verdict(log, calibrate, tmp_path):
    def some_unscored(log):  # a scorer that returned None for samples 3 and 9, an empty value for sample 5
        for sample in log.samples:
            if sample.id in (3, 9):
                sample.scores = {}
        log.samples[4].scores[SCORER].value = ""
    partial = rewrite(log, tmp_path / "partial.eval", some_unscored)
    assert "12 items added" in calibrate("import", "inspect", str(partial)).output
    store = Store(calibrate.db)
    assert [(j.status, j.unparsed_reason) for n in (3, 5) for j in store.judgments_for_item(n)] == [
        ("unparsed", f"scorer {SCORER} gave this sample no score"), ("unparsed", "the scorer left this sample unscored")]
    assert store.data_tasks() == [(TASK, "en", "inspect", ("C", "I"))]
    store.close()
    calibrate("import", "labels", str(write_labels(tmp_path / "l.csv", {"3": "I", "5": "I"}, "ana")))
    out = calibrate("export", "inspect", str(partial), "--out", str(tmp_path / "out.eval"), "--annotator", "ana").output
    assert "1 score edits (1 change the value, 0 confirm it)" in out and "1 without a score to edit" in out
    assert read_eval_log(str(tmp_path / "out.eval")).samples[4].scores[SCORER].value == "I"


def test_without_inspect_ai_the_message_says_how_to_install_it(log, calibrate, monkeypatch):
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    result = calibrate("import", "inspect", str(log), ok=False)
    assert result.exit_code == 1 and "pip install 'calibrate[inspect]'" in result.output
    checkout = str(Path(__file__).resolve().parents[1])
    loaded = subprocess.run([sys.executable, "-c", "import sys, calibrate.cli, calibrate.formats.inspect, calibrate.merge; "
                             "print('inspect_ai' in sys.modules)"], capture_output=True, text=True,
                            env={"PYTHONPATH": checkout, "PATH": "/usr/bin:/bin"})
    assert loaded.stdout.strip() == "False", loaded.stderr


# -- Inspect's value conventions -------------------------------------------------------------------


def test_true_false_values_round_trip_as_booleans(log, calibrate, tmp_path):
    booleans = rewrite(log, tmp_path / "bool.eval", with_values({k: GRADER[k - 1] == "C" for k in range(1, 13)}))
    calibrate("import", "inspect", str(booleans))
    assert Store(calibrate.db).data_tasks() == [(TASK, "en", "inspect", ("True", "False"))]
    write_labels(tmp_path / "l.csv", {"2": "True", "3": "False"}, "ana")
    calibrate("import", "labels", str(tmp_path / "l.csv"))
    calibrate("export", "inspect", str(booleans), "--out", str(tmp_path / "out.json"), "--annotator", "ana")
    back = read_eval_log(str(tmp_path / "out.json")).samples
    assert [s.scores[SCORER].value for s in back[:4]] == [True, True, False, True]
    assert back[1].scores[SCORER].history[-1].value is True and back[0].scores[SCORER].history == []


def test_numbers_and_text_become_label_sets(log, calibrate, tmp_path):
    numbers = rewrite(log, tmp_path / "n.eval", with_values({k: (1, 0, 0.5)[k % 3] for k in range(1, 13)}))
    calibrate("import", "inspect", str(numbers))
    store = Store(calibrate.db)
    assert store.data_tasks() == [(TASK, "en", "inspect", ("1", "0.5", "0"))]
    store.close()
    write_labels(tmp_path / "l.csv", {"1": "0.5", "3": "1"}, "ana")
    calibrate("import", "labels", str(tmp_path / "l.csv"))
    calibrate("export", "inspect", str(numbers), "--out", str(tmp_path / "out.eval"), "--annotator", "ana")
    values = [s.scores[SCORER].value for s in read_eval_log(str(tmp_path / "out.eval")).samples[:3]]
    assert values == [0.5, 0.5, 1] and isinstance(values[2], int)
    scores = calibrate("scores", ok=False)
    assert scores.exit_code == 1 and (f"no judged items with right/wrong verdicts to score; {TASK} left out: its values "
                                      "(1, 0.5, 0) say more than right or wrong (see `calibrate report`)") in scores.output

    text = rewrite(log, tmp_path / "t.eval", with_values({k: ("good", "bad", "C")[k % 3] for k in range(1, 13)}))
    other = Calibrate(tmp_path / "other.db")
    other("import", "inspect", str(text))
    store = Store(other.db)
    assert store.data_tasks() == [(TASK, "en", "inspect", ("C", "bad", "good"))]
    store.close()


def test_a_later_log_with_other_values_of_the_same_convention_adds_labels(log, calibrate, tmp_path):
    calibrate("import", "inspect", str(log))
    partial = rewrite(log, tmp_path / "p.eval", with_values({1: "P"}))
    calibrate("import", "inspect", str(partial), "--update")
    assert Store(calibrate.db).data_tasks() == [(TASK, "en", "inspect", ("C", "P", "I"))]
    booleans = rewrite(log, tmp_path / "b.eval", with_values({k: True for k in range(1, 13)} | {1: False}))
    refused = calibrate("import", "inspect", str(booleans), "--update", ok=False)
    assert f"{TASK} (en) holds scores valued C, P, I from an earlier log; this log's are True, False" in refused.output


def test_epochs_after_the_first_are_their_own_items(log, calibrate, tmp_path):
    def two_epochs(log):
        log.eval.config.epochs = 2
        log.samples += [s.model_copy(update={"epoch": 2, "uuid": f"{s.uuid}-2"}, deep=True) for s in log.samples]
    epochs = rewrite(log, tmp_path / "epochs.eval", two_epochs)
    calibrate("import", "inspect", str(epochs))
    store = Store(calibrate.db)
    ids = sorted(item.source_id for item in store.items())
    store.close()
    assert ids == sorted([str(k) for k in range(1, 13)] + [f"{k}#2" for k in range(1, 13)])
    write_labels(tmp_path / "l.csv", {"2#2": "C"}, "ana")
    calibrate("import", "labels", str(tmp_path / "l.csv"))
    calibrate("export", "inspect", str(epochs), "--out", str(tmp_path / "out.eval"), "--annotator", "ana")
    back = {(s.id, s.epoch): s.scores[SCORER].value for s in read_eval_log(str(tmp_path / "out.eval")).samples}
    assert (back[(2, 1)], back[(2, 2)]) == ("I", "C")
    assert "0 items added, 24 already present" in calibrate("import", "inspect", str(epochs)).output


def test_a_sample_id_that_looks_like_another_samples_epoch_is_its_own_item(log, tmp_path):
    def clashing(log):  # sample "1#2" beside sample 1's second epoch, with the same content (legal in Inspect)
        log.eval.config.epochs = 2
        log.samples = log.samples[:2]
        log.samples[1].id, log.samples[1].input = "1#2", log.samples[0].input
        log.samples[1].output, log.samples[1].target = log.samples[0].output, log.samples[0].target
        log.samples += [s.model_copy(update={"epoch": 2, "uuid": f"{s.uuid}-2"}, deep=True) for s in log.samples]
    ids = rewrite(log, tmp_path / "ids.eval", clashing)
    calibrate = Calibrate(tmp_path / "ids.db")
    assert "4 items added, 0 already present" in calibrate("import", "inspect", str(ids)).output
    store = Store(calibrate.db)
    assert sorted(item.source_id for item in store.items()) == ["1", "1#2", "1#2#2", "1#epoch2"]
    store.close()
    calibrate("import", "labels", str(write_labels(tmp_path / "l.csv", {"1#2": "I"}, "ana")))
    out = calibrate("export", "inspect", str(ids), "--out", str(tmp_path / "out.eval"), "--annotator", "ana").output
    assert "1 score edits" in out
    edited = [(s.id, s.epoch) for s in read_eval_log(str(tmp_path / "out.eval")).samples if s.scores[SCORER].history]
    assert edited == [("1#2", 1)]


# -- export choices ---------------------------------------------------------------------------------


def test_gold_export_writes_the_majority_and_leaves_ties(log, calibrate, tmp_path):
    calibrate("import", "inspect", str(log))
    for name, labels in (("ana", {"1": "I", "2": "C"}), ("bo", {"1": "I", "2": "I"}), ("cy", {"1": "C"})):
        calibrate("import", "labels", str(write_labels(tmp_path / f"{name}.csv", labels, name, {"1": f"{name} saw it"})))
    out = calibrate("export", "inspect", str(log), "--out", str(tmp_path / "gold.eval"), "--gold").output
    assert "1 score edits (1 change the value, 0 confirm it)" in out and "left as they were: 10 unlabelled, 1 tied" in out
    first, second = read_eval_log(str(tmp_path / "gold.eval")).samples[:2]
    edit = first.scores[SCORER].history[-1]
    assert (first.scores[SCORER].value, edit.provenance.author) == ("I", "ana, bo")
    assert edit.provenance.reason == "ana saw it\nbo saw it"
    assert edit.provenance.metadata["calibrate"]["labels"] == {"ana": "I", "bo": "I", "cy": "C"}
    assert second.scores[SCORER].history == []
    usage = calibrate("export", "inspect", str(log), "--out", str(tmp_path / "x.eval"), ok=False)
    assert usage.exit_code == 2 and "give --annotator NAME or --gold" in usage.output
    wrong = calibrate("export", "inspect", str(log), "--out", str(tmp_path / "x.txt"), "--gold", ok=False)
    assert wrong.exit_code == 2 and "Invalid value for '--out'" in wrong.output
    assert "an Inspect log ends in .eval or .json" in wrong.output
    other = calibrate("export", "inspect", str(log), "--out", str(tmp_path / "x.eval"), "--gold", "--lang", "zh",
                      ok=False)
    assert "none of its samples is in" in other.output and "name the --lang and --system" in other.output
    assert not (tmp_path / "x.eval").exists()


def test_merge_brings_the_tasks_of_the_other_database(log, tmp_path):
    offline, main = Calibrate(tmp_path / "offline.db"), Calibrate(tmp_path / "main.db")
    offline("import", "inspect", str(log))
    offline("import", "labels", str(write_labels(tmp_path / "l.csv", {"1": "I"}, "ana")))
    main("import", "jsonl", str(write_jsonl(tmp_path / "c3.jsonl")), "--task", "c3/lexical", "--lang", "en")
    assert "12 items, 12 judgments, 1 annotation added" in main("merge", str(offline.db)).output
    assert Store(main.db).data_tasks() == [(TASK, "en", "inspect", ("C", "I"))]
    assert "ana" in main("report").output


def write_jsonl(path: Path) -> Path:
    path.write_text(json.dumps({"id": 1, "content": "c", "notation": "n", "response": "r"}) + "\n", encoding="utf-8")
    return path


# -- the kind -------------------------------------------------------------------------------------------


def test_inspect_kinds_order_labels_and_say_when_they_are_right_or_wrong():
    from calibrate.kinds import inspect_labels

    assert inspect_labels(["I"]) == ("C", "I") and inspect_labels(["N", "P", "C"]) == ("C", "P", "I", "N")
    assert inspect_labels(["False"]) == ("True", "False")
    assert inspect_labels(["0.25"]) == ("1", "0.25", "0") and inspect_labels(["b", "a"]) == ("a", "b")
    assert inspect_labels(["1", "2", "3"]) == ("1", "2", "3"), "text that is not a number from 0 to 1 stays text"
    letters = kind_for("inspect_score", ("C", "I"))
    assert letters.positive == "C" and letters.reads_yes_no and letters.flip("C") == "I" and letters.right_or_wrong
    assert not letters.parses_output and letters.parse("GRADE: C").reason.startswith("an Inspect score is one of")
    assert not kind_for("inspect_score", ("C", "P", "I")).right_or_wrong
    assert kind_for("inspect_score", ("1", "0")).right_or_wrong and kind_for("inspect_score", ("1", "0")).positive == "1"
    assert kind_for("yes_no_en").right_or_wrong and not kind_for("rubric_scores").right_or_wrong


def test_a_note_that_argued_for_a_label_the_person_then_changed_is_not_the_edits_reason(log, calibrate, tmp_path):
    calibrate("import", "inspect", str(log))
    store = Store(calibrate.db)
    (item,) = [item for item in store.items() if item.source_id == "1"]
    first = "C" if GRADER[0] == "I" else "I"
    store.annotate(item.id, "ana", "label", label=first, note="looks fine")
    store.annotate(item.id, "ana", "label", label=GRADER[0], note="on reflection, the grader is right")
    store.close()
    edited = tmp_path / "reviewed.eval"
    calibrate("export", "inspect", str(log), "--out", str(edited), "--annotator", "ana")
    (sample,) = [s for s in read_eval_log(str(edited)).samples if s.id == 1 and s.epoch == 1]
    edit = sample.scores[SCORER].history[-1]
    assert edit.provenance.reason == "on reflection, the grader is right"
