"""The agreement report through the CLI: lines per annotator and against the gold label, ceilings, formats, cells."""

from __future__ import annotations

import csv
import html
import io
import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibrate.model import NewItem, NewJudgment
from calibrate.stats.agreement import two_raters
from calibrate.store import Store
from tests.conftest import Calibrate


def test_report_json_judge_vs_each_annotator_and_the_gold(labelled_db):
    path, verdicts, humans = labelled_db
    report = json.loads(Calibrate(path)("report", "--format", "json").output)
    (cell,) = report["cells"]
    assert (cell["task"], cell["lang"], cell["judge"], cell["unparsed"]) == ("c3/lexical", "en", "gpt", 1)
    lines = {line["versus"]: line for line in cell["lines"]}
    assert set(lines) == {"a", "b", "c", "gold"}
    expected = two_raters(verdicts[1:], humans["a"][1:], ["yes", "no"])
    assert lines["a"]["n"] == 59
    assert lines["a"]["stats"]["kappa"]["value"] == pytest.approx(expected.kappa.value)
    assert lines["a"]["kappa"] == pytest.approx(expected.kappa.value)
    assert lines["a"]["kappa_low"] < lines["a"]["kappa"] < lines["a"]["kappa_high"]
    assert cell["ceiling"]["human_statistic"] == "Krippendorff's alpha (nominal)"
    assert cell["ceiling"]["n_items"] == 59 and lines["a"]["ceiling_items"] == 59
    assert lines["a"]["verdict"].endswith(" ceiling") and lines["a"]["ceiling_verdict"].endswith("the human ceiling")
    assert cell["alternative_annotator_test"]["ran"] is True
    assert 0 <= cell["alternative_annotator_test"]["winning_rate"] <= 1
    assert 0 <= cell["alternative_annotator_test"]["advantage_probability"] <= 1


def test_unparsed_as_disagreement(labelled_db):
    path, *_ = labelled_db
    run = Calibrate(path)
    normal = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"][0]
    strict = json.loads(run("report", "--format", "json", "--unparsed-as-disagreement").output)["cells"][0]["lines"][0]
    assert strict["n"] == normal["n"] + 1
    assert strict["stats"]["labels"] == ["yes", "no"], "an unparsed verdict is never an extra category"
    assert strict["agreement"] < normal["agreement"]
    assert normal["unparsed"] == 1 and normal["kappa_worst"] < normal["kappa"] < normal["kappa_best"]


def test_two_annotators_give_a_cohen_kappa_ceiling(tmp_path):
    store = Store(tmp_path / "two.db")
    ids, _ = store.add_items([NewItem("superglue/rte", "en", str(k), {"premise": "p", "hypothesis": "h"}) for k in range(10)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="m", judge_key="k", status="verdict", verdict="entailment") for i in ids])
    for n, i in enumerate(ids):
        store.annotate(i, "x", "label", label="entailment" if n < 6 else "not_entailment")
        store.annotate(i, "y", "label", label="entailment" if n < 5 else "not_entailment")
    store.close()
    cell = json.loads(Calibrate(tmp_path / "two.db")("report", "--format", "json").output)["cells"][0]
    x = ["entailment"] * 6 + ["not_entailment"] * 4
    y = ["entailment"] * 5 + ["not_entailment"] * 5
    assert cell["ceiling"]["humans"]["value"] == pytest.approx(two_raters(x, y).kappa.value)
    assert cell["ceiling"]["human_statistic"] == "Cohen's kappa" and cell["ceiling"]["n_items"] == 10
    assert cell["alternative_annotator_test"]["ran"] is False
    assert "needs 3 or more annotators" in cell["alternative_annotator_test"]["reason"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv", "html"])
def test_every_format_works_on_the_demo(demo_db, tmp_path, fmt):
    run = Calibrate(demo_db)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(r) for r in [
        {"task": "superglue/boolq", "lang": "en", "source_id": "0", "annotator": "ana", "label": "True"},
        {"task": "superglue/boolq", "lang": "en", "source_id": "1", "annotator": "ana", "label": "False"},
        {"task": "c3/heterograph", "lang": "en", "system": "sdm-alpha", "source_id": "ambiguity/phonological/heterograph/0",
         "annotator": "ana", "label": "yes"},
    ]) + "\n")
    run("import", "labels", str(labels))
    out = tmp_path / f"report.{fmt}"
    run("report", "--format", fmt, "--out", str(out))
    text = out.read_text(encoding="utf-8")
    assert "superglue/boolq" in text
    if fmt == "json":
        json.loads(text)
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0][:6] == ["system", "task", "lang", "judge", "versus", "n"] and "kappa_low" in rows[0]
    if fmt == "html":
        assert text.startswith("<!doctype html>") and "<svg" in text
        assert "http://" not in text.replace("http://www.w3.org", "") and "<script" not in text and "<link" not in text
    if fmt == "table":
        assert "κ [95% CI]" in text and "●" in text


def test_rubric_cells_are_measured_on_scores_not_as_categories(tmp_path):
    store = Store(tmp_path / "rubric.db")
    fields = {"question": "q", "content": "c", "answer": "a", "llm_answer": "x", "llm_reasoning": "r"}
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", str(k), fields) for k in range(6)], with_ids=True)
    scores = lambda a, r: json.dumps({"score_answer": a, "score_reasoning": r}, sort_keys=True)  # noqa: E731
    store.add_judgments([NewJudgment(item_id=i, judge_name="ds", judge_key="k", status="verdict", verdict=scores(10.0 * k, 50.0))
                         for k, i in enumerate(ids)])
    for name, shift in (("a", 0), ("b", 5), ("c", 10)):
        for k, i in enumerate(ids):
            store.annotate(i, name, "label", label=scores(10.0 * k + shift, 40.0 + k))
    store.close()
    (cell,) = json.loads(Calibrate(tmp_path / "rubric.db")("report", "--format", "json").output)["cells"]
    line = next(line for line in cell["lines"] if line["versus"] == "b")
    assert line["scores"]["score_answer"]["spearman"]["value"] == pytest.approx(1.0)
    assert line["scores"]["score_answer"]["mae"]["value"] == pytest.approx(5.0)
    gold = next(line for line in cell["lines"] if line["versus"] == "gold")
    assert gold["n"] == 6 and cell["gold_ties"] == 0, "three people's scores have a mean, b's here"
    assert gold["scores"]["score_answer"]["mae"]["value"] == pytest.approx(5.0)
    ceiling = cell["ceiling"]
    assert (ceiling["human_statistic"], ceiling["n_items"], ceiling["annotators"]) == ("scores", 6, 3), \
        "score pairs get the score statistics as their ceiling, not kappa"
    # people: pairs (a, b), (a, c), (b, c) differ by 5, 10, 5 on the answer, never on the reasoning
    assert ceiling["humans"]["score_answer"]["mae"]["value"] == pytest.approx(20 / 3)
    assert ceiling["humans"]["score_reasoning"]["mae"]["value"] == 0
    # the judge against each person: answers 0, 5, 10 off; reasoning 50 against 40 + k, k = 0..5
    assert ceiling["judge"]["score_answer"]["mae"]["value"] == pytest.approx(5.0)
    assert ceiling["judge"]["score_reasoning"]["mae"]["value"] == pytest.approx(7.5)
    assert all(ceiling[side]["score_answer"][stat]["ci_reason"].startswith("fewer than 10 items")
               for side in ("humans", "judge") for stat in ("spearman", "mae", "weighted_kappa", "pass_fail_kappa")), \
        "18 pairs of the judge's from 6 items: an interval needs 10 items, not 10 pairs"
    assert ceiling["notes"] == [], "no interval here, so no word on how intervals resample items"
    assert cell["alternative_annotator_test"]["reason"] == "the test compares categorical labels, not scores"


