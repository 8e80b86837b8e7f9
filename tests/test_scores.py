"""`calibrate scores`: the benchmark's scores per system, raw three ways and corrected with human
labels; and `export c3`'s statistics files agreeing with it."""

from __future__ import annotations

import csv
import html
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibrate.formats.c3 import c3_right
from calibrate.model import NewItem, NewJudgment
from calibrate.scores import build as scores_build
from calibrate.scores.build import build_scores, c3_corrected_in
from calibrate.scores.render import COLUMNS
from calibrate.stats import correction, simulated
from calibrate.store import Store
from tests.conftest import Calibrate


def cells_by(result: dict) -> dict[tuple, dict]:
    return {(c["system"], c["task"], c["lang"]): c for c in result["cells"]}


def test_demo_c3_rule_and_parser_columns_differ_and_the_report_says_why(demo_db):
    result = json.loads(Calibrate(demo_db)("scores", "--by", "system,lang", "--format", "json").output)
    cells = cells_by(result)
    for lang, (rule, parser) in {"en": ((6, 13), (7, 13)), "zh": ((4, 13), (5, 13))}.items():
        (judge,) = [j for j in cells[("sdm-alpha", "(all)", lang)]["judges"] if j["judge"] == "demo-judge"]
        assert (judge["c3_rule"]["right"], judge["c3_rule"]["n"]) == rule
        assert (judge["parser_unparsed_wrong"]["right"], judge["parser_unparsed_wrong"]["n"]) == parser
        assert judge["corrected"]["value"] is None and "at least 10" in judge["corrected"]["reason"]
    why = result["why_the_c3_rule_differs"]
    assert any("c3/intonation (en)" in line and "the answer is：yes" in line for line in why)
    assert any("c3/heterograph (zh)" in line and "最终答案为:是" in line for line in why)
    assert ("rubric/reference left out: its verdicts are 0-100 scores, not right/wrong: a system's score here would "
            "need a right/wrong verdict per item; `calibrate report` shows how the judge's scores follow people's"
            ) in result["notes"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "csv", "html"])
def test_scores_in_every_format_on_the_demo(demo_db, tmp_path, fmt):
    out = tmp_path / f"scores.{fmt}"
    Calibrate(demo_db)("scores", "--format", fmt, "--out", str(out))
    text = out.read_text(encoding="utf-8")
    assert "sdm-alpha" in text and "sdm-beta" in text and "c3/heterograph" in text
    if fmt == "json":
        assert {c["system"] for c in json.loads(text)["cells"]} == {"sdm-alpha", "sdm-beta"}
    if fmt == "csv":
        rows = list(csv.reader(io.StringIO(text)))
        assert rows[0][:4] == ["system", "task", "lang", "judge"]
        assert any("at least 10 random human labels" in row[-1] for row in rows[1:])
    if fmt == "html":
        assert text.startswith("<!doctype html>") and "Why the C3-rule column differs" in text
    if fmt == "table":
        assert "Ranking of systems" in text and "] 0 labelled items" in text
    if fmt == "markdown":  # the footnote's brackets are escaped, so they render as written
        assert "Ranking of systems" in text and "\\] 0 labelled items" in text


def test_the_html_table_shows_the_corrected_score_beside_its_cell_and_judge(two_systems_two_judges):
    """A 1280-pixel window shows a page's first 1200 pixels: the corrected score, what a
    benchmark publishes, comes right after the cell and judge, with the same figures as the
    CSV's column of that name; the parser's sentence-long counts come last."""
    import re

    path, _, _ = two_systems_two_judges
    run = Calibrate(path)
    page = run("scores", "--format", "html").output
    cells = lambda row: [html.unescape(re.sub("<[^>]+>", "", c)) for c in re.findall(r"<t[hd]>(.*?)</t[hd]>", row)]  # noqa: E731
    head, *body = [cells(row) for row in re.findall(r"<tr>(.*?)</tr>", page.split("<table class='scores'>")[1])]
    assert head[:6] == ["system", "task", "lang", "judge", "corrected", "people"]
    assert head[-1] == "parser (unparsed, errors left out)" and sorted(head) == sorted(COLUMNS)
    columns, *rows = csv.reader(io.StringIO(run("scores", "--format", "csv").output))
    corrected = {tuple(r[:4]): r[columns.index("corrected")] for r in rows if len(r) == len(columns)}  # not stderr's
    assert body and all(row[4] == corrected[tuple(row[:4])] for row in body)


def test_narrow_terminal_gets_a_block_per_cell(demo_db):
    out = Calibrate(demo_db)("scores", "--by", "system,lang").output
    assert "sdm-alpha · (all) · en" in out and "  demo-judge: C3 rule 6/13 46% · parser 7/13 54%" in out
    assert max(len(line) for line in out.splitlines() if "·" in line and "C3 rule" in line) <= 80


def test_bad_by_and_unknown_system(demo_db):
    run = Calibrate(demo_db)
    assert "Invalid value for '--by': takes system, task, lang" in run("scores", "--by", "judge", ok=False).output
    unknown = run("scores", "--system", "nobody", ok=False)
    assert unknown.exit_code == 2 and "unknown system 'nobody'" in unknown.output and "sdm-alpha, sdm-beta" in unknown.output


def test_export_c3_statistics_agree_with_the_c3_rule_column(demo_db, tmp_path):
    """C3's own rule run on `export c3`'s result files gives the per-category accuracy that
    `scores` shows in its C3-rule column, and the statistics file carries C3's keys."""
    run = Calibrate(demo_db)
    out = tmp_path / "c3"
    run("export", "c3", "--lang", "zh", "--system", "sdm-alpha", "--judge", "demo-judge", str(out))
    scores = cells_by(json.loads(run("scores", "--system", "sdm-alpha", "--format", "json").output))
    stats = {row["category"]: row for row in json.loads((out / "statistics" / "chinese_result_data.json").read_text())}
    compared = 0
    for path in (out / "demo-judge").rglob("*.json"):
        rel = str(path.relative_to(out / "demo-judge")).removesuffix(".json")
        records = json.loads(path.read_text(encoding="utf-8"))
        right = sum(c3_right(r["check_answer"], "zh") for r in records)
        assert stats["/" + rel]["demo-judge_correct"] == right and stats["/" + rel]["total"] == len(records)
        task = next((t for (_, t, lang) in scores if lang == "zh" and t != "(all)" and _category(t) == rel), None)
        if task is None:
            continue
        (judge,) = scores[("sdm-alpha", task, "zh")]["judges"]
        assert (judge["c3_rule"]["right"], judge["c3_rule"]["n"]) == (right, len(records))
        compared += 1
    assert compared == 13, "every category, the generation phenomena (people decide) included"
    overall = stats["overall"]
    assert set(overall) >= {"category", "demo-judge_correct", "total", "demo-judge_accuracy", "corrected_accuracy"}
    assert (overall["demo-judge_correct"], overall["total"], overall["demo-judge_accuracy"]) == (4, 13, round(4 / 13, 4))
    combined = json.loads((out / "statistics" / "combined_chinese_statistic.json").read_text())
    assert combined[0]["data_id"].startswith("/ambiguity/") and combined[0]["demo-judge"] in ("right", "wrong")


def _category(task: str) -> str:
    from calibrate.formats.c3 import C3_LAYOUT

    return next(p.responses for p in C3_LAYOUT["zh"] if p.task == task)


