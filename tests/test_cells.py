"""Cells and `--by`: one list of values, one parser for report, scores and trust, and every
value each command accepts works (trust cut by system gives a row per system)."""

from __future__ import annotations

import json

import pytest

from calibrate.cells import BY_CHOICES, CellKinds, ReportError, parse_by
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.conftest import Calibrate


def two_systems_db(path) -> None:
    """c3/lexical items of systems alpha (30) and beta (20), judged by gpt with a stored
    confidence and labelled by ana: alpha's verdicts all right, beta's right on 10 of 20."""
    store = Store(path)
    ids = {}
    for system, n in (("alpha", 30), ("beta", 20)):
        ids[system], _ = store.add_items([NewItem("c3/lexical", "en", f"{system}-{k}", {"content": str(k), "notation": "n",
                                                                                      "response": "r"}, system=system)
                                          for k in range(n)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict", verdict="yes",
                                     confidence=0.9) for system in ids for i in ids[system]])
    for system in ids:
        for k, item_id in enumerate(ids[system]):
            store.annotate(item_id, "ana", "label", label="yes" if system == "alpha" or k < 10 else "no")
    store.close()


def test_parse_by_takes_every_value_and_refuses_the_rest():
    assert parse_by(" system , lang") == ("system", "lang")
    assert parse_by(",".join(BY_CHOICES)) == BY_CHOICES
    for bad in ("judge", "", "task,task", "task,model"):
        with pytest.raises(ReportError, match="--by takes system, task, lang"):
            parse_by(bad)


def test_trust_by_system_gives_a_row_per_system(tmp_path):
    path = tmp_path / "t.db"
    two_systems_db(path)
    run = Calibrate(path)
    rows = json.loads(run("trust", "--by", "system", "--min-labels", "22", "--format", "json").output)
    assert [(r["system"], r["task"], r["lang"], r["n"]) for r in rows] == [("alpha", "*", "*", 30), ("beta", "*", "*", 20)]
    alpha, beta = rows
    assert alpha["met"] is True and alpha["accepted"] == 30 and beta["met"] is False
    pooled = json.loads(run("trust", "--min-labels", "22", "--format", "json").output)
    assert [(r["system"], r["n"], r["met"]) for r in pooled] == [(None, 50, False)]
    table = run("trust", "--by", "system,task,lang").output
    assert "alpha" in table and "beta" in table and "c3/lexical" in table


def test_trust_by_system_leaves_a_judges_rubric_scores_out_instead_of_refusing_to_pool_them(tmp_path):
    """`trust` leaves scores out (no verdict to accept): a judge that also scored rubric items of
    a system still gets that system's row."""
    path = tmp_path / "t.db"
    two_systems_db(path)
    store = Store(path)
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", f"r{k}", {name: "x" for name in (
        "question", "content", "answer", "llm_answer", "llm_reasoning")}, system="alpha") for k in range(3)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="unparsed") for i in ids])
    store.close()
    out = Calibrate(path)("trust", "--by", "system", "--min-labels", "22", "--format", "json")
    rows = json.loads(out.stdout)
    assert [(r["system"], r["task"], r["lang"], r["n"]) for r in rows] == [("alpha", "*", "*", 30), ("beta", "*", "*", 20)]


@pytest.mark.parametrize("command", ["report", "scores", "trust"])
def test_each_command_refuses_a_bad_by_with_the_valid_values(demo_db, command):
    result = Calibrate(demo_db)(command, "--by", "task,judge", ok=False)
    assert result.exit_code == 2
    assert "Invalid value for '--by': takes system, task, lang or a comma-separated combination" in result.output
    assert "not 'task,judge'" in result.output


@pytest.mark.parametrize("command", ["report", "trust"])
def test_pooling_unlike_kinds_by_system_is_refused_with_advice_that_works(labelled_demo_db, command):
    refused = Calibrate(labelled_demo_db)(command, "--by", "system", ok=False)
    assert refused.exit_code == 1 and "use --by system,task" in refused.output and "system,task,lang" not in refused.output
    Calibrate(labelled_demo_db)(command, "--by", "system,task", "--format", "json")


def test_trust_checks_pooling_only_on_the_judge_it_is_asked_about(labelled_demo_db):
    """demo-judge-2 never judged a rubric item (demo-judge did): its cells by language hold
    yes/no verdicts alone."""
    run = Calibrate(labelled_demo_db)
    assert "would pool" in run("trust", "--by", "lang", ok=False).output
    rows = json.loads(run("trust", "--judge", "demo-judge-2", "--by", "lang", "--format", "json").output)
    assert {(r["judge"], r["task"], r["lang"]) for r in rows} == {("demo-judge-2", "*", "en"), ("demo-judge-2", "*", "zh")}


def test_a_pooled_cell_shows_each_label_in_its_first_members_words_from_the_first_lookup():
    """English yes/no and Chinese 是/否 pool into one cell when --by leaves out task and
    language: 是 is shown as yes even when it is the first label looked up for its pair."""
    kinds = CellKinds(TemplateSet(), ())
    assert kinds.label("c3/lexical", "en", "yes") == "yes"
    assert kinds.label("c3/semantic", "zh", "是") == "yes"
    assert kinds.label("c3/semantic", "zh", "否") == "no"


def test_pooling_two_label_sets_is_refused_naming_their_labels():
    """Two label sets (BoolQ's True/False, CB's three labels) are the same kind of verdict with
    different labels: the refusal says so, not that they are different kinds."""
    kinds = CellKinds(TemplateSet(), ())
    kinds.key("superglue/boolq", "en")
    with pytest.raises(ReportError) as refused:
        kinds.key("superglue/cb", "en")
    assert str(refused.value) == (
        "the cell of all items would pool label_set (superglue/boolq, en) with label_set (superglue/cb, en): their "
        "labels differ (True, False against entailment, contradiction, neutral); use --by task")