def two_scorers_db(path, judge=(10, 30, 50, 70, 90, None), ana=(20, 30, 40, 80, 90, 50),
                   bob=(20, 40, 50, 70, 100, 60)) -> None:
    """Rubric items the judge scored (None: unparsed) which ana and bob both scored; by default
    five the judge scored and one more unparsed, ana and bob differing on four of them."""
    store = Store(path)
    fields = {"question": "q", "content": "c", "answer": "a", "llm_answer": "x", "llm_reasoning": "r"}
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", str(k), fields) for k in range(len(judge))],
                             with_ids=True)
    scores = lambda a: json.dumps({"score_answer": float(a), "score_reasoning": float(a)}, sort_keys=True)  # noqa: E731
    store.add_judgments([NewJudgment(item_id=i, judge_name="ds", judge_key="k", status="verdict" if j is not None else
                                     "unparsed", verdict=scores(j) if j is not None else None, raw_output="…")
                         for i, j in zip(ids, judge, strict=True)])
    for name, given in (("ana", ana), ("bob", bob)):
        for i, score in zip(ids, given, strict=True):
            store.annotate(i, name, "label", label=scores(score))
    store.close()


def test_two_peoples_scores_give_a_mean_gold_and_a_ceiling_beside_the_judge(tmp_path):
    two_scorers_db(tmp_path / "r.db")
    run = Calibrate(tmp_path / "r.db")
    (cell,) = json.loads(run("report", "--format", "json").output)["cells"]
    gold = next(line for line in cell["lines"] if line["versus"] == "gold")
    # gold = the means 20, 35, 45, 75, 95: the judge is 10, 5, 5, 5, 5 off
    assert gold["n"] == 5 and cell["gold_ties"] == 0
    assert gold["scores"]["score_answer"]["mae"]["value"] == pytest.approx(6.0)
    ceiling = cell["ceiling"]
    assert (ceiling["n_items"], ceiling["annotators"]) == (5, 2)
    assert ceiling["notes"] == ["1 item with an unparsed judge verdict left out"], "5 items: no interval to explain"
    people, judge = ceiling["humans"]["score_answer"], ceiling["judge"]["score_answer"]
    assert people["mae"]["value"] == pytest.approx(8.0) and people["spearman"]["value"] == pytest.approx(1.0)
    assert (people["n"], people["items"], judge["n"], judge["items"]) == (5, 5, 10, 5), "two people: one pair per item"
    assert judge["mae"]["ci"] is None and judge["mae"]["ci_reason"].startswith("fewer than 10 items")
    assert judge["mae"]["value"] == pytest.approx(6.0), "the judge against ana (10, 0, 10, 10, 0) and bob (10, 10, 0, 0, 10)"
    rows = list(csv.DictReader(io.StringIO(run("report", "--format", "csv").output)))
    assert {(r["scores"], r["ceiling_items"], r["ceiling_statistic"], round(float(r["ceiling"]), 9)) for r in rows} == {
        ("score_answer", "5", "Spearman ρ", 1.0), ("score_reasoning", "5", "Spearman ρ", 1.0)}, "both rank the items alike"
    table = " ".join(run("report").output.split())
    assert "human ceiling on 5 items scored by 2 people: score_answer: people ρ 1.00" in table
    assert "MAE 8.00" in table and "tied" not in table
    assert "grouped jackknife" not in table, "no interval is shown (5 items): none resamples anything"


def test_a_ceiling_of_equal_scores_shows_no_interval_and_says_nothing_of_how_intervals_are_made(tmp_path):
    """Twelve items the judge and two people all scored 80: the correlations and κ are
    undefined, so no figure has an interval, and an undefined figure (—) is not run into the
    next score's name with another dash."""
    two_scorers_db(tmp_path / "equal.db", *([80] * 12 for _ in range(3)))
    table = " ".join(Calibrate(tmp_path / "equal.db")("report").output.split())
    assert "human ceiling on 12 items scored by 2 people: score_answer: people ρ —" in table
    assert "weighted κ —; score_reasoning: people ρ —" in table and "— —" not in table
    assert "grouped jackknife" not in table


def test_three_peoples_scores_give_a_ceiling_whose_figures_all_have_intervals_over_items(three_scorers_db):
    """The judge's pairs against each of three people, and the people's with each other, share
    items; every output gives their intervals, which resample items, and marks those simulated
    below 93 % at 12 items as approximate."""
    from calibrate.stats.simulated import simulated_score_coverage

    run = Calibrate(three_scorers_db)
    ceiling = json.loads(run("report", "--format", "json").output)["cells"][0]["ceiling"]
    people, judge = ceiling["humans"]["score_answer"], ceiling["judge"]["score_answer"]
    assert (people["n"], people["items"], judge["n"], judge["items"]) == (36, 12, 36, 12)
    assert all(side[stat]["ci"] is not None for side in (people, judge) for stat in
               ("spearman", "pearson", "kendall", "mae", "weighted_kappa")), (people, judge)
    assert people["shape"] == "skewed" and all(
        side[stat]["approximate"] == simulated_score_coverage(stat, 10, "skewed", clustered=True)
        for side in (people, judge) for stat in ("spearman", "weighted_kappa")), "the clustered table at 10 items"
    assert people["spearman"]["approximate"] is not None and people["weighted_kappa"]["approximate"] is not None
    table = " ".join(run("report").output.split())
    rho = lambda e: f"ρ {e['spearman']['value']:.2f} [{e['spearman']['ci'][0]:.2f}, {e['spearman']['ci'][1]:.2f}]~"  # noqa: E731
    assert f"people {rho(people)}" in table and f"the judge {rho(judge)}" in table
    rough = f"weighted κ covers about {round(people['weighted_kappa']['approximate'] * 100)} % here"
    assert f"(~ approximate intervals: ρ covers about {round(people['spearman']['approximate'] * 100)} % here, {rough})" \
        in table
    assert "intervals resample items (a grouped jackknife)" in table
    row = next(r for r in csv.DictReader(io.StringIO(run("report", "--format", "csv").output))
               if r["scores"] == "score_answer")
    assert float(row["ceiling_low"]) == pytest.approx(people["spearman"]["ci"][0], abs=1e-6)
    assert float(row["judge_on_shared_high"]) == pytest.approx(judge["spearman"]["ci"][1], abs=1e-6)
    assert row["judge_on_shared_approximate"] == str(judge["spearman"]["approximate"] or "")