@pytest.fixture
def two_systems_two_judges(tmp_path):
    """80 lexical items for each of two systems (true accuracy 0.8 and 0.5), two judges that
    say yes too often, and 40 random items per system labelled by a person."""
    path = tmp_path / "scores.db"
    store = Store(path)
    rng = np.random.default_rng(7)
    truth, verdicts, labelled = {}, {}, {}
    for system, accuracy in (("strong", 0.8), ("weak", 0.5)):
        ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": str(k), "notation": "n", "response": "r"},
                                          system=system) for k in range(80)], with_ids=True)
        right = rng.random(80) < accuracy
        judged = []
        for judge, (se, sp) in (("gpt", (0.95, 0.6)), ("dpsk", (0.9, 0.75))):
            says = np.where(right, rng.random(80) < se, rng.random(80) > sp)
            verdicts[(system, judge)] = says.astype(float)
            judged += [NewJudgment(item_id=i, judge_name=judge, judge_key=judge, status="verdict",
                                   verdict="yes" if s else "no", raw_output=f"The answer is: {'yes' if s else 'no'}.")
                       for i, s in zip(ids, says, strict=True)]
        store.add_judgments(judged)
        chosen = rng.choice(80, 40, replace=False)
        for k in chosen:
            store.annotate(ids[k], "ana", "label", label="yes" if right[k] else "no")
        truth[system] = right
        labelled[system] = np.full(80, np.nan)
        labelled[system][chosen] = right[chosen].astype(float)
    store.close()
    return path, verdicts, labelled


def test_corrected_scores_final_ranking_and_judge_pairs(two_systems_two_judges, templates):
    path, verdicts, labels = two_systems_two_judges
    store = Store(path)
    result = build_scores(store, templates, by=("system", "task", "lang"))
    cells = {c.key: c for c in result.cells}
    strong = cells[("strong", "c3/lexical", "en")]
    by_judge = {j.judge: j for j in strong.judges}
    expected = correction.stratified_mean(verdicts[("strong", "gpt")], labels["strong"], random_sample=True)
    assert by_judge["gpt"].corrected.value == pytest.approx(expected.value)
    assert by_judge["gpt"].corrected.ci == pytest.approx(expected.ci)
    ppi = correction.ppi_mean(verdicts[("strong", "gpt")], labels["strong"], random_sample=True)
    assert by_judge["gpt"].ppi.value == pytest.approx(ppi.value), "PPI++ stays beside it (JSON)"
    assert by_judge["gpt"].rogan_gladen.value is not None
    assert by_judge["gpt"].plan.half_width == pytest.approx((expected.ci[1] - expected.ci[0]) / 2)
    both = np.stack([verdicts[("strong", "dpsk")], verdicts[("strong", "gpt")]], axis=1)
    final = correction.stratified_mean(both, labels["strong"], random_sample=True)
    assert strong.final.judges == ["dpsk", "gpt"] and strong.final.corrected.value == pytest.approx(final.value)
    assert strong.final.corrected.ci == pytest.approx(final.ci)
    assert strong.final.raw == pytest.approx(np.mean([by_judge[j].c3_rule.value for j in ("dpsk", "gpt")]))
    assert strong.people.value == pytest.approx(np.nanmean(labels["strong"]))

    ranking = dict(result.rankings)["c3/lexical en, by mean of judges"]
    assert ranking.order == ["strong", "weak"] and ranking.pairs[0].separated
    pair = next(p for p in result.judge_pairs if p.scope == "all items")
    assert (pair.a, pair.b, pair.n, pair.n_labelled) == ("dpsk", "gpt", 160, 80)
    assert pair.kappa.ci is not None and pair.tracks_people.ci is not None
    store.close()


def test_every_figure_is_the_same_on_one_thread_and_on_two(two_systems_two_judges, templates, monkeypatch):
    """The cells are worked out on two threads sharing what a system's overall row pools: the
    JSON of the scores, every interval and ranking, is the one a single thread gives."""
    path, _, _ = two_systems_two_judges
    store = Store(path)
    found = {}
    for threads in (1, 2):
        monkeypatch.setattr(scores_build, "CELL_THREADS", threads)
        found[threads] = json.dumps(build_scores(store, templates).as_dict(), sort_keys=True)
    store.close()
    assert len(json.loads(found[2])["cells"]) == 4, "each system's cell and its overall row, which pools it"
    assert found[1] == found[2]


def test_scores_runs_without_importing_scipy_stats_or_signal(two_systems_two_judges):
    """scipy.stats and scipy.signal take about a second to import, a fifth of `scores` at a
    million items: its statistics (the Fisher test of its guard, the stratified posterior's
    convolutions, the quantiles) need only scipy.special and scipy.fft."""
    path, _, _ = two_systems_two_judges
    code = ("import sys\nfrom calibrate.cli import cli\n"
            f"cli(['--db', {str(path)!r}, 'scores', '--format', 'json'], standalone_mode=False)\n"
            "print(sorted(m for m in sys.modules if m in ('scipy.stats', 'scipy.signal', 'sklearn')), file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cells"], "it scored the cells"
    assert result.stderr.strip().splitlines()[-1] == "[]"


def test_cli_scores_target_changes_the_labels_needed(two_systems_two_judges):
    path, _, _ = two_systems_two_judges
    run = Calibrate(path)
    wide = json.loads(run("scores", "--format", "json", "--target", "0.2").output)
    narrow = json.loads(run("scores", "--format", "json", "--target", "0.08").output)
    key = ("weak", "c3/lexical", "en")
    more = lambda r: cells_by(r)[key]["judges"][0]["more_labels_for_target"]  # noqa: E731
    assert more(wide) == 0 and (more(narrow) is None or more(narrow) > 0)


def test_a_judge_named_twice_is_refused_before_any_work(two_systems_two_judges, tmp_path):
    path, _, _ = two_systems_two_judges
    run = Calibrate(path)
    for args in (("scores", "--judge", "dpsk", "--judge", "gpt", "--judge", "dpsk"),
                 ("export", "c3", str(tmp_path / "out"), "--lang", "en", "--system", "strong", "--judge", "dpsk",
                  "--judge", "dpsk")):
        result = run(*args, ok=False)
        assert result.exit_code == 2 and "Invalid value for '--judge': dpsk given twice: name each once" in result.output
    assert not (tmp_path / "out").exists()
    assert run("scores", "--judge", "dpsk", "--judge", "gpt").exit_code == 0


def test_demo_shows_c3_final_score_and_judge_against_judge(demo_db):
    result = json.loads(Calibrate(demo_db)("scores", "--by", "system,lang", "--format", "json").output)
    beta = cells_by(result)[("sdm-beta", "(all)", "en")]
    rule = {j["judge"]: j["c3_rule"]["accuracy"] for j in beta["judges"] if j["c3_rule"]}
    assert beta["final"]["judges"] == ["demo-judge", "demo-judge-2"]
    assert beta["final"]["raw"] == pytest.approx((rule["demo-judge"] + rule["demo-judge-2"]) / 2)
    (pair,) = [p for p in result["judge_pairs"] if p["scope"] == "all items"]
    assert (pair["a"], pair["b"], pair["n"]) == ("demo-judge", "demo-judge-2", 20) and pair["kappa"]["value"] is not None