def test_unparsed_options_apply_where_they_mean_something_and_say_where_not(tmp_path):
    two_scorers_db(tmp_path / "r.db")
    run = Calibrate(tmp_path / "r.db")
    for mode, why in (("as-negative", "scores have no negative label"),
                      ("as-disagreement", "no score counts as disagreeing with a person's")):
        (cell,) = json.loads(run("report", "--unparsed", mode, "--format", "json").output)["cells"]
        assert [line["n"] for line in cell["lines"]] == [5, 5, 5], "the unparsed item is left out"
        assert cell["unparsed_counted"] == f"left out: --unparsed {mode} does not apply here ({why})"
        assert f"1 of 6 verdicts unparsed, left out: --unparsed {mode} does not apply here" in \
            " ".join(run("report", "--unparsed", mode).output.split())
    store = Store(tmp_path / "cb.db")
    ids, _ = store.add_items([NewItem("superglue/cb", "en", str(k), {"premise": "p", "hypothesis": "h"})
                              for k in range(3)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="m", judge_key="k", status=status, verdict=verdict,
                                     raw_output="…") for i, (status, verdict) in
                         zip(ids, [("verdict", "entailment"), ("unparsed", None), ("unparsed", None)], strict=True)])
    for i, label in zip(ids, ["entailment", "contradiction", "neutral"], strict=True):
        store.annotate(i, "ana", "label", label=label)
    store.close()
    cb = Calibrate(tmp_path / "cb.db")
    (cell,) = json.loads(cb("report", "--unparsed", "as-negative", "--format", "json").output)["cells"]
    assert cell["lines"][0]["n"] == 1, "CB has no negative label: nothing is made 'entailment'"
    assert "(entailment, contradiction, neutral) have no negative one" in cell["unparsed_counted"]
    (cell,) = json.loads(cb("report", "--unparsed", "as-disagreement", "--format", "json").output)["cells"]
    stats = cell["lines"][0]["stats"]
    assert cell["lines"][0]["n"] == 3 and stats["agreement"]["value"] == pytest.approx(1 / 3)
    assert stats["labels"][-1] == "(unparsed)" and stats["table"][-1] == [0, 1, 1, 0], \
        "the judge's unparsed outputs disagree as an answer of their own, not as a CB label it never gave"
    assert stats["kappa"]["value"] == pytest.approx(0.25), "p_o 1/3, p_e 1/3 x 1/3: (1/3 - 1/9) / (1 - 1/9)"
    assert "κ between 0.25 (all wrong) and 1.00 (all right)" in " ".join(cb("report").output.split()), \
        "the worst case counts them as as-disagreement does"


def test_report_by_language_merges_tasks(labelled_db):
    path, *_ = labelled_db
    report = json.loads(Calibrate(path)("report", "--format", "json", "--by", "lang").output)
    assert [(c["task"], c["lang"]) for c in report["cells"]] == [("*", "en")]
    bad = Calibrate(path)("report", "--by", "judge", ok=False)
    assert bad.exit_code != 0


def _two_language_db(path):
    """c3/pause in English (yes/no) and Chinese (是/否), judged and labelled by one person."""
    store = Store(path)
    en = [("yes", "yes")] * 8 + [("yes", "no")] * 2 + [("no", "no")] * 5 + [("no", "yes")] * 1
    zh = [("是", "是")] * 6 + [("否", "是")] * 3 + [("否", "否")] * 7
    for lang, pairs in (("en", en), ("zh", zh)):
        fields = {"content": "c", "word": "w", "response": "r"} if lang == "en" else {"content": "c", "response": "r"}
        ids, _ = store.add_items([NewItem("c3/pause", lang, str(k), fields) for k in range(len(pairs))], with_ids=True)
        store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict", verdict=v)
                             for i, (v, _) in zip(ids, pairs, strict=True)])
        for i, (_, label) in zip(ids, pairs, strict=True):
            store.annotate(i, "ann", "label", label=label)
    store.close()
    return en, zh


def test_pooling_languages_uses_the_canonical_polarity(tmp_path):
    en, zh = _two_language_db(tmp_path / "pool.db")
    report = json.loads(Calibrate(tmp_path / "pool.db")("report", "--format", "json", "--by", "task").output)
    (cell,) = report["cells"]
    (line,) = cell["lines"]
    as_yes_no = {"是": "yes", "否": "no"}
    pooled = en + [(as_yes_no[v], as_yes_no[h]) for v, h in zh]
    expected = two_raters([v for v, _ in pooled], [h for _, h in pooled], ["yes", "no"])
    assert line["stats"]["labels"] == ["yes", "no"], "pooled cells stay two-category"
    assert line["n"] == 32 and line["kappa"] == pytest.approx(expected.kappa.value)


def test_pooling_different_kinds_is_refused(demo_db):
    Calibrate(demo_db)("import", "labels", "/dev/null", ok=False)
    out = Calibrate(demo_db)("report", "--by", "lang", ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and "different kinds of verdict" in said and "Traceback" not in said
    assert "the cell of lang zh would pool yes_no_zh (c3/" in said and "with rubric_scores (rubric/reference, zh)" in said
    assert "use --by lang,task" in said, "the advice keeps the user's own cut"
    per_system = " ".join(Calibrate(demo_db)("report", "--by", "system", ok=False).output.split())
    assert "the cell of system sdm-alpha would pool yes_no_en" in per_system, "the cell named as --by names it"
    assert "use --by system,task" in per_system and "system,task,lang" not in per_system, \
        "the one dimension that parts the two tasks is added, the user's pooling of languages kept"


def _beta_lexical_labelled(demo_db, tmp_path) -> Calibrate:
    """The demo with sdm-beta's c3/lexical item labelled by ana: a yes/no cell with a label."""
    labels = tmp_path / "l.csv"
    labels.write_text("task,lang,system,source_id,annotator,label,note\n"
                      "c3/lexical,en,sdm-beta,ambiguity/semantic/lexical/0,ana,yes,\n", encoding="utf-8")
    run = Calibrate(demo_db)
    run("import", "labels", str(labels))
    return run


@pytest.mark.parametrize("args", [["--by", "system", "--system", "sdm-beta"], ["--by", "lang"]])
def test_pooling_is_checked_only_on_the_cells_the_filters_select(demo_db, tmp_path, args):
    """demo-judge-2 never judged a rubric item (demo-judge did, for sdm-alpha and for no
    system): its yes/no cells pool across tasks whatever the rubric cells hold."""
    run = _beta_lexical_labelled(demo_db, tmp_path)
    out = run("report", "--judge", "demo-judge-2", *args)
    assert "demo-judge-2" in out.output and "ana" in out.output and "rubric" not in out.output


@pytest.mark.parametrize(("args", "cells"), [
    (["--by", "system"], {("sdm-beta", "*", "*")}),
    (["--by", "system", "--system", "sdm-beta"], {("sdm-beta", "*", "*")}),
    (["--by", "lang"], {(None, "*", "en"), (None, "*", "zh")}),
])
def test_items_people_labelled_that_the_judge_never_judged_pool_with_nothing(labelled_demo_db, args, cells):
    """demo-judge-2 judged sdm-beta's C3 items only (yes/no and 是/否, which pool); people
    labelled SuperGLUE items of both systems too, which no cell of its report holds."""
    out = Calibrate(labelled_demo_db)("report", "--judge", "demo-judge-2", *args, "--format", "json")
    shown = json.loads(out.stdout)["cells"]
    assert {(c["system"], c["task"], c["lang"]) for c in shown} == cells and all(c["lines"] for c in shown)


def test_a_threshold_that_no_cell_reads_is_said_to_be_unused(demo_db, tmp_path):
    run = _beta_lexical_labelled(demo_db, tmp_path)
    plain = run("report", "--judge", "demo-judge-2", "--system", "sdm-beta")
    given = run("report", "--judge", "demo-judge-2", "--system", "sdm-beta", "--threshold", "50")
    assert given.stdout == plain.stdout and "--threshold" not in plain.stderr
    assert ("note: --threshold 50 was not used: it is the pass/fail threshold of rubric scores, and no cell of this "
            "report compares scores") in " ".join(given.stderr.split())
    rubric_db(tmp_path / "r.db")
    scored = Calibrate(tmp_path / "r.db")("report", "--threshold", "50")
    assert "Spearman" in scored.stdout and "--threshold" not in scored.stderr


@pytest.fixture
def unparsed_db(tmp_path):
    """10 yes/no items: 6 agree (4 yes-yes, 2 no-no), 1 judge-yes/human-no, and 3 unparsed
    verdicts on items the person labelled yes, yes and no."""
    store = Store(tmp_path / "unparsed.db")
    rows = [("yes", "yes")] * 4 + [("no", "no")] * 2 + [("yes", "no")] + [(None, "yes"), (None, "yes"), (None, "no")]
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(len(rows))], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict" if v else "unparsed",
                                     verdict=v) for i, (v, _) in zip(ids, rows, strict=True)])
    for i, (_, label) in zip(ids, rows, strict=True):
        store.annotate(i, "ann", "label", label=label)
    store.close()
    return tmp_path / "unparsed.db"


@pytest.mark.parametrize(("mode", "table"), [
    ("exclude", [[4, 1], [0, 2]]),
    ("as-negative", [[4, 1], [2, 3]]),  # C3's rule: every unparsed verdict is "no"
    ("as-disagreement", [[4, 2], [2, 2]]),  # each unparsed verdict is the other label than the person's
])
def test_each_unparsed_mode_against_a_hand_table(unparsed_db, mode, table):
    (cell,) = json.loads(Calibrate(unparsed_db)("report", "--format", "json", "--unparsed", mode).output)["cells"]
    (line,) = cell["lines"]
    assert line["stats"]["table"] == table and line["stats"]["labels"] == ["yes", "no"]
    assert line["kappa"] == pytest.approx(two_raters(table=__import__("numpy").array(table), labels=["yes", "no"]).kappa.value)
    worst = two_raters(table=__import__("numpy").array([[4, 2], [2, 2]]), labels=["yes", "no"]).kappa.value
    best = two_raters(table=__import__("numpy").array([[6, 1], [0, 3]]), labels=["yes", "no"]).kappa.value
    assert (line["kappa_worst"], line["kappa_best"]) == (pytest.approx(worst), pytest.approx(best))


def test_a_degenerate_interval_is_labelled_not_printed(tmp_path):
    store = Store(tmp_path / "one.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(3)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict", verdict="yes") for i in ids])
    for i in ids:
        store.annotate(i, "ann", "label", label="yes")
    store.close()
    run = Calibrate(tmp_path / "one.db")
    (line,) = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"]
    assert line["kappa"] is None and "undefined" in line["kappa_note"]
    assert line["more_items"] is None, "no plan from an interval that says nothing"
    text = " ".join(run("report").output.split())
    assert "[1.00, 1.00]" not in text and "kappa is undefined" in text
    # three items: no interval at all (the posterior one would read [-0.09, 1.00]), and the reason said once
    assert line["kappa_low"] is None and line["ac1_low"] is None and line["agreement_low"] is None
    assert "— [" not in text and text.count("fewer than 10 items: no interval") == 1


def test_ties_are_counted_and_an_adjudicator_is_the_gold(tmp_path):
    store = Store(tmp_path / "ties.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(6)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict", verdict="yes") for i in ids])
    for n, i in enumerate(ids):
        store.annotate(i, "a", "label", label="yes")
        store.annotate(i, "b", "label", label="yes" if n < 3 else "no")  # 3 ties
    store.annotate(ids[5], "boss", "label", label="no")
    store.close()
    run = Calibrate(tmp_path / "ties.db")
    (cell,) = json.loads(run("report", "--format", "json").output)["cells"]
    gold = next(line for line in cell["lines"] if line["versus"] == "gold")
    assert cell["gold_ties"] == 2 and gold["n"] == 4  # item 5 has a majority of two against one now
    assert "tied between annotators" in run("report").output
    (cell,) = json.loads(run("report", "--format", "json", "--gold-from", "boss").output)["cells"]
    gold = next(line for line in cell["lines"] if line["versus"] == "gold (boss)")
    assert gold["n"] == 4 and cell["gold_ties"] == 2


@pytest.mark.parametrize("width", [80, 120, 200])
def test_the_terminal_report_fits_without_cut_cells(labelled_db, width):
    from rich.console import Console

    from calibrate.report import ReportOptions, build_report, render_table
    from calibrate.templates import TemplateSet

    path, *_ = labelled_db
    console = Console(file=io.StringIO(), width=width, color_system=None)
    render_table(build_report(Store(path), TemplateSet(), options=ReportOptions(resamples=200)), console)
    text = console.file.getvalue()
    table_lines = [line for line in text.splitlines() if "│" in line or line.startswith(" ")]
    assert table_lines and all(len(line) <= width for line in text.splitlines())
    assert "…" not in text, "no cell is cut"
    assert ("●" in text) == (width >= 100)


def test_markdown_escapes_html_in_names(labelled_db):
    path, *_ = labelled_db
    store = Store(path)
    store.annotate(1, "<img src=x onerror=alert(1)>", "label", label="yes")
    store.close()
    text = Calibrate(path)("report", "--format", "markdown").output
    assert "<img" not in text.replace("\\<img", "") and "\\<img src=x onerror=alert(1)\\>" in text


def test_csv_has_one_number_per_field(labelled_db):
    path, *_ = labelled_db
    rows = list(csv.DictReader(io.StringIO(Calibrate(path)("report", "--format", "csv").output)))
    row = next(r for r in rows if r["versus"] == "a")
    for name in ("kappa", "kappa_low", "kappa_high", "agreement", "agreement_low", "ac1", "sensitivity", "specificity"):
        float(row[name])
    assert "—" not in "".join("".join(r.values()) for r in rows)


def test_a_user_template_declaring_scores_gets_score_statistics(tmp_path, score_templates):
    db = tmp_path / "essay.db"
    store = Store(db)
    ids, _ = store.add_items([NewItem("essay/score", "zh", str(k), {"content": f"c{k}"}) for k in range(6)], with_ids=True)
    scores = lambda a: json.dumps({"score_answer": a, "score_reasoning": 50.0}, sort_keys=True)  # noqa: E731
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict", verdict=scores(10.0 * k))
                         for k, i in enumerate(ids)])
    for k, i in enumerate(ids):
        store.annotate(i, "ann", "label", label=scores(10.0 * k + 5))
    store.close()
    out = Calibrate(db)("--templates", str(score_templates), "report", "--format", "json").output
    (line,) = json.loads(out)["cells"][0]["lines"]
    assert line["stats"] is None and line["spearman"] == pytest.approx(1.0) and line["mae"] == pytest.approx(5.0)