def test_export_c3_statistics_carry_the_final_corrected_score_of_two_judges(two_systems_two_judges, templates):
    from calibrate.formats.c3_figures import c3_corrected

    path, _, _ = two_systems_two_judges
    store = Store(path)
    per_task, overall = (build_scores(store, templates, by=by, system="strong").cells
                         for by in (("system", "task", "lang"), ("system", "lang")))
    store.close()
    stats = c3_corrected(per_task, overall, "en", ["gpt", "dpsk"])
    (cell,) = [c for c in overall if c.lang == "en"]
    final = cell.final.corrected
    assert stats["overall"]["corrected_accuracy"] == round(final.value, 4)
    assert stats["overall"]["corrected_ci"] == [round(v, 4) for v in final.ci]
    assert stats["overall"]["corrected_method"] == "stratified by the judges' mean verdict"
    assert stats["overall"]["corrected_approximate"] == final.approximate
    one = c3_corrected(per_task, overall, "en", ["gpt"])["overall"]
    (gpt,) = [j for j in cell.judges if j.judge == "gpt"]
    assert one["corrected_accuracy"] == round(gpt.corrected.value, 4) and one["corrected_method"].endswith("judge's verdict")


def test_export_c3_overall_corrected_score_is_c3s_alone_beside_another_benchmark_of_the_system(
        two_systems_two_judges, templates):
    """C3's "overall" counts C3's data ids only, so calibrate's corrected accuracy beside it does
    too: SuperGLUE items of the same system in the same language, which its judge gets nearly
    all right, leave it as it was."""
    path, _, _ = two_systems_two_judges
    store = Store(path)
    (c3_only,) = [c for c in build_scores(store, templates, by=("system", "lang"), system="strong").cells
                  if c.lang == "en"]
    expected = next(j for j in c3_only.judges if j.judge == "gpt").corrected
    ids, _ = store.add_items([NewItem("superglue/boolq", "en", str(k), {"question": f"q{k}", "passage": "p",
                                                                       "response": "True"}, "True", system="strong")
                              for k in range(200)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="gpt", status="verdict", verdict="True",
                                     raw_output="True") for i in ids])
    for i in ids[:60]:
        store.annotate(i, "ana", "label", label="True")
    (mixed,) = [c for c in build_scores(store, templates, by=("system", "lang"), system="strong").cells
                if c.lang == "en"]
    store.close()
    assert next(j for j in mixed.judges if j.judge == "gpt").corrected.value > expected.value + 0.05, \
        "the system's score over both benchmarks is another figure"
    overall = c3_corrected_in(str(path), templates, "en", "strong", ["gpt"])["overall"]  # what export c3 writes
    assert overall["corrected_accuracy"] == round(expected.value, 4)
    assert overall["corrected_ci"] == [round(v, 4) for v in expected.ci]


def test_export_c3_corrected_scores_are_the_exported_judges_not_every_judge_of_the_database(
        two_systems_two_judges, templates):
    """The judges' mean beside C3's figures is over the judges exported: a third judge in the
    database, on some of the items, changes neither a category's figure nor overall's."""
    path, _, _ = two_systems_two_judges
    before = c3_corrected_in(str(path), templates, "en", "strong", ["gpt", "dpsk"])
    store = Store(path)
    ids = [row["id"] for row in store.conn.execute("SELECT id FROM items WHERE system = 'strong' ORDER BY id LIMIT 50")]
    store.add_judgments([NewJudgment(item_id=i, judge_name="claude", judge_key="claude", status="verdict",
                                     verdict="yes" if i % 3 else "no", raw_output="yes" if i % 3 else "no")
                         for i in ids])
    store.close()
    after = c3_corrected_in(str(path), templates, "en", "strong", ["gpt", "dpsk"])
    assert before["overall"]["corrected_method"] == "stratified by the judges' mean verdict"
    assert before["overall"]["corrected_accuracy"] is not None
    assert after == before


def test_an_interval_short_of_93_percent_in_simulation_is_marked_where_it_is_shown(tmp_path, templates):
    """C3's final score over two judges fell short of 93 % in tests/bench/correction_coverage.py
    --judges at the worst setting of its table: near it the table marks the interval and says
    the figure, in the text and the markdown."""
    (accuracy, n, (se, sp), total), _ = min(simulated._under_coverage()["stratified_judges"].items(),
                                            key=lambda kv: kv[1])
    for seed in range(50):  # a sample near that setting (the estimates are near the truth)
        rng = np.random.default_rng(seed)
        right = rng.random(total) < accuracy
        says = np.stack([np.where(right, rng.random(total) < se, rng.random(total) >= sp) for _ in range(2)], 1)
        chosen = rng.choice(total, n, replace=False)
        labels = np.full(total, np.nan)
        labels[chosen] = right[chosen]
        if correction.stratified_mean(says.astype(float), labels, random_sample=True).approximate is not None:
            break
    path = tmp_path / "marked.db"
    store = Store(path)
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": str(k), "notation": "n", "response": "r"},
                                      system="s") for k in range(total)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name=f"j{k}", judge_key=f"j{k}", status="verdict",
                                     verdict="yes" if said[k] else "no", raw_output=f"The answer is: {'yes' if said[k] else 'no'}.")
                         for i, said in zip(ids, says, strict=True) for k in range(2)])
    for k in chosen:
        store.annotate(ids[k], "ana", "label", label="yes" if right[k] else "no")
    cell = [c for c in build_scores(store, templates, by=("system", "task", "lang")).cells if c.task != "(all)"][0]
    store.close()
    assert cell.final.corrected.value is not None and cell.final.corrected.approximate is not None
    text = " ".join(Calibrate(path)("scores").output.split())
    assert "]~" in text and f"corrected: ~ approximate: covers about {round(cell.final.corrected.approximate * 100)} % here" \
        in text
    assert all(j.corrected.approximate is None for j in cell.judges), "each judge's own interval keeps 93 % there"
    markdown = Calibrate(path)("scores", "--format", "markdown").output
    assert "approximate: covers about" in markdown


def _two_cells(tmp_path, intonation_labels: list[str | None], lexical_labels: list[str]) -> Calibrate:
    """System m on 40 intonation items (the judge says yes on 36) and 40 lexical ones (yes on
    all), with the given human labels on the first items of each task (None: that item unlabelled)."""
    def jsonl(prefix: str, verdicts: list[str]) -> str:
        path = tmp_path / f"{prefix}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{prefix}{i}", "content": f"s{i}", "notation": "n", "response": "r",
                                            "j": f"The answer is: {v}."}) + "\n" for i, v in enumerate(verdicts)))
        return str(path)

    run = Calibrate(tmp_path / "cells.db")
    for task, prefix, verdicts in (("c3/intonation", "a", ["yes"] * 36 + ["no"] * 4), ("c3/lexical", "b", ["yes"] * 40)):
        run("import", "jsonl", jsonl(prefix, verdicts), "--task", task, "--lang", "en", "--judge-output", "j",
            "--judge-name", "jj", "--system", "m")
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label\n"
                      + "".join(f"c3/intonation,en,a{i},ana,{v}\n" for i, v in enumerate(intonation_labels) if v)
                      + "".join(f"c3/lexical,en,b{i},ana,{v}\n" for i, v in enumerate(lexical_labels)))
    run("import", "labels", str(labels))
    return run