def test_a_cell_whose_labelled_verdicts_are_all_unparsed_says_so(tmp_path):
    store = Store(tmp_path / "u.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(3)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="unparsed") for i in ids])
    for i in ids:
        store.annotate(i, "ann", "label", label="yes")
    store.close()
    out = Calibrate(tmp_path / "u.db")("report", ok=False)
    assert out.exit_code == 1 and "every labelled item's verdict is unparsed" in out.output
    assert "see --unparsed" in out.output and "no human labels yet" not in out.output
    text = Calibrate(tmp_path / "u.db")("report", "--unparsed", "as-disagreement").output
    assert "every labelled item's verdict is unparsed" not in text and "vs" in text


def test_only_the_current_version_of_an_item_is_counted(tmp_path):
    store = Store(tmp_path / "v.db")
    fields = {"content": "c", "notation": "n", "response": "r"}
    (old,), _ = store.add_items([NewItem("c3/lexical", "en", "a", fields, system="m")], with_ids=True)
    (new,), _ = store.add_items([NewItem("c3/lexical", "en", "a", {**fields, "response": "r2"}, system="m", version=2)],
                                with_ids=True)
    for item_id, verdict in ((old, "yes"), (new, "no")):
        store.add_judgments([NewJudgment(item_id=item_id, judge_name="j", judge_key="k", status="verdict", verdict=verdict)])
        store.annotate(item_id, "ann", "label", label="yes")
    data = store.agreement_data()
    assert [row[-1] for row in data.judge_vs_human] == [1], "the label on the earlier version stays, uncounted"
    assert [(row[5], row[6]) for row in data.judge_vs_human] == [("no", "yes")]
    assert sum(row[-1] for row in data.judged) == 1


def test_the_report_commands_draw_count_is_the_statistics_default():
    from calibrate.cli import report_command
    from calibrate.report import ReportOptions
    from calibrate.stats.agreement import DEFAULT_RESAMPLES

    option = next(p for p in report_command.params if p.name == "resamples")
    assert option.default == DEFAULT_RESAMPLES == ReportOptions().resamples


def test_an_output_file_that_cannot_be_written_is_an_error_not_a_traceback(labelled_demo_db, tmp_path):
    # a folder that exists but takes no new file (not even from root): the error comes when the file is opened
    unwritable = Path("/proc/calibrate-report.html")
    out = Calibrate(labelled_demo_db)("report", "--format", "html", "--out", str(unwritable), ok=False)
    assert out.exit_code == 1 and f"Error: {unwritable}: No such file or directory" in out.output
    assert "Traceback" not in out.output
    missing = tmp_path / "no-such-folder" / "report.html"  # a missing folder: refused before the report is worked out
    out = Calibrate(labelled_demo_db)("report", "--format", "html", "--out", str(missing), ok=False)
    assert out.exit_code == 2 and f"{missing.parent} does not exist: create the folder first" in out.output


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full (every write fails: disk full)")
@pytest.mark.parametrize("args", [["report", "--format", "json"], ["export"], ["export", "--format", "csv"]])
def test_a_full_disk_names_the_file_that_could_not_be_written(labelled_demo_db, args):
    out = Calibrate(labelled_demo_db)(*args, "--out", "/dev/full", ok=False)
    assert out.exit_code == 1 and "Error: /dev/full: No space left on device" in out.output


def test_a_reader_that_stops_reading_the_output_ends_the_command_quietly(labelled_demo_db):
    # more than a pipe holds (64 KiB), so that the export is still writing when the reader leaves
    store = Store(labelled_demo_db)
    store.add_items([NewItem("c3/lexical", "en", f"more/{k}", {"content": "c" * 200, "notation": "n", "response": "r"})
                     for k in range(2000)])
    store.close()
    export = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(labelled_demo_db), "export"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert export.stdout.read(100).startswith(b'{"item_id":')
    export.stdout.close()
    _, err = export.communicate(timeout=60)
    assert export.returncode == 1 and b"Error" not in err and b"Traceback" not in err


def rubric_db(path, n: int = 24, every: float | None = None):
    """A rubric cell of `n` items: the judge's scores follow the person's with some noise (or
    both give `every` item the score `every`)."""
    import numpy as np

    rng = np.random.default_rng(5)
    human = np.clip(np.round(rng.normal(65, 18, n) / 5) * 5, 0, 100) if every is None else np.full(n, every)
    judge = np.clip(np.round((human + rng.normal(0, 8, n)) / 5) * 5, 0, 100) if every is None else human
    store = Store(path)
    fields = {"question": "q", "content": "c", "answer": "a", "llm_answer": "x", "llm_reasoning": "r"}
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", str(k), fields) for k in range(n)], with_ids=True)
    scores = lambda a, r: json.dumps({"score_answer": float(a), "score_reasoning": float(r)}, sort_keys=True)  # noqa: E731
    store.add_judgments([NewJudgment(item_id=i, judge_name="ds", judge_key="k", status="verdict",
                                     verdict=scores(judge[k], 100 - judge[k])) for k, i in enumerate(ids)])
    for k, i in enumerate(ids):
        store.annotate(i, "ana", "label", label=scores(human[k], 100 - human[k]))
    store.close()
    return human, judge


def test_an_undefined_pass_fail_kappa_says_what_its_interval_is(tmp_path):
    """Judge and person pass every item: pass/fail κ is undefined on the items, and the interval
    the CSV gives is that of κ in the population they come from, as on categorical lines."""
    rubric_db(tmp_path / "r.db", n=12, every=80.0)
    rows = list(csv.DictReader(io.StringIO(Calibrate(tmp_path / "r.db")("report", "--format", "csv").output)))
    assert rows[0]["pass_fail_kappa"] == "" and rows[0]["pass_fail_kappa_low"] != ""
    assert ("pass/fail κ: both raters used only 'pass': kappa is undefined (chance agreement is 1); the interval is "
            "for κ in the population these items come from") in rows[0]["score_note"]


def test_every_score_statistic_with_its_interval_in_every_format(tmp_path):
    from scipy import stats

    human, judge = rubric_db(tmp_path / "r.db")
    run = Calibrate(tmp_path / "r.db")
    rows = list(csv.DictReader(io.StringIO(run("report", "--format", "csv").output)))
    assert [r["scores"] for r in rows] == ["score_answer", "score_reasoning"], "a CSV row per score"
    answer = rows[0]
    for name in ("spearman", "pearson", "kendall", "mae", "weighted_kappa", "pass_fail_kappa"):
        low, value, high = (float(answer[f"{name}{end}"]) for end in ("_low", "", "_high"))
        assert low <= value <= high, name
    assert float(answer["kendall"]) == pytest.approx(stats.kendalltau(judge, human)[0])
    assert float(answer["mae"]) == pytest.approx(abs(judge - human).mean())
    (line,) = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"]
    assert line["scores"]["score_reasoning"]["weighted_kappa"]["ci"] is not None
    markdown = run("report", "--format", "markdown").output
    assert all(name in markdown for name in ("Spearman ρ [95% CI]", "Kendall τb [95% CI]", "pass/fail κ [95% CI]"))
    page = run("report", "--format", "html").output
    assert "<th>weighted κ</th>" in page and "<th>Pearson r</th>" in page and f"{float(answer['spearman_low']):.2f}" in page
    table, wide = run("report").output, run("report", "--wide").output
    assert "Spearman ρ [95% CI]" in table and "MAE [95% CI]" in table and "Kendall τb" not in table
    assert all(name in wide for name in ("Pearson r", "Kendall τb", "weighted κ", "pass/fail κ"))


def test_score_statistics_fit_80_columns_and_say_why_an_interval_is_missing(tmp_path):
    from tests.test_cli_widths import run_at

    rubric_db(tmp_path / "r.db")
    rubric_db(tmp_path / "few.db", n=6)
    outputs = run_at(80, [["--db", str(tmp_path / db), "report", *wide] for db in ("r.db", "few.db")
                          for wide in ([], ["--wide"])], tmp_path)
    for code, text in outputs.values():
        assert code == 0 and max(map(len, text.splitlines())) <= 80, text
    few = " ".join(outputs[f"--db {tmp_path / 'few.db'} report"][1].split())
    assert "no interval: fewer than 10 items" in few


def test_a_ceiling_from_too_few_shared_items_says_how_few_in_the_html_overview(tmp_path):
    store = Store(tmp_path / "few.db")
    ids, _ = store.add_items([NewItem("superglue/rte", "en", str(k), {"premise": "p", "hypothesis": "h"}) for k in range(12)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="m", judge_key="k", status="verdict", verdict="entailment") for i in ids])
    for n, i in enumerate(ids):
        store.annotate(i, "x", "label", label="entailment" if n % 2 else "not_entailment")
        if n < 4:  # a second person on four items only: too few to resample the people's kappa
            store.annotate(i, "y", "label", label="entailment" if n < 2 else "not_entailment")
    store.close()
    page = Calibrate(tmp_path / "few.db")("report", "--format", "html").output
    overview = page.split("Overview: one line per cell")[1].split("</table>")[0]
    assert "(no CI: 4 items)" in overview
    assert "human ceiling 0.00 (no interval)</title>" in overview and 'fill="white" stroke="#c0392b"' in overview
    # on a phone's width each table scrolls sideways in a box of its own, keeping its columns readable
    assert page.count("<table class='forest'>") == page.count("<div class='wide'><table class='forest'>") == 2