def test_a_systems_overall_row_gives_no_corrected_number_while_a_cell_it_pools_has_none(tmp_path):
    # the labels only on intonation, and those picked where the judge says yes (not at random)
    run = _two_cells(tmp_path, ["yes"] * 28 + ["no"] * 2, [])
    text = run("scores").output
    overall = text.split("m · (all) · (all)")[1].split("m · c3/intonation")[0]
    assert "corrected — · R–G — · +labels —" in overall and "%]" not in overall.split("people")[1].split("\n", 1)[1]
    assert "none of the 2 cells pooled here has a corrected number that pooling can take" in " ".join(text.split())
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    (judge,) = cells[("m", "(all)", "(all)")]["judges"]
    assert judge["corrected"]["value"] is None and judge["corrected"]["ci"] is None
    assert "m · c3/intonation · en: the judge says yes on 100% of labelled items" in judge["corrected"]["reason"]
    assert "m · c3/lexical · en: 0 labelled items" in judge["corrected"]["reason"]
    assert judge["more_labels_for_target"] is None and judge["rogan_gladen"]["ci"] is None and judge["corrected_ppi"]["ci"] is None
    # people's own accuracy on those labels rests on the same sample: not given as the cell's either
    for row in (("m", "c3/intonation", "en"), ("m", "(all)", "(all)")):
        people = cells[row]["people"]
        assert people["value"] is None and people["ci"] is None, row
    assert "by jj's verdicts, the judge says yes on 100% of labelled items" in cells[("m", "c3/intonation", "en")]["people"]["reason"]
    assert "do not look like a random sample: people's accuracy on them says little of the cell's" in \
        cells[("m", "c3/intonation", "en")]["people"]["reason"]


def test_a_systems_overall_row_combines_its_cells_by_their_share_of_the_items(tmp_path):
    intonation = ["yes", "no"] * 10  # 20 random-looking labels on intonation (the judge says yes on them all)
    run = _two_cells(tmp_path, intonation, ["no"] * 10)
    text = run("scores").output
    assert "none of the" not in text and "lacks one" not in text
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    own = [cells[("m", task, "en")]["judges"][0]["corrected"] for task in ("c3/intonation", "c3/lexical")]
    (judge,) = cells[("m", "(all)", "(all)")]["judges"]
    pooled = judge["corrected"]
    assert all(c["value"] is not None for c in own)
    assert pooled["value"] == pytest.approx((own[0]["value"] * 40 + own[1]["value"] * 40) / 80)
    # the interval of the sum of the two cells: inside the span of theirs, narrower than the wider
    assert min(c["ci"][0] for c in own) <= pooled["ci"][0] <= pooled["value"] <= pooled["ci"][1] <= max(c["ci"][1] for c in own)
    # pooled as one sample (by the verdict alone) the lexical cell's all-wrong labels would have
    # pulled the 36 intonation yes-items towards wrong; by cell, intonation keeps its own figure
    naive = correction.stratified_mean([1] * 36 + [0] * 4 + [1] * 40,
                                       [1, 0] * 10 + [np.nan] * 20 + [0] * 10 + [np.nan] * 30, random_sample=True)
    assert abs(naive.value - pooled["value"]) > 0.05
    assert judge["rogan_gladen"]["value"] is None and "cell by cell" in judge["rogan_gladen"]["reason"]
    # people's accuracy over both cells: each cell's (10 of 20 right, 0 of 10) by its share of the items, not 10 of 30
    people = cells[("m", "(all)", "(all)")]["people"]
    assert people["value"] == pytest.approx(0.5 * 10 / 20 + 0.5 * 0) and people["ci"][0] <= people["value"] <= people["ci"][1]


def test_people_over_several_cells_need_labels_in_each(tmp_path):
    run = _two_cells(tmp_path, ["yes", "no"] * 10, [])
    people = cells_by(json.loads(run("scores", "--format", "json").output))[("m", "(all)", "(all)")]["people"]
    assert people["value"] is None and "m · c3/lexical · en: 0 labelled items" in people["reason"]
    assert "it needs each cell's people's accuracy as pooling takes it, and 1 lacks one" in people["reason"]


def test_people_get_no_interval_from_fewer_than_ten_labels_in_any_format(tmp_path):
    run = _two_cells(tmp_path, ["yes", "yes"], [])
    text = " ".join(run("scores").output.split())
    assert "people 100% [" not in text and "people 100%" in text
    assert text.count("people: fewer than 10 items: no interval (its coverage is not known to hold)") == 1
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    people = cells[("m", "c3/intonation", "en")]["people"]
    assert people["value"] == 1.0 and people["ci"] is None and "fewer than 10" in people["ci_reason"]
    rows = list(csv.DictReader(io.StringIO(run("scores", "--format", "csv").stdout)))
    assert rows and all("[" not in row["people"] for row in rows)
    assert "people: fewer than 10 items" in " ".join(run("scores", "--format", "html").output.split())
    (tmp_path / "ten").mkdir()
    ten = _two_cells(tmp_path / "ten", ["yes", "no"] * 5, [])
    assert "people 50% [" in ten("scores").output


def test_under_ten_labels_more_labels_says_how_many_in_every_format(tmp_path):
    run = _two_cells(tmp_path, ["yes", "no"] * 4 + ["yes"], [])
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    (judge,) = cells[("m", "c3/intonation", "en")]["judges"]
    more = judge["more_labels_for_target"]
    assert judge["corrected"]["value"] is None and "9 labelled items: at least 10" in judge["corrected"]["reason"]
    assert more >= 1 and judge["plan_reason"] is None, "at least the one label that brings the cell to 10"
    assert f"+labels {more}" in run("scores").output.split("m · c3/intonation")[1]
    (row,) = [r for r in csv.DictReader(io.StringIO(run("scores", "--format", "csv").stdout)) if r["task"] == "c3/intonation"]
    assert row["more labels"] == str(more)
    (line,) = [line for line in run("scores", "--format", "markdown").output.splitlines() if "| c3/intonation |" in line]
    assert f"| — | {more} |" in line
    # a looser target: the labels that bring the cell to 10 are what it takes
    loose = cells_by(json.loads(run("scores", "--format", "json", "--target", "0.5").output))
    assert loose[("m", "c3/intonation", "en")]["judges"][0]["more_labels_for_target"] == 1


def test_rogan_gladen_gives_no_value_where_its_interval_is_all_of_zero_to_one(tmp_path):
    # 28 labels on the judge's yes (4 wrong) and 2 on its no (1 wrong): its interval, clipped, is [0, 1]
    run = _two_cells(tmp_path, ["yes"] * 24 + ["no"] * 4 + [None] * 8 + ["yes", "no"], [])
    (judge,) = cells_by(json.loads(run("scores", "--format", "json").output))[("m", "c3/intonation", "en")]["judges"]
    assert judge["corrected"]["value"] is not None
    rogan_gladen = judge["rogan_gladen"]
    assert rogan_gladen["value"] is None and rogan_gladen["ci"] is None
    assert "its 95% interval is the whole [0, 1]: the labels leave the judge's sensitivity or specificity too " \
           "uncertain" in rogan_gladen["reason"]
    text = " ".join(run("scores").output.split())
    assert "R–G —" in text.split("m · c3/intonation")[1] and "Rogan–Gladen: its 95% interval is the whole [0, 1]" in text


def superglue_answered_by_my_llm(db: Path, **tasks: tuple[list[dict], str]) -> Calibrate:
    """`calibrate` on `db` with each SuperGLUE task (name=(its rows, my-llm's answer to every one))
    imported, with predictions that give my-llm's answer."""
    folder = db.parent / "my-llm"
    folder.mkdir(exist_ok=True)
    run = Calibrate(db)
    for task, (rows, answer) in tasks.items():
        (db.parent / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        (folder / f"{task}.jsonl").write_text(
            "".join(json.dumps({"idx": r["idx"], "response": answer}) + "\n" for r in rows), encoding="utf-8")
        run("import", "superglue", "--task", task, str(db.parent / f"{task}.jsonl"), "--predictions",
            str(folder / f"{task}.jsonl"))
    return run


def test_a_superglue_answer_is_right_when_it_is_the_gold_label_whatever_its_polarity(tmp_path):
    # BoolQ's gold False answered False, and RTE's gold not_entailment answered so: every answer is right, and a
    # person who reads each response's answer as the gold label agrees (True and entailment are no "yes, right")
    boolq = [{"question": f"q{k}", "passage": "p", "idx": k, "label": False} for k in range(12)]
    rte = [{"premise": f"p{k}", "hypothesis": "h", "idx": k, "label": "not_entailment"} for k in range(12)]
    run = superglue_answered_by_my_llm(tmp_path / "s.db", boolq=(boolq, "False"), rte=(rte, "not_entailment"))
    run("judge", "--judge", "rule")
    store = Store(tmp_path / "s.db")
    for item in store.items():
        store.annotate(item.id, "ana", "label", label=item.reference)
    store.close()
    for cell in json.loads(run("scores", "--format", "json").output)["cells"]:
        if cell["task"] == "(all)":
            continue
        (judge,) = cell["judges"]
        assert judge["parser_unparsed_wrong"] == {"right": 12, "n": 12, "accuracy": 1.0}, cell["task"]
        assert cell["people"]["value"] == 1.0 and judge["corrected"]["value"] == pytest.approx(1.0, abs=0.05)
    assert "C3-rule" not in run("scores").output, "no C3 task: no section on a C3-rule column it does not have"


AUDIT_VERDICTS = ["yes", "yes", "no", "yes", "no", "yes", "yes", "no", "yes", "yes", "yes", "no"]


@pytest.fixture
def judged_and_unjudged(tmp_path) -> Calibrate:
    """System S: 12 c3/lexical items judged by j1 and by j2 (whose one output that is not yes,
    "unsure", is unparsed), and 12 c3/pause items no judge ran on; ana labels all 24, bob two
    lexical ones (i1: ana yes, bob no, a tie)."""
    outputs = {"j1": lambda i: f"The answer is: {AUDIT_VERDICTS[i]}.",
               "j2": lambda i: "The answer is: yes." if i else "unsure"}
    run = Calibrate(tmp_path / "r.db")
    for judge, output in outputs.items():
        path = tmp_path / f"{judge}.jsonl"
        path.write_text("".join(json.dumps({"id": f"i{i}", "content": f"c{i}", "notation": "n", "response": "r",
                                            judge: output(i)}) + "\n" for i in range(12)))
        run("import", "jsonl", str(path), "--task", "c3/lexical", "--lang", "en", "--system", "S",
            "--judge-output", judge, "--judge-name", judge)
    pause = tmp_path / "pause.jsonl"
    pause.write_text("".join(json.dumps({"id": f"p{i}", "content": f"c{i}", "notation": "n", "response": "r"}) + "\n"
                             for i in range(12)))
    run("import", "jsonl", str(pause), "--task", "c3/pause", "--lang", "en", "--system", "S")
    labels = ["task,lang,source_id,annotator,label"]
    for i, v in enumerate(AUDIT_VERDICTS):
        labels += [f"c3/lexical,en,i{i},ana,{v if i != 3 else 'no'}", f"c3/pause,en,p{i},ana,no"]
    labels += ["c3/lexical,en,i0,bob,yes", "c3/lexical,en,i1,bob,no"]
    (tmp_path / "labels.csv").write_text("\n".join(labels) + "\n")
    run("import", "labels", str(tmp_path / "labels.csv"))
    return run


def test_an_overall_row_gives_no_judge_figure_while_a_cell_it_pools_has_no_verdicts(judged_and_unjudged):
    """But C3's rule, which counts those items as C3's process_results.py does: not at all, as
    no judge has a record of them."""
    run = judged_and_unjudged
    text = " ".join(run("scores").output.split())
    overall = text.split("S · (all) · (all)")[1].split("S · c3/lexical")[0]
    assert "corrected 57%" not in overall and overall.count("corrected — ") == 3
    assert "j1: C3 rule 8/12 67% · parser —" in overall and "mean of judges: C3 rule 79%" in overall
    assert "j1: no verdicts in 1 of the cells pooled here (S · c3/pause · en; 12 of its 24 items)" in text
    assert "S · c3/pause · en 12 items, 12 labelled, people 0% [0%, 24%] (no judge) [" in text
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    whole = cells[("S", "(all)", "(all)")]
    for judge in whole["judges"]:
        assert judge["cells_without_verdicts"] == ["S · c3/pause · en"]
        assert judge["corrected"]["value"] is None and judge["parser_unparsed_wrong"]["accuracy"] is None
        assert judge["c3_rule"]["n"] == 12 and "S · c3/pause · en" in judge["corrected"]["reason"]
    assert whole["final"]["raw"] == pytest.approx((8 + 11) / 24) and whole["final"]["corrected"]["value"] is None
    (j1,) = [j for j in cells[("S", "c3/lexical", "en")]["judges"] if j["judge"] == "j1"]
    assert j1["corrected"]["value"] == pytest.approx(4 / 7) and j1["cells_without_verdicts"] == []
    rows = list(csv.DictReader(io.StringIO(run("scores", "--format", "csv").stdout)))
    pooled = [r for r in rows if r["task"] == "(all)"]
    assert pooled and all(r["corrected"] == "—" and r["corrected_value"] == "" and "c3/pause" in r["note"]
                          for r in pooled)
    markdown = run("scores", "--format", "markdown").output
    assert "no verdicts in 1 of the cells pooled here (S · c3/pause · en" in markdown


def test_judge_against_judge_leaves_unparsed_verdicts_out_and_says_how_many(judged_and_unjudged):
    run = judged_and_unjudged
    text = " ".join(run("scores").output.split())
    # j2's only output other than yes is unparsed: without it j2 is constant, so κ is 0, not -0.15
    assert "all items: j1 vs j2, n=11 (1 item with an unparsed or error verdict left out): κ 0.00" in text
    (pair,) = [p for p in json.loads(run("scores", "--format", "json").output)["judge_pairs"] if p["scope"] == "all items"]
    assert (pair["n"], pair["left_out_unparsed"], pair["kappa"]["value"]) == (11, 1, 0.0)
    # the corrected figures read it as "no", and j2's row (the only one with one) says so
    lines = run("scores").output.splitlines()
    (note,) = [line.split()[0] for line in lines if "read this judge's unparsed and error verdicts" in line]
    lexical = lines[next(k for k, line in enumerate(lines) if "S · c3/lexical · en" in line):]
    j1, j2 = (next(k for k, line in enumerate(lexical) if line.strip().startswith(f"{j}:")) for j in ("j1", "j2"))
    assert note not in lexical[j1 + 1] and note in lexical[j2 + 1]


def test_labelled_items_whose_labels_tie_are_counted_and_said(judged_and_unjudged):
    run = judged_and_unjudged
    status = run("status").output
    assert any(line.split()[:2] == ["c3/lexical", "en"] and line.split()[-1] == "12" for line in status.splitlines())
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    lexical, pause = cells[("S", "c3/lexical", "en")], cells[("S", "c3/pause", "en")]
    assert (lexical["labelled"], lexical["tied"]) == (11, 1) and (pause["labelled"], pause["tied"]) == (12, 0)
    assert cells[("S", "(all)", "(all)")]["tied"] == 1
    text = " ".join(run("scores").output.split())
    assert "1 labelled item whose labels tie (no majority label): counted unlabelled here" in text
    rows = list(csv.DictReader(io.StringIO(run("scores", "--format", "csv").stdout)))
    assert {(r["task"], r["tied"]) for r in rows} == {("(all)", "1"), ("c3/lexical", "1"), ("c3/pause", "0")}


def test_the_csv_gives_each_figure_as_a_number_beside_its_text(judged_and_unjudged):
    run = judged_and_unjudged
    text = run("scores", "--format", "csv").stdout
    header = next(csv.reader(io.StringIO(text)))
    assert header[:14] == ["system", "task", "lang", "judge", "items", "judged", "labelled", "C3 rule",
                           "parser (unparsed, errors wrong)", "parser (unparsed, errors left out)", "people", "corrected",
                           "Rogan–Gladen", "more labels"] and header[-1] == "note"
    rows = {(r["task"], r["judge"]): r for r in csv.DictReader(io.StringIO(text))}
    cell = cells_by(json.loads(run("scores", "--format", "json").output))[("S", "c3/lexical", "en")]
    (j1,) = [j for j in cell["judges"] if j["judge"] == "j1"]
    row = rows[("c3/lexical", "j1")]
    assert row["corrected"] == "57% [50%, 58%]"
    assert [float(row[f"corrected_{k}"]) for k in ("value", "low", "high")] == [j1["corrected"]["value"], *j1["corrected"]["ci"]]
    # j1 agrees with every item labelled yes: no Rogan-Gladen (its interval would take the judge as never wrong there)
    assert row["rogan_gladen_value"] == row["rogan_gladen_low"] == "" and j1["rogan_gladen"]["value"] is None
    assert "agrees with every labelled item labelled 'yes'" in j1["rogan_gladen"]["reason"]
    assert [float(row[f"people_{k}"]) for k in ("value", "low", "high")] == [cell["people"]["value"], *cell["people"]["ci"]]
    assert float(row["c3_rule_accuracy"]) == float(row["parser_unparsed_wrong_accuracy"]) == 8 / 12
    assert float(rows[("c3/lexical", "j2")]["parser_unparsed_left_out_accuracy"]) == 1.0
    assert rows[("c3/lexical", "j2")]["rogan_gladen_value"] == "" and rows[("c3/pause", "(no judge)")]["corrected_low"] == ""


def test_the_ranking_orders_only_systems_the_interval_separates(tmp_path, two_systems_two_judges):
    path, _, _ = two_systems_two_judges
    assert "c3/lexical en, by mean of judges: strong > weak" in Calibrate(path)("scores").output
    run = Calibrate(tmp_path / "close.db")
    for system, right in (("A", 12), ("B", 10)):  # 12 and 10 right of 20, every item labelled: no difference shown
        items = tmp_path / f"{system}.jsonl"
        items.write_text("".join(json.dumps({"id": f"{system}{i}", "content": "c", "notation": "n", "response": "r",
                                             "j": f"The answer is: {'yes' if i < right else 'no'}."}) + "\n"
                                 for i in range(20)))
        run("import", "jsonl", str(items), "--task", "c3/lexical", "--lang", "en", "--system", system,
            "--judge-output", "j", "--judge-name", "jj")
    labels = tmp_path / "labels.csv"
    labels.write_text("system,task,lang,source_id,annotator,label\n" + "".join(
        f"{s},c3/lexical,en,{s}{i},ana,{'yes' if i < right else 'no'}\n" for s, right in (("A", 12), ("B", 10))
        for i in range(0, 20, 2)))
    run("import", "labels", str(labels))
    text = " ".join(run("scores").output.split())
    assert "c3/lexical en, by jj: A ≈ B" in text and "A > B" not in text
    assert "(the interval includes 0: no difference shown)" in text and "not a real difference" not in text


def test_the_parser_figure_without_missing_verdicts_names_the_unparsed_and_the_errors_it_leaves_out(tmp_path):
    path = tmp_path / "left.db"
    store = Store(path)
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": f"s{k}", "notation": "n", "response": "r"},
                                      system="m") for k in range(6)], with_ids=True)
    statuses = ["verdict", "verdict", "verdict", "unparsed", "error", "error"]
    store.add_judgments([NewJudgment(item_id=i, judge_name="jj", judge_key="k", status=status,
                                     verdict="yes" if status == "verdict" else None)
                         for i, status in zip(ids, statuses, strict=True)])
    for i in ids:
        store.annotate(i, "ana", "label", label="yes")
    store.close()
    run = Calibrate(path)
    text = " ".join(run("scores").output.split())
    assert "parser 3/6 50% (3/3 100% without 1 unparsed and 2 errors)" in text
    (judge,) = cells_by(json.loads(run("scores", "--format", "json").output))[("m", "c3/lexical", "en")]["judges"]
    assert (judge["unparsed"], judge["errors"]) == (1, 2)
    row = next(csv.DictReader(io.StringIO(run("scores", "--format", "csv").stdout)))
    assert row["parser (unparsed, errors left out)"] == "3/3 100% without 1 unparsed and 2 errors"