def yes_no_db(path, rows: list[tuple[str, str]]):
    store = Store(path)
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": "c", "notation": "n", "response": "r"})
                              for k in range(len(rows))], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict", verdict=v,
                                     confidence=0.9) for i, (v, _) in zip(ids, rows, strict=True)])
    for i, (_, label) in zip(ids, rows, strict=True):
        store.annotate(i, "ann", "label", label=label)
    store.close()


def test_why_kappa_is_zero_is_said_next_to_it(tmp_path):
    yes_no_db(tmp_path / "k.db", [("yes", "yes")] * 19 + [("yes", "no")])  # the judge always says yes
    table = " ".join(Calibrate(tmp_path / "k.db")("report").output.split())
    assert "0.00 [" in table and "κ is 0 by construction: the judge used a single class ('yes')" in table
    assert "slight" not in table


def test_no_band_word_for_an_interval_wider_than_a_band_can_mean(tmp_path):
    yes_no_db(tmp_path / "three.db", [("yes", "yes"), ("no", "no"), ("yes", "yes")])
    run = Calibrate(tmp_path / "three.db")
    (line,) = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"]
    assert line["kappa"] == 1 and line["band"].startswith("too uncertain to name a band")
    table = " ".join(run("report").output.split())
    assert "too uncertain to name a band" in table and "almost perfect" not in table.split("too uncertain")[0]


def test_ece_has_no_interval_and_the_report_says_why(tmp_path):
    yes_no_db(tmp_path / "e.db", [("yes", "yes"), ("no", "no")] * 8 + [("yes", "no"), ("no", "yes")])
    run = Calibrate(tmp_path / "e.db")
    (cell,) = json.loads(run("report", "--format", "json").output)["cells"]
    ece = cell["reliability"]["calibration"]["ece"]
    assert ece["ci"] is None and ece["ci_reason"].startswith("ECE is biased upward at small n")
    assert "ECE has no interval: ECE is biased upward" in " ".join(run("report").output.split())


def test_notes_every_cell_shares_are_said_once_with_a_count(labelled_demo_db):
    text = " ".join(Calibrate(labelled_demo_db)("report").output.split())
    once = "alternative annotator test not run: needs 3 or more annotators"
    assert text.count(once) == 1 and "Notes on several cells" in text


def test_the_gold_labels_kept_for_a_report_are_the_ones_each_read_computes(labelled_db):
    path, _, _ = labelled_db
    store = Store(path)
    store.annotate(1, "boss", "label", label="no")
    alone = (store.verdict_groups(gold_from="boss"), store.jury_rows("jury", gold_from="boss"))
    with store.shared_gold_kept("boss"):
        kept = (store.verdict_groups(gold_from="boss"), store.jury_rows("jury", gold_from="boss"))
        with pytest.raises(ValueError, match="kept are from 'boss', not None"):
            store.verdict_groups()
    with store.shared_gold_kept("boss"):  # taken from the agreement read's gold labels
        store.agreement_data(gold_from="boss")
        offered = (store.verdict_groups(gold_from="boss"), store.jury_rows("jury", gold_from="boss"))
    assert repr(kept) == repr(alone) == repr(offered) and "yes" in repr(alone)
    assert not store.conn.execute("SELECT name FROM temp.sqlite_master WHERE name = 'shared_gold'").fetchall()


def test_the_groups_of_items_with_one_label_read_first_are_the_ones_verdict_groups_reads(labelled_db):
    """The report's worker reads the groups of items with one label before the gold labels are
    worked out, and hands them to verdict_groups."""
    path, _, _ = labelled_db
    store = Store(path)
    ids, _ = store.add_items([NewItem("c3/lexical", "en", f"one-{k}", {"content": str(k), "notation": "n", "response": "r"})
                              for k in range(3)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="k", status="verdict", verdict="yes",
                                     confidence=0.7, raw_output="yes") for i in ids])
    for i, label in zip(ids, ["yes", "no", "yes"], strict=True):
        store.annotate(i, "a", "label", label=label)
    read_first = Store(path, read_only=True).once_labelled_groups()
    assert [(row[7], row[9]) for row in read_first] == [("no", 1), ("yes", 2)]
    assert repr(store.verdict_groups(once_labelled=read_first)) == repr(store.verdict_groups())
    assert len(store.verdict_groups(once_labelled=[])) == len(store.verdict_groups()) - 2  # what it is handed is used


@pytest.mark.timeout(60)
@pytest.mark.parametrize("broken", ["agreement_data", "irregular_samples"])
def test_a_report_whose_read_fails_ends_with_that_error_not_a_wait(labelled_demo_db, broken):
    """The report's connection gives the worker's its gold labels and irregular verdicts; when a
    read fails before it could, the report ends with that read's error (the worker reads them
    itself), rather than waiting for what never comes."""
    from calibrate.report import build_report
    from calibrate.templates import TemplateSet

    store = Store(labelled_demo_db)

    def failing(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    setattr(store, broken, failing)
    try:
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            build_report(store, TemplateSet())
    finally:
        store.close()


def test_the_report_modules_load_without_scipy_stats():
    """scipy.stats (about a second to import) is imported on a thread while the report's reads
    run, not when the CLI and the report's modules load before them."""
    import subprocess
    import sys

    code = "import sys, calibrate.cli, calibrate.report; print('scipy.stats' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_a_report_of_yes_no_cells_runs_without_importing_scipy_stats(tmp_path):
    """The tests of yes/no cells (McNemar's, the alternative annotator test's t-tests and their
    Benjamini-Yekutieli correction) need only scipy.special: importing scipy.stats took a second
    and 50 MB of every report at a million items."""
    rng = np.random.default_rng(5)
    truth = rng.integers(0, 2, 60)
    store = Store(tmp_path / "three.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": f"c{k}", "notation": "n", "response": "r"})
                              for k in range(60)], with_ids=True)
    said = lambda accuracy: ["yes" if t == (rng.random() < accuracy) else "no" for t in truth]  # noqa: E731
    store.add_judgments([NewJudgment(item_id=i, judge_name="j", judge_key="k", status="verdict", verdict=v)
                         for i, v in zip(ids, said(0.8), strict=True)])
    for annotator in ("ana", "bo", "cy"):
        for i, label in zip(ids, said(0.9), strict=True):
            store.annotate(i, annotator, "label", label=label)
    store.close()
    code = (f"import sys\nfrom calibrate.cli import cli\ncli(['--db', {str(tmp_path / 'three.db')!r}, 'report', "
            "'--format', 'json'], standalone_mode=False)\nprint('scipy.stats' in sys.modules, file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "False"
    (cell,) = json.loads(result.stdout)["cells"]
    tested = cell["alternative_annotator_test"]["per_annotator"]
    assert {a["test"] for a in tested.values()} == {"t-test"} and all(0 < a["p_adjusted"] <= 1 for a in tested.values())
    assert all(line["homogeneity_test"] == "McNemar (exact)" and 0 < line["homogeneity_p"] <= 1 for line in cell["lines"])


def _few_labels(tmp_path, verdicts: list[str], labels: list[str]) -> Calibrate:
    """Lexical items judged by 'jj' with `verdicts`, annotator 'ana' labelling them `labels`."""
    store = Store(tmp_path / "few.db")
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": f"c{k}", "notation": "n", "response": "r"})
                              for k in range(len(verdicts))], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="jj", judge_key="k", status="verdict", verdict=v)
                         for i, v in zip(ids, verdicts, strict=True)])
    for i, label in zip(ids, labels, strict=True):
        store.annotate(i, "ana", "label", label=label)
    store.close()
    return Calibrate(tmp_path / "few.db")