def test_outputs_read_differently_are_shown_ten_at_a_time_and_listed_whole_in_json(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": f"a{i}", "content": f"s{i}", "notation": "n", "response": "r",
                                         "j": "the answer is：yes"}) + "\n" for i in range(14)), encoding="utf-8")
    run = Calibrate(tmp_path / "many.db")
    run("import", "jsonl", str(items), "--task", "c3/intonation", "--lang", "en", "--judge-output", "j",
        "--judge-name", "jj", "--system", "m")
    why = json.loads(run("scores", "--format", "json").output)["why_the_c3_rule_differs"]
    assert len(why) == 14
    for fmt in ("table", "markdown"):
        text = " ".join(run("scores", "--format", fmt).output.split())
        assert text.count("C3's rule says wrong") == 10
        assert "… and 4 more outputs (14 in all):" in text and "--format json" in text and "lists every one" in text


def test_the_notes_name_labels_and_verdicts_as_people_gave_them_and_count_in_the_singular(tmp_path):
    """An inverted judge (Se + Sp - 1 below 0) is said to run against the labels; a cell labelled
    all '是' names that label (not "1") and says the value is withheld too; two judges saying only
    '是' are named with it (not 'right'); one error is "1 error"; the JSON counts the pairs' items
    left out for an error apart from those left out for an unparsed output; the CSV says on
    stderr what only the JSON has."""
    path = tmp_path / "words.db"
    store = Store(path)
    en, _ = store.add_items([NewItem("c3/lexical", "en", f"e{k}", {"content": f"s{k}", "notation": "n", "response": "r"},
                                     system="m") for k in range(20)], with_ids=True)
    zh, _ = store.add_items([NewItem("c3/pause", "zh", f"z{k}", {"content": f"s{k}", "notation": "n", "response": "r"},
                                     system="m") for k in range(12)], with_ids=True)
    j1 = ["yes"] * 10 + ["no"] * 9 + [None]  # the last one failed (an error)
    j2 = ["yes"] * 18 + ["??", "yes"]  # e18 unparsed
    judgments = []
    for name, verdicts in (("j1", j1), ("j2", j2)):
        for i, v in zip(en, verdicts, strict=True):
            status = "error" if v is None else "unparsed" if v == "??" else "verdict"
            judgments.append(NewJudgment(item_id=i, judge_name=name, judge_key=name, status=status,
                                         verdict=v if status == "verdict" else None))
        judgments += [NewJudgment(item_id=i, judge_name=name, judge_key=name, status="verdict", verdict="是")
                      for i in zh]
    store.add_judgments(judgments)
    for k, i in enumerate(en):  # people say no where j1 says yes, and yes where it says no
        store.annotate(i, "ana", "label", label="yes" if k == 0 or k >= 10 else "no")
    for i in zh:
        store.annotate(i, "ana", "label", label="是")
    store.close()
    run = Calibrate(path)
    text = " ".join(run("scores").output.split())
    assert "Se + Sp - 1 = -0.91 is below 0: the judge's verdicts run against the labels" in text
    assert "barely" not in text
    assert ("all 12 labelled items are labelled '是', none '否': from labels of one class the spread of the labels "
            "is unknown, so no value and no interval") in text
    assert "zh: j1 vs j2, n=12: κ — (both raters used only '是'" in text
    assert "without 1 error)" in text and "1 errors" not in text
    pairs = {p["scope"]: p for p in json.loads(run("scores", "--format", "json").output)["judge_pairs"]}
    assert {k: pairs["en"][k] for k in ("n", "left_out", "left_out_unparsed", "left_out_errors")} == {
        "n": 18, "left_out": 2, "left_out_unparsed": 1, "left_out_errors": 1}
    csv_run = run("scores", "--format", "csv")
    assert "`--format json` also has" in csv_run.stderr and "judge against judge (judge_pairs)" in csv_run.stderr
    assert "judge_pairs" not in csv_run.stdout