@pytest.mark.parametrize("verdicts,labels", [(["yes", "yes"], ["yes", "yes"]), (["yes", "yes"], ["yes", "no"]),
                                             (["yes", "no", "yes"] * 3, ["yes", "no", "no"] * 3)])
def test_below_ten_labelled_items_no_output_prints_an_interval_and_says_why_once(tmp_path, verdicts, labels):
    run = _few_labels(tmp_path, verdicts, labels)
    text = " ".join(run("report").output.split())
    assert "[" not in text.split("CI] verdict", 1)[1], "no interval anywhere in the table or its notes"
    assert text.count("fewer than 10 items: no interval (its coverage is not known to hold)") == 1
    assert "AC1's interval" not in text
    (line,) = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"]
    stats, errors = line["stats"], line["judge_errors"]
    assert stats["agreement"]["value"] == pytest.approx(sum(v == h for v, h in zip(verdicts, labels, strict=True)) / len(labels))
    for estimate in (stats["agreement"], stats["kappa"], stats["ac1"], errors["sensitivity"], errors["specificity"]):
        assert estimate["ci"] is None and (estimate["value"] is None or "fewer than 10" in estimate["ci_reason"])
    (row,) = list(csv.DictReader(io.StringIO(run("report", "--format", "csv").output)))
    assert all(row[f"{name}_{end}"] == "" for name in ("agreement", "kappa", "ac1", "sensitivity", "specificity")
               for end in ("low", "high"))
    assert "fewer than 10 items" in row["kappa_note"]
    html = run("report", "--format", "html").output
    assert "fewer than 10 items: no interval" in html and "[-" not in html and "[0." not in html
    markdown = run("report", "--format", "markdown").output
    assert "fewer than 10 items: no interval" in markdown and "[0." not in markdown and "[-" not in markdown


def test_from_ten_labelled_items_the_intervals_are_printed(tmp_path):
    run = _few_labels(tmp_path, ["yes", "no"] * 5, ["yes", "no", "no", "no", "yes"] * 2)
    (line,) = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"]
    assert all(line["stats"][name]["ci"] is not None for name in ("agreement", "kappa", "ac1"))
    assert "fewer than 10 items" not in run("report").output