def test_on_rubric_scores_alone_scores_and_trust_say_what_they_would_need_and_what_to_run(tmp_path):
    from tests.test_report import two_scorers_db

    two_scorers_db(tmp_path / "r.db")
    run = Calibrate(tmp_path / "r.db")
    scores = run("scores", ok=False)
    assert scores.exit_code == 1
    assert "would need a right/wrong verdict per item; `calibrate report` shows how the judge's scores follow" \
        in " ".join(scores.output.split())
    trust = run("trust", ok=False)
    words = " ".join(trust.output.split())
    assert trust.exit_code == 1 and "run calibrate judge first" not in words, "the judge did run"
    assert "the judge verdicts are scores (rubric/reference zh (ds)): a score is not a yes/no or label verdict" in words
    assert "trust needs a yes/no or label verdict with a confidence" in words and "run calibrate report" in words


def test_record_people_and_corrected_count_correct_labels_as_right(tmp_path):
    # 12 ReCoRD queries: the system answers 8 with the gold entity (Alice) and 4 with another (Bob); ana labels 7 of
    # the 8 correct (one stricter than the rule) and the 4 incorrect. By hand: parser 8/12; people 7/12; every item
    # labelled, so corrected = within 'correct' 7/8 x 8/12 + within 'incorrect' 0/4 x 4/12 = 7/12
    text = "Alice met Bob in Paris."
    entities = [{"start": text.index(e), "end": text.index(e) + len(e) - 1} for e in ("Alice", "Bob", "Paris")]
    rows = [{"idx": k, "source": "s", "passage": {"text": text, "entities": entities},
             "qas": [{"query": f"@placeholder met Bob ({k}).", "idx": 0, "answers": [{**entities[0], "text": "Alice"}]}]}
            for k in range(12)]
    (tmp_path / "record.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "my-llm").mkdir()
    (tmp_path / "my-llm" / "record.jsonl").write_text("".join(
        json.dumps({"idx": {"passage": k, "query": 0}, "response": "Alice" if k < 8 else "Bob"}) + "\n"
        for k in range(12)), encoding="utf-8")
    (tmp_path / "labels.csv").write_text("task,lang,system,source_id,annotator,label\n" + "".join(
        f"superglue/record,en,my-llm,{k}/0,ana,{'correct' if k < 7 else 'incorrect'}\n" for k in range(12)))
    run = Calibrate(tmp_path / "r.db")
    run("import", "superglue", "--task", "record", str(tmp_path / "record.jsonl"), "--predictions",
        str(tmp_path / "my-llm" / "record.jsonl"))
    run("judge", "--judge", "rule")
    run("import", "labels", str(tmp_path / "labels.csv"))
    cell = next(c for c in json.loads(run("scores", "--format", "json").output)["cells"]
                if c["task"] == "superglue/record")
    (judge,) = cell["judges"]
    assert judge["parser_unparsed_wrong"] == {"right": 8, "n": 12, "accuracy": 8 / 12}
    assert cell["labelled"] == 12 and cell["people"]["value"] == pytest.approx(7 / 12)
    assert judge["corrected"]["value"] == pytest.approx(7 / 12)
    assert "people 58%" in run("scores").output


def test_items_without_gold_are_left_out_of_every_accuracy_and_counted(tmp_path):
    # a BoolQ test split (no labels) answered by my-llm, and two CB validation items it answered right; ana labels the
    # BoolQ answers too: no figure counts them right or wrong, the overall row is CB's alone, a note counts them
    boolq = [{"question": f"q{k}", "passage": "p", "idx": k} for k in range(3)]
    cb = [{"premise": f"p{k}", "hypothesis": "h", "idx": k, "label": "neutral"} for k in range(2)]
    run = superglue_answered_by_my_llm(tmp_path / "t.db", boolq=(boolq, "False"), cb=(cb, "neutral"))
    run("judge", "--judge", "rule")
    (tmp_path / "labels.csv").write_text("task,lang,system,source_id,annotator,label\n" + "".join(
        f"superglue/boolq,en,my-llm,{k},ana,False\n" for k in range(3)))
    run("import", "labels", str(tmp_path / "labels.csv"))
    out = run("scores", "--format", "json")
    cells = {c["task"]: c for c in json.loads(out.output)["cells"]}
    test_split, overall = cells["superglue/boolq"], cells["(all)"]
    assert test_split["no_gold"] == 3 and test_split["labelled"] == 0 and test_split["people"]["value"] is None
    assert test_split["judges"][0]["judged"] == 3
    assert test_split["judges"][0]["parser_unparsed_wrong"] == {"right": 0, "n": 0, "accuracy": None}
    assert test_split["judges"][0]["corrected"]["value"] is None
    assert overall["no_gold"] == 3 and overall["judges"][0]["parser_unparsed_wrong"] == {"right": 2, "n": 2, "accuracy": 1.0}
    table = run("scores", "--by", "system,task").output
    assert "0/3" not in table and "rule: parser —" in table
    assert "3 judged or labelled items without a gold label (a test split's): neither right nor wrong" in " ".join(table.split())


LEXICAL, GENERATION = "ambiguity/semantic/lexical", "ambiguity/phonological/generation"


def _judged_and_decided(tmp_path, generation_labels: list[str | None]) -> Calibrate:
    """System m: 40 lexical items the judge says yes on 30 of, every one labelled (right on 24 of
    the 30 yes, 8 of the 10 no), and 10 generation items people decide, labelled as given."""
    run = Calibrate(tmp_path / "decided.db")
    lexical, generation = tmp_path / "lexical.jsonl", tmp_path / "generation.jsonl"
    lexical.write_text("".join(json.dumps({"id": f"{LEXICAL}/{i}", "content": f"s{i}", "notation": "n", "response": "r",
                                           "j": f"The answer is: {'yes' if i < 30 else 'no'}."}) + "\n"
                               for i in range(40)))
    generation.write_text("".join(json.dumps({"id": f"{GENERATION}/{i}", "content": f"g{i}", "notation": "n", "response": "r"})
                                  + "\n" for i in range(10)))
    run("import", "jsonl", str(lexical), "--task", "c3/lexical", "--lang", "en", "--judge-output", "j",
        "--judge-name", "jj", "--system", "m")
    run("import", "jsonl", str(generation), "--task", "c3/generation", "--lang", "en", "--system", "m")
    right = [i < 24 or 30 <= i < 32 for i in range(40)]  # yes right on 24 of 30; no right on 2 of 10 (wrong on 8)
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,source_id,annotator,label\n"
                      + "".join(f"c3/lexical,en,{LEXICAL}/{i},ana,{'yes' if ok else 'no'}\n" for i, ok in enumerate(right))
                      + "".join(f"c3/generation,en,{GENERATION}/{i},ana,{v}\n" for i, v in enumerate(generation_labels) if v))
    run("import", "labels", str(labels))
    return run


def test_a_row_with_items_people_decide_corrects_over_the_same_items_as_its_accuracies(tmp_path):
    """C3 counts its generation items (people decide them) in every accuracy; the corrected
    figures of a row that holds them count them too, by their label, so that the row's figures
    are over the same items: with every item labelled, corrected and people's agree exactly."""
    run = _judged_and_decided(tmp_path, ["yes"] * 7 + ["no"] * 3)
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    (judge,) = cells[("m", "(all)", "(all)")]["judges"]
    people = cells[("m", "(all)", "(all)")]["people"]
    assert judge["parser_unparsed_wrong"]["n"] == 50, "the accuracies count the 10 generation items"
    assert judge["corrected"]["value"] == pytest.approx((26 + 7) / 50) == pytest.approx(people["value"])
    assert judge["corrected"]["n_total"] == 50 and judge["people_decided"] == {"items": 10, "right": 7, "unlabelled": 0}
    lexical = cells[("m", "c3/lexical", "en")]["judges"][0]
    assert lexical["corrected"]["value"] == pytest.approx(26 / 40) and lexical["people_decided"] is None


def test_unlabelled_items_people_decide_widen_the_corrected_interval_and_a_note_says_so(tmp_path):
    """The accuracies count an unlabelled generation item wrong, as C3 does; the corrected figure
    estimates it from the labelled ones (a stratum of its own), so it widens the interval until
    it is labelled, and no figure claims a precision the labels do not give."""
    run = _judged_and_decided(tmp_path, ["yes"] * 6 + ["no"] * 2 + [None] * 2)
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    (judge,) = cells[("m", "(all)", "(all)")]["judges"]
    corrected = judge["corrected"]
    assert judge["parser_unparsed_wrong"] == {"right": 36, "n": 50, "accuracy": 36 / 50}, "30 by verdict, 6 by label"
    assert corrected["value"] == pytest.approx((26 + 6 + 2 * 6 / 8) / 50)  # the lexical items are all labelled
    assert 32 / 50 <= corrected["ci"][0] < corrected["value"] < corrected["ci"][1] <= 34 / 50
    assert judge["people_decided"] == {"items": 10, "right": 6, "unlabelled": 2}
    assert judge["rogan_gladen"]["value"] is None and "the corrected column counts both" in judge["rogan_gladen"]["reason"]
    text = " ".join(run("scores").output.split())
    assert ("the corrected figure counts the row's 10 items people decide by their label (6 of 8 right; the 2 "
            "unlabelled ones estimated from those labels, where the accuracies count them wrong)") in text


def test_the_mean_of_judges_counts_only_the_items_people_decide_that_its_judges_count(tmp_path):
    """Generation items of a language no judge judges stay out of the judges' figures, so out of
    their mean's corrected figure too."""
    run = _judged_and_decided(tmp_path, ["yes"] * 7 + ["no"] * 3)
    chinese = tmp_path / "zh.jsonl"
    chinese.write_text("".join(json.dumps({"id": f"zh{i}", "content": "内容", "annotation": "注"}) + "\n"
                               for i in range(30)))
    run("import", "jsonl", str(chinese), "--task", "c3/generation-pause", "--lang", "zh", "--system", "m")
    second = tmp_path / "second.jsonl"
    second.write_text("".join(json.dumps({"id": f"{LEXICAL}/{i}", "content": f"s{i}", "notation": "n", "response": "r",
                                          "j": "The answer is: yes."}) + "\n" for i in range(40)))
    run("import", "jsonl", str(second), "--task", "c3/lexical", "--lang", "en", "--judge-output", "j",
        "--judge-name", "kk", "--system", "m")
    cells = cells_by(json.loads(run("scores", "--format", "json").output))
    row = cells[("m", "(all)", "(all)")]
    totals = {j["judge"]: (j["parser_unparsed_wrong"]["n"], j["corrected"]["n_total"]) for j in row["judges"]}
    assert totals == {"jj": (50, 50), "kk": (50, 50)}
    assert row["final"]["corrected"]["n_total"] == 50 and row["final"]["people_decided"]["items"] == 10


def test_export_c3s_overall_corrected_figure_counts_the_generation_items_as_its_people_figure_does(tmp_path):
    run = _judged_and_decided(tmp_path, ["yes"] * 7 + ["no"] * 3)
    out = tmp_path / "c3"
    run("export", "c3", str(out), "--lang", "en", "--judge", "jj", "--system", "m")
    (overall,) = [row for row in json.loads((out / "statistics" / "english_result_data.json").read_text())
                  if row["category"] == "overall"]
    assert overall["corrected_accuracy"] == overall["people_accuracy"] == round((26 + 7) / 50, 4)
    assert overall["corrected_people_decided"] == {"items": 10, "right": 7, "unlabelled": 0}


def test_the_note_on_items_people_decide_says_how_they_count_with_or_without_labels():
    from calibrate.scores.model import Decided

    assert Decided(10, 7, 0).words().endswith("people decide by their label (7 of 10 right)")
    assert "(6 of 8 right; the 2 unlabelled ones estimated from those labels" in Decided(10, 6, 2).words()
    assert "(none is labelled: their accuracy is taken as 1/2, with the prior's full uncertainty" in \
        Decided(10, 0, 10).words()