HEADER_WORDS = """<script>
addEventListener('load', () => {
  const broken = [], over = [];
  for (const th of document.querySelectorAll('th')) {
    if (th.scrollWidth > th.clientWidth) over.push(th.textContent);
    const texts = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
    for (let text; (text = texts.nextNode());) {
      const words = /\\S+/g;
      for (let m; (m = words.exec(text.data));) {
        const range = document.createRange();
        range.setStart(text, m.index);
        range.setEnd(text, m.index + m[0].length);
        if (new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1) broken.push(m[0]);
      }
    }
  }
  document.body.dataset.headers = JSON.stringify({broken, over});
});
</script>"""
"""Marks the page with the header words drawn on more than one line, and the headers wider than their cell."""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="needs chromium to lay the page out")
@pytest.mark.parametrize("command", ["report", "scores"])
def test_html_report_headers_keep_their_words_whole_on_a_phone(labelled_demo_db, tmp_path, command):
    Calibrate(labelled_demo_db)(command, "--format", "html", "--out", str(tmp_path / "report.html"))
    page = tmp_path / "measured.html"
    page.write_text((tmp_path / "report.html").read_text(encoding="utf-8").replace("</body>", HEADER_WORDS + "</body>"),
                    encoding="utf-8")
    dom = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=390,844",
                          "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    headers = json.loads(html.unescape(re.search(r'data-headers="([^"]*)"', dom).group(1)))
    assert headers == {"broken": [], "over": []}, "no header word broken or spilling into the next column"


# -- the line against the gold label -------------------------------------------------------------

AUDIT_TRUTH = ["yes", "yes", "no", "yes", "no", "yes", "yes", "no", "yes", "yes", "yes", "no"]


@pytest.fixture
def gold_db(tmp_path) -> Calibrate:
    """Twelve lexical items imported with two judges' outputs (j1 says AUDIT_TRUTH, j2 "yes" but
    an unparsed output on i0), all labelled by ana (who says "no" on i3), two of them by bob too
    (i0 agrees, i1 ties), as a user imports them."""
    run = Calibrate(tmp_path / "gold.db")
    outputs = {"j1": lambda k: f"The answer is: {AUDIT_TRUTH[k]}.", "j2": lambda k: "The answer is: yes." if k else "unsure"}
    for judge, said in outputs.items():
        lines = tmp_path / f"{judge}.jsonl"
        lines.write_text("".join(json.dumps({"id": f"i{k}", "content": f"c{k}", "notation": "n", "response": "r",
                                             "out": said(k)}) + "\n" for k in range(12)), encoding="utf-8")
        run("import", "jsonl", str(lines), "--task", "c3/lexical", "--lang", "en", "--system", "S",
            "--judge-output", "out", "--judge-name", judge)
    ana = ["no" if k == 3 else label for k, label in enumerate(AUDIT_TRUTH)]
    rows = [f"c3/lexical,en,i{k},ana,{label}" for k, label in enumerate(ana)] + ["c3/lexical,en,i0,bob,yes",
                                                                                 "c3/lexical,en,i1,bob,no"]
    (tmp_path / "labels.csv").write_text("task,lang,source_id,annotator,label\n" + "\n".join(rows) + "\n", encoding="utf-8")
    run("import", "labels", str(tmp_path / "labels.csv"))
    return run


def _lines(run: Calibrate, *args: str) -> dict[str, dict]:
    (cell,) = json.loads(run("report", "--format", "json", *args).output)["cells"]
    return {line["versus"]: line for line in cell["lines"]}


def test_the_gold_line_takes_the_gold_label_every_export_and_figure_takes(gold_db):
    run = gold_db
    exported = {row["source_id"]: row for row in csv.DictReader(io.StringIO(run("export", "--format", "csv").stdout))}
    gold = {item: row["gold_label"] for item, row in exported.items() if row["gold_label"]}
    assert len(gold) == 11, "every item has a gold label but the tied i1"
    items = sorted(gold)
    expected = two_raters([exported[i]["verdict:j1"] for i in items], [gold[i] for i in items], ["yes", "no"])
    line = _lines(run, "--judge", "j1")["gold"]
    assert line["n"] == 11 and line["agreement"] == pytest.approx(10 / 11)
    assert line["kappa"] == pytest.approx(expected.kappa.value) == pytest.approx(48 / 59)
    assert line["gold_ties"] == 1
    assert line["ceiling_items"] == 2, "the human ceiling stays on the items two people labelled"
    (row,) = [r for r in csv.DictReader(io.StringIO(run("report", "--judge", "j1", "--format", "csv").output))
              if r["versus"] == "gold"]
    assert row["n"] == "11" and float(row["kappa"]) == pytest.approx(48 / 59)
    table = run("report", "--judge", "j1").output
    assert any(text.split()[:2] == ["gold", "11"] for text in table.splitlines())
    assert "1 item tied between annotators has no gold label" in " ".join(table.split())
    assert "| gold | 11 |" in run("report", "--judge", "j1", "--format", "markdown").output
    assert "<td>gold</td><td class='num'>11</td>" in run("report", "--judge", "j1", "--format", "html").output

    # the adjudicator labelled every item: the gold is hers everywhere, the tie too
    lines = _lines(run, "--judge", "j1", "--gold-from", "ana")
    assert lines["gold (ana)"]["n"] == 12 and lines["gold (ana)"]["kappa"] == pytest.approx(lines["ana"]["kappa"])

    # the jury of j1 and j2 says yes where j1 does (j2 says yes, or is unparsed on i0), else the two tie
    parsed = [i for i in items if exported[i]["verdict:j1"] == "yes"]
    line = _lines(run, "--judge", "jury")["gold"]
    assert line["n"] == len(parsed) == 7 and line["jury_ties"] == 4 and line["unparsed"] == 0
    assert line["agreement"] == pytest.approx(sum(gold[i] == "yes" for i in parsed) / 7)


def test_the_ties_noted_on_a_judges_gold_line_are_items_it_judged(tmp_path):
    run = Calibrate(tmp_path / "t.db")
    for system, prefix, out in (("S1", "a", {"out": "The answer is: yes."}), ("S2", "b", {})):
        lines = tmp_path / f"{system}.jsonl"
        lines.write_text("".join(json.dumps({"id": f"{prefix}{k}", "content": f"{prefix}{k}", "notation": "n",
                                             "response": "r", **out}) + "\n" for k in range(4)), encoding="utf-8")
        run("import", "jsonl", str(lines), "--task", "c3/lexical", "--lang", "en", "--system", system,
            *(("--judge-output", "out", "--judge-name", "j") if out else ()))
    rows = ["S1,a0,ana,yes", "S1,a0,bob,no", "S1,a1,ana,yes", "S1,a2,ana,no", "S1,a3,ana,yes",
            "S2,b0,ana,yes", "S2,b0,bob,no", "S2,b1,ana,no", "S2,b1,bob,yes"]  # ties on a0 (judged), b0, b1 (not)
    (tmp_path / "l.csv").write_text("task,lang,system,source_id,annotator,label\n" + "".join(
        f"c3/lexical,en,{row}\n" for row in rows), encoding="utf-8")
    run("import", "labels", str(tmp_path / "l.csv"))
    line = _lines(run)["gold"]
    assert line["n"] == 3 and line["gold_ties"] == 1, "j judged a0..a3: one of them tied; b0 and b1 are not its items"
    assert "1 item tied between annotators has no gold label" in " ".join(run("report").output.split())


def test_an_interval_beside_an_undefined_kappa_says_it_is_the_populations(tmp_path):
    run = _few_labels(tmp_path, ["yes"] * 20, ["yes"] * 20)  # both raters used only "yes": κ is 0/0 here
    (line,) = json.loads(run("report", "--format", "json").output)["cells"][0]["lines"]
    assert line["kappa"] is None and line["kappa_low"] < line["kappa_high"]
    said = "the interval is for κ in the population these items come from"
    assert said in line["kappa_note"] and said in line["verdict"]
    (row,) = list(csv.DictReader(io.StringIO(run("report", "--format", "csv").output)))
    assert row["kappa"] == "" and row["kappa_low"] and said in row["kappa_note"]
    table = " ".join(run("report").output.split())
    assert "— [" in table and f"κ undefined on these items: both raters used only 'yes'; {said}" in table
    for fmt in ("markdown", "html"):
        assert said in run("report", "--format", fmt).output


@pytest.mark.parametrize(("people", "words", "judge"), [
    (("ana", "bob"), "the people's covers about 88 % here, the judge's covers about 81 % here", 0.810),
    (("ana", "bob", "cy"), "the people's covers about 88 % here, the judge's covers about 87 % here, "
                           "the difference's covers about 87 % here", 0.873),
])
def test_the_human_ceilings_intervals_simulated_to_cover_less_than_promised_are_marked(tmp_path, people, words, judge):
    """Twelve items two or three people labelled (the third person a quarter of them only): the
    ceiling's note marks its intervals approximate with the coverage tests/bench/ceiling_coverage.py
    measured at that size and number of people."""
    import krippendorff

    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"q{i}", "content": f"s{i}", "notation": "n", "response": "r",
                                         "out": f"The answer is: {'yes' if i % 3 else 'no'}."}) + "\n"
                             for i in range(12)), encoding="utf-8")
    said = {(i, who): "yes" if (i + shift) % 4 else "no" for i in range(12) for shift, who in enumerate(people)
            if who != "cy" or i % 4}
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label\n" + "".join(
        f"c3/pause,en,q{i},{who},{label}\n" for (i, who), label in said.items()), encoding="utf-8")
    run = Calibrate(tmp_path / "ceiling.db")
    run("import", "jsonl", str(items), "--task", "c3/pause", "--lang", "en", "--judge-output", "out", "--judge-name", "j")
    run("import", "labels", str(labels))
    text = " ".join(run("report", "--format", "markdown").output.split())
    assert f"human ceiling on 12 items labelled by {len(people)} people" in text
    assert f"approximate intervals: {words}" in text
    ceiling = json.loads(run("report", "--format", "json").output)["cells"][0]["ceiling"]
    assert ceiling["judge"]["approximate"] == judge and ceiling["humans"]["ci"] is not None
    if len(people) == 3:
        matrix = [[{"yes": 1.0, "no": 0.0}[said[i, who]] if (i, who) in said else float("nan") for i in range(12)]
                  for who in people]
        assert ceiling["humans"]["value"] == pytest.approx(krippendorff.alpha(reliability_data=matrix,
                                                                              level_of_measurement="nominal"))


def test_one_judge_error_and_one_unparsed_item_are_counted_in_the_singular(tmp_path):
    outputs = ["The answer is: yes.", "The answer is: no."] * 6
    outputs[0], outputs[1] = None, "unsure"  # one error (no output), one unparsed
    source = tmp_path / "j1.jsonl"
    source.write_text("".join(json.dumps({"id": f"q{i}", "content": "c", "notation": "n", "response": "r", "out": out})
                              + "\n" for i, out in enumerate(outputs)))
    run = Calibrate(tmp_path / "one.db")
    run("import", "jsonl", str(source), "--task", "c3/pause", "--lang", "en", "--judge-output", "out", "--judge-name", "j1")
    (tmp_path / "labels.csv").write_text("task,lang,source_id,annotator,label\n"
                                         + "".join(f"c3/pause,en,q{i},ana,yes\n" for i in range(12)))
    run("import", "labels", str(tmp_path / "labels.csv"))
    text = " ".join(run("report").output.split())
    assert "1 judge error (no output) not counted" in text and "1 of 11 verdicts unparsed" in text
    assert "judge errors" not in text


def test_a_rubric_statistics_approximate_interval_is_worded_as_every_other_one():
    """A simulated coverage that whole percents would round up to the promised 93 % is given to a
    tenth ("92.7 %"), in the rubric cells' notes as everywhere else: "93 %" would say it is met."""
    from calibrate.model import Estimate
    from calibrate.report.model import score_note
    from calibrate.stats.score_agreement import ScoreAgreement

    def shown(approximate: float | None) -> Estimate:
        return Estimate(0.5, ci=(0.2, 0.7), approximate=approximate)

    scores = ScoreAgreement(20, shown(None), shown(0.927), shown(None), shown(0.88), shown(None), None, 60.0, 10.0)
    assert score_note(scores) == ("Pearson r: approximate: covers about 92.7 % here; MAE: approximate: covers about 88 % "
                                  "here; pass/fail κ: no items")
