"""Judge reliability in the product: repeats and their flip rate, calibration against people,
trust or escalate, the length and per-system probes, from the store through the CLI."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from scipy import stats

from calibrate.model import NewItem, NewJudgment
from calibrate.stats.trust_or_escalate import detectable_shortfall, minimum_calibration
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.fake_openai import FakeOpenAI, Reply

YES, NO = Reply("The answer is: yes."), Reply("The answer is: no.")


def lexical_items(store: Store, n: int, lengths=None) -> list[int]:
    lengths = lengths if lengths is not None else [10] * n
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": f"sentence {k}", "notation": "n",
                                                                   "response": "r" * lengths[k]})
                              for k in range(n)], with_ids=True)
    return ids


def label_all(store: Store, ids, labels, annotator="ana") -> None:
    for item_id, label in zip(ids, labels, strict=True):
        store.annotate(item_id, annotator, "label", label=label)


def report_cell(path, *args) -> dict:
    (cell,) = json.loads(Calibrate(path)("report", "--format", "json", "--reliability", *args).output)["cells"]
    return cell


def judge(run: Calibrate, server: FakeOpenAI, *extra: str, ok: bool = True):
    return run("judge", "--model", "fake-judge", "--base-url", server.url, "--max-retries", "0", *extra, ok=ok)


def test_flip_rate_equals_the_scripted_one_and_confidence_comes_from_repeats(tmp_path):
    path = tmp_path / "r.db"
    store = Store(path)
    ids = lexical_items(store, 10)
    label_all(store, ids, ["yes"] * 10)
    store.close()
    flipping = {f"sentence {k}": [YES, NO, YES] for k in range(3)}  # 3 of 10 items change their verdict
    with FakeOpenAI(YES, by_content=flipping) as server:
        out = judge(Calibrate(path), server, "--repeat", "3", "--concurrency", "1")
    assert "--repeat 3 at temperature 0: the repeats will agree by construction" in out.output
    cell = report_cell(path)
    table = " ".join(Calibrate(path)("report", "--reliability").output.split())
    assert "consistency over 3 repeats at temperature 0 on 10 items (at temperature 0 repeats agree by construction" \
        in table
    consistency = cell["reliability"]["consistency"]
    assert consistency["items"] == 10 and consistency["flip_rate"]["value"] == pytest.approx(0.3)
    assert cell["reliability"]["unstable_items"] == ids[:3]
    row = cell["lines"][0]
    assert row["repeats"] == 3 and row["flip_rate"] == pytest.approx(0.3) and row["unstable_items"] == 3
    assert row["repeat_temperature"] == "temperature 0"
    assert row["flip_rate_low"] < 0.3 < row["flip_rate_high"]
    # confidence = share of the 3 repeats giving the majority: 2/3 on the unstable items, 1 elsewhere;
    # every majority verdict is "yes" as people said, so ECE = 3/10 * |1 - 2/3| = 0.1
    assert row["calibration_items"] == 10 and row["ece"] == pytest.approx(0.1)
    assert row["brier"] == pytest.approx(3 * (1 / 3) ** 2 / 10)


# (confidence from logprobs, verdict, human label) for the hand computation of ECE and Brier
LOGPROB_CASES = [(0.95, "yes", "yes"), (0.95, "yes", "yes"), (0.88, "yes", "no"), (0.85, "yes", "yes"),
                 (0.75, "yes", "yes"), (0.75, "yes", "no"), (0.65, "yes", "no"), (0.55, "yes", "yes")]


def test_runs_asking_for_different_numbers_of_repeats_are_told_as_they_are(tmp_path):
    path = tmp_path / "r.db"
    store = Store(path)
    ids = lexical_items(store, 6)
    label_all(store, ids, ["yes"] * 6)
    store.close()
    run = Calibrate(path)
    with FakeOpenAI(YES) as server:
        judge(run, server, "--repeat", "3", "--temperature", "0.7", "--limit", "2")
        judge(run, server, "--repeat", "2", "--temperature", "0.7")
        assert "consistency over 2-3 repeats at temperature 0.7 on 6 items" in \
            " ".join(run("report", "--reliability").output.split())
        assert report_cell(path)["reliability"]["fewest_repeats"] == 2
        out = judge(run, server, "--repeat", "4", "--temperature", "0.7")
    assert server.count == 6 + 8 + 2 * 1 + 4 * 2
    assert "6 items, 10 samples to ask (up to 4 per item: those not yet stored)" in " ".join(out.output.split())


def test_ece_from_logprobs_equals_a_hand_computation(tmp_path):
    path = tmp_path / "c.db"
    store = Store(path)
    ids = lexical_items(store, len(LOGPROB_CASES))
    label_all(store, ids, [human for _, _, human in LOGPROB_CASES])
    store.close()
    replies = {f"sentence {k}": Reply(f"The answer is: {verdict}.", logprobs=[(" yes", math.log(p)), (".", -0.01)])
               for k, (p, verdict, _) in enumerate(LOGPROB_CASES)}
    with FakeOpenAI(by_content=replies) as server:
        judge(Calibrate(path), server, "--logprobs")
    row = report_cell(path)["lines"][0]
    # bins of width 0.1: (0.9, 1] 2 items conf .95 all right: 2 x .05; (0.8, 0.9] conf .865 half right:
    # 2 x .365; (0.7, 0.8] conf .75 half right: 2 x .25; (0.6, 0.7] .65 wrong: .65; (0.5, 0.6] .55 right: .45
    assert row["ece"] == pytest.approx((0.1 + 0.73 + 0.5 + 0.65 + 0.45) / 8)
    brier = (2 * 0.05**2 + 0.88**2 + 0.15**2 + 0.25**2 + 0.75**2 + 0.65**2 + 0.45**2) / 8
    assert row["brier"] == pytest.approx(brier) and row["brier_low"] is None, "8 items: no interval"
    assert row["repeats"] == 1 and row["flip_rate"] is None, "one sample per item: no consistency to show"


def confident_db(path, groups) -> None:
    """groups: (n items, stored confidence, how many of them the judge gets right)."""
    store = Store(path)
    n = sum(g[0] for g in groups)
    ids = lexical_items(store, n)
    judgments, labels, k = [], [], 0
    for size, confidence, right in groups:
        for m in range(size):
            judgments.append(NewJudgment(item_id=ids[k], judge_name="gpt", judge_key="g", status="verdict",
                                         verdict="yes", confidence=confidence))
            labels.append("yes" if m < right else "no")
            k += 1
    store.add_judgments(judgments)
    label_all(store, ids, labels)
    store.close()


def test_trust_finds_the_hand_computed_threshold(tmp_path):
    path = tmp_path / "t.db"
    confident_db(path, [(40, 0.95, 40), (20, 0.7, 10)])
    run = Calibrate(path)
    (found,) = json.loads(run("trust", "--target", "0.9", "--risk", "0.1", "--min-labels", "22", "--format", "json").output)
    # by hand: above 0.95 no item (fewer than ceil(log .1 / log .9) = 22, passed over); at 0.95 ... 0.701
    # the 40 items all agree: Clopper-Pearson lower bound .1^(1/40) = 0.944 >= 0.9, rejected; at 0.700 the
    # 60 items with 50 agreeing give Beta(.1; 50, 11) < 0.9, so testing stops: the threshold is 0.701
    assert stats.beta.ppf(0.1, 50, 11) < 0.9
    assert found["met"] is True and found["threshold"] == pytest.approx(0.701)
    assert found["accepted"] == 40 and found["coverage"] == pytest.approx(40 / 60)
    assert found["lower_bound"] == pytest.approx(0.1 ** (1 / 40)) and "guaranteed" not in found
    assert found["shortfall"] == pytest.approx(detectable_shortfall(40, 0.9, 0.1)) and found["min_calibration"] == 22
    table = run("trust", "--min-labels", "22").output
    assert "0.701" in table and "67% (40)" in table and "0.944" in table and "0.118" in table
    assert "lower bound" in table and "guaranteed" not in table
    assert "the simulated minimum is 198" in " ".join(table.split()), "an override below the minimum is said"
    assert "threshold 0.701: the labelled items it accepts have confidences from 0.950 up, and none lies between" \
        in " ".join(table.split()), "a threshold far below what its labelled items show is said"


def test_trust_says_nothing_of_a_threshold_at_the_confidences_it_accepts(tmp_path):
    path = tmp_path / "t.db"
    confident_db(path, [(40, 0.95, 40), (20, 0.9485, 10)])  # the grid's 0.949 accepts the 40 and no more
    table = " ".join(Calibrate(path)("trust", "--min-labels", "22").output.split())
    assert "0.949" in table and "67% (40)" in table and "none lies between" not in table, "one step of the grid is not far"


def test_trust_refuses_below_the_minimum_calibration_by_default(tmp_path):
    """60 labelled items are too few to certify by default (198 at target 0.9, risk 0.1); the
    table says what is guaranteed, and why there is no threshold."""
    path = tmp_path / "t.db"
    confident_db(path, [(40, 0.95, 40), (20, 0.7, 10)])
    run = Calibrate(path)
    assert minimum_calibration(0.9, 0.1) == 198
    (found,) = json.loads(run("trust", "--format", "json").output)
    assert found["met"] is False and found["threshold"] is None and found["min_calibration"] == 198
    assert found["reason"].startswith("60 labelled items: at least 198 are needed")
    table = " ".join(run("trust").output.split())
    assert "at most 1 in 10 of the repetitions would certify a threshold at which the judge agrees with people " \
           "less than 90% of the time" in table
    assert "not the chance that this threshold is right" in table and "fewer than 198 labelled items" in table
    assert "198 at 0.9 and 0.1" in " ".join(run("trust", "--help").output.split()), "--help names the default"


def test_trust_certifies_from_the_minimum_calibration(tmp_path):
    path = tmp_path / "t.db"
    confident_db(path, [(160, 0.95, 160), (80, 0.7, 40)])
    (found,) = json.loads(Calibrate(path)("trust", "--format", "json").output)
    assert found["met"] is True and found["threshold"] == pytest.approx(0.701) and found["accepted"] == 160
    assert found["lower_bound"] == pytest.approx(0.1 ** (1 / 160))
    assert found["shortfall"] == pytest.approx(detectable_shortfall(160, 0.9, 0.1))


def test_trust_refuses_when_the_target_cannot_be_met(tmp_path):
    path = tmp_path / "t.db"
    confident_db(path, [(40, 0.95, 32), (20, 0.7, 10)])
    (found,) = json.loads(Calibrate(path)("trust", "--min-labels", "0", "--format", "json").output)
    assert found["met"] is False and found["threshold"] is None
    assert found["best_lower_bound"] == pytest.approx(stats.beta.ppf(0.1, 32, 9))
    assert "no threshold meets the target 0.9 at risk 0.1" in Calibrate(path)("trust", "--min-labels", "0").output


def test_an_unparsed_repeat_counts_against_the_confidence_and_a_failed_call_does_not(tmp_path):
    """Repeats by hand (people: yes on A, C, D, E; no on B):
    A 10 items yes yes yes: 3/3 = 1;         B 10 items yes yes unparsed: 2/3, wrong;
    C 4 items yes yes failed: 2/2 = 1;       D 2 items yes unparsed unparsed: 1/3;
    E 1 item yes failed failed: one answer, no confidence (left out of trust, and said)."""
    path = tmp_path / "r.db"
    store = Store(path)
    ids = lexical_items(store, 27)
    label_all(store, ids, ["yes"] * 10 + ["no"] * 10 + ["yes"] * 7)
    store.close()
    unreadable, failed = Reply("I would rather not say."), Reply(status=500)
    scripts = {**{k: [YES, YES, unreadable] for k in range(10, 20)}, **{k: [YES, YES, failed] for k in range(20, 24)},
               **{k: [YES, unreadable, unreadable] for k in (24, 25)}, 26: [YES, failed, failed]}
    run = Calibrate(path)
    with FakeOpenAI(YES, by_content={f"sentence {k}": replies for k, replies in scripts.items()}) as server:
        judge(run, server, "--repeat", "3", "--concurrency", "1", ok=False)
    assert report_cell(path)["lines"][0]["n"] == 27, "every item has the verdict yes: the report counts 27"
    (found,) = json.loads(run("trust", "--target", "0.6", "--min-labels", "0", "--format", "json").output)
    # A and C at 1, all agreeing: at 1.000 ... 0.667 the 14 items give the Clopper-Pearson bound .1^(1/14) = 0.848
    # >= 0.6; at 0.666 B joins (14 of 24 agree, bound below 0.6) and testing stops
    assert found["n"] == 26 and found["without_confidence"] == 1
    assert found["met"] is True and found["threshold"] == pytest.approx(0.667) and found["accepted"] == 14
    assert found["lower_bound"] == pytest.approx(0.1 ** (1 / 14)) and found["agreement"] == 1
    table = " ".join(run("trust", "--target", "0.6", "--min-labels", "0").output.split())
    assert "1 labelled item with a verdict has no confidence (no logprob stored, nor two or more repeats that " \
           "answered: a failed call is no answer) and is left out of n" in table
    # ECE: bin (0.9, 1] 14 items all right: 0; (0.6, 0.7] 10 at 2/3 all wrong; (0.3, 0.4] 2 at 1/3 both right
    row = report_cell(path)["lines"][0]
    assert row["calibration_items"] == 26
    assert row["ece"] == pytest.approx((10 * 2 / 3 + 2 * 2 / 3) / 26)
    assert row["brier"] == pytest.approx((10 + 2) * (2 / 3) ** 2 / 26)
    # the export's trust marks accept those 14 (the escalate order takes the same marks: see
    # test_escalate_order_and_export_marks_follow_the_trust_threshold)
    export = run("export", "--target", "0.6", "--min-labels", "0").stdout.splitlines()
    marks = [json.loads(line)["trust"]["fake-judge"] for line in export]
    assert [k for k, mark in enumerate(marks) if mark == "accepted"] == [*range(10), *range(20, 24)]


def length_db(path, *, biased: bool, n: int = 80) -> None:
    rng = np.random.default_rng(7)
    lengths = rng.integers(20, 400, n).tolist()
    human = rng.random(n) < 0.5
    z = (np.array(lengths) - np.mean(lengths)) / np.std(lengths)
    if biased:  # the judge follows people, plus a strong pull towards "yes" for longer answers
        judge_yes = rng.random(n) < 1 / (1 + np.exp(-(-1.5 + 3 * human + 2.0 * z)))
    else:  # the judge follows people with 20 % random errors, whatever the length
        judge_yes = np.where(rng.random(n) < 0.8, human, ~human)
    store = Store(path)
    ids = lexical_items(store, n, lengths)
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict",
                                     verdict="yes" if y else "no") for i, y in zip(ids, judge_yes, strict=True)])
    label_all(store, ids, ["yes" if h else "no" for h in human])
    store.close()


def test_length_probe_detects_a_scripted_length_bias(tmp_path):
    length_db(tmp_path / "l.db", biased=True)
    cell = report_cell(tmp_path / "l.db")
    row = cell["lines"][0]
    assert row["length_bias_low"] > 0 and row["length_bias_verdict"] == "says yes more for longer answers than people do"
    assert cell["reliability"]["length_bias"]["n"] == 80


def test_length_probe_finds_none_on_unbiased_data(tmp_path):
    length_db(tmp_path / "l.db", biased=False)
    row = report_cell(tmp_path / "l.db")["lines"][0]
    assert row["length_bias_low"] < 0 < row["length_bias_high"]
    assert row["length_bias_verdict"] == "no evidence of a length bias"


def test_reliability_notes_in_the_terminal_report(tmp_path):
    length_db(tmp_path / "l.db", biased=True)
    out = Calibrate(tmp_path / "l.db")("report", "--reliability").output
    assert "length bias on 80 items" in out and "says yes more for longer answers" in out


def test_html_report_draws_the_reliability_diagram_inline(tmp_path):
    path = tmp_path / "c.db"
    confident_db(path, [(30, 0.95, 28), (20, 0.65, 12)])
    out = tmp_path / "r.html"
    Calibrate(path)("report", "--format", "html", "--out", str(out))
    page = out.read_text(encoding="utf-8")
    assert 'aria-label="reliability diagram"' in page and "<script" not in page
    assert "30 items, agreement 0.93" in page and "20 items, agreement 0.60" in page, "one bar per occupied bin"
    wide = Calibrate(path)("report", "--wide").output
    assert "ECE" in wide and "0.030" in wide  # (30 |28/30 - .95| + 20 |12/20 - .65|) / 50 = 1.5 / 50


def test_per_system_leniency_lights_up_when_items_name_their_system(tmp_path):
    path = tmp_path / "s.db"
    store = Store(path)
    ids = lexical_items(store, 80)
    human = ["yes" if k % 2 else "no" for k in range(80)]
    # on gpt-4o-mini's items the judge says yes to everything; on llama's it follows people
    judged = ["yes" if k < 40 else human[k] for k in range(80)]
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt-4o", judge_key="g", status="verdict", verdict=v)
                         for i, v in zip(ids, judged, strict=True)])
    label_all(store, ids, human)
    assert report_cell(path)["reliability"]["systems"] == {}, "no item names a system: no per-system probe"
    store.conn.executemany("UPDATE items SET system = ? WHERE id = ?",
                           [("gpt-4o-mini" if k < 40 else "llama", i) for k, i in enumerate(ids)])
    store.close()
    cell = report_cell(path, "--family", "gpt-4o=openai", "--family", "gpt-4o-mini=openai", "--family", "llama=meta")
    systems = cell["reliability"]["systems"]
    assert systems["gpt-4o-mini"]["estimate"]["value"] == pytest.approx(0.5)
    assert systems["gpt-4o-mini"]["verdict"].startswith("lenient") and systems["gpt-4o-mini"]["same_family"] is True
    assert systems["llama"]["estimate"]["value"] == 0 and systems["llama"]["same_family"] is False
    assert systems["llama"]["verdict"] == "no evidence of a difference from people"
    out = Calibrate(path)("report", "--reliability", "--family", "gpt-4o=openai", "--family", "gpt-4o-mini=openai")
    assert "system gpt-4o-mini (judge and system of one model family)" in out.output


def test_family_flag_needs_name_and_family(tmp_path):
    result = Calibrate(tmp_path / "x.db")("report", "--family", "gpt-4o", ok=False)
    assert result.exit_code == 2 and "NAME=FAMILY" in result.output


def escalate_order(store: Store, templates) -> list[int]:
    """The item ids in the order `annotate --order escalate` shows them."""
    from calibrate.session import AnnotationSession

    session = AnnotationSession(store, templates, "bob", order="escalate", overlap=2)
    seen = [session.start().item.id]
    while True:
        session.decide("flag")  # flagged items, unlike skipped ones, do not come back at the end
        view = session.forward()
        if view is None:
            return seen
        seen.append(view.item.id)


def test_escalate_order_and_export_marks_follow_the_trust_threshold(tmp_path, templates):
    path = tmp_path / "t.db"
    confident_db(path, [(160, 0.95, 160), (80, 0.7, 40)])  # threshold 0.701: the first 160 items are accepted
    store = Store(path)
    ids = store.item_ids()
    assert escalate_order(store, templates) == ids[160:] + ids[:160], "the 80 items below the threshold go first"
    store.close()
    records = [json.loads(line) for line in Calibrate(path)("export").stdout.splitlines()]
    marks = [r["trust"]["gpt"] for r in records]
    assert marks == ["accepted"] * 160 + ["needs a person"] * 80
    strict = Calibrate(path)("export", "--target", "0.97")
    assert {json.loads(line)["trust"]["gpt"] for line in strict.stdout.splitlines()} == {"needs a person"}
    assert "fewer than 684 labelled items" in strict.stderr, "the minimum follows the target; said"
    out = tmp_path / "gold.csv"
    Calibrate(path)("export", "--format", "csv", "--out", str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["trust:gpt"] for r in rows] == marks


def test_escalate_and_export_refuse_below_the_minimum_calibration_and_say_so(tmp_path, templates):
    path = tmp_path / "t.db"
    confident_db(path, [(40, 0.95, 40), (20, 0.7, 10)])  # certified from 22 labels, refused by default
    store = Store(path)
    ids = store.item_ids()
    assert escalate_order(store, templates) == ids, "every item needs a person: in id order"
    from calibrate.session import AnnotationSession

    session = AnnotationSession(store, templates, "cy", order="escalate")
    session.start()
    (refused,) = session.trust_marks.refusals()  # what `annotate` says on stderr when the app closes
    assert refused[0] == "c3/lexical en (gpt)" and "fewer than 198 labelled items" in refused[1]
    store.close()
    default = Calibrate(path)("export")
    assert {json.loads(line)["trust"]["gpt"] for line in default.stdout.splitlines()} == {"needs a person"}
    said = " ".join(default.stderr.split())
    assert "no confidence threshold certified in 1 cell" in said and "fewer than 198 labelled items" in said
    fewer = Calibrate(path)("export", "--min-labels", "22")
    assert [json.loads(line)["trust"]["gpt"] for line in fewer.stdout.splitlines()] == \
        ["accepted"] * 40 + ["needs a person"] * 20
    assert fewer.stderr == ""


def test_jury_is_one_more_judge_in_the_report(tmp_path):
    path = tmp_path / "j.db"
    store = Store(path)
    ids = lexical_items(store, 6)
    human = ["yes", "yes", "no", "no", "yes", "no"]
    votes = {"a": ["yes", "no", "no", "yes", "yes", "no"],
             "b": ["yes", "yes", "yes", "no", None, "no"],
             "c": ["no", "yes", "no", "no", "no", "yes"]}
    # jury: yes, yes, no, no, tie (yes / no; b unparsed), no: 5 verdicts, all 5 agree with people
    store.add_judgments([NewJudgment(item_id=i, judge_name=name, judge_key=name, status="verdict" if v else "unparsed",
                                     verdict=v) for name, vs in votes.items() for i, v in zip(ids, vs, strict=True)])
    label_all(store, ids, human)
    store.close()
    report = json.loads(Calibrate(path)("report", "--format", "json").output)
    cells = {c["judge"]: c for c in report["cells"]}
    assert set(cells) == {"a", "b", "c", "jury"}
    jury = cells["jury"]
    assert jury["judged"] == 6 and jury["jury_ties"] == 1 and jury["unparsed"] == 0, "the tied item has no jury verdict"
    assert jury["lines"][0]["n"] == 5 and jury["lines"][0]["agreement"] == 1.0
    assert cells["a"]["lines"][0]["agreement"] == pytest.approx(4 / 6), "a member alone agrees less"
    only = json.loads(Calibrate(path)("report", "--format", "json", "--judge", "jury").output)
    assert [c["judge"] for c in only["cells"]] == ["jury"]
    assert [c["judge"] for c in json.loads(Calibrate(path)("report", "--format", "json", "--judge", "a").output)["cells"]] == ["a"]


def jury_of_two(tmp_path, outputs: dict[str, list], labels: list[str], more: dict[str, list[str]] | None = None):
    """Judges' outputs imported as `import jsonl --judge-output` does (None: a failed call) on 12
    c3/pause items, ana's labels and those of the annotators in `more`, into a new database."""
    run = Calibrate(tmp_path / "jury.db")
    for name, said in outputs.items():
        lines = tmp_path / f"{name}.jsonl"
        lines.write_text("".join(json.dumps({"id": f"q{i}", "content": "c", "notation": "n", "response": "r", "out": out})
                                 + "\n" for i, out in enumerate(said)))
        run("import", "jsonl", str(lines), "--task", "c3/pause", "--lang", "en", "--system", "s", "--judge-output", "out",
            "--judge-name", name)
    table = tmp_path / "labels.csv"
    table.write_text("task,lang,system,source_id,annotator,label,note\n"
                     + "".join(f"c3/pause,en,s,q{i},{who},{label},\n"
                               for who, given in {"ana": labels, **(more or {})}.items()
                               for i, label in enumerate(given)))
    run("import", "labels", str(table))
    return run


def test_a_tie_between_the_jurys_judges_is_a_tie_never_unparsed_nor_settled_by_unparsed(tmp_path):
    """The audit's case: j1 says yes on all 12 items, j2 yes on 6 and no on the other 6. The six
    where they disagree are ties: no output is unparsed, and --unparsed as-negative, which reads an
    unparsed output as "no", must not turn them into j2's "no"."""
    yes, no = "The answer is: yes.", "The answer is: no."
    run = jury_of_two(tmp_path, {"j1": [yes] * 12, "j2": [yes] * 6 + [no] * 6},
                      ["yes" if i % 4 else "no" for i in range(12)])
    for mode in ("exclude", "as-negative", "as-disagreement"):
        (jury,) = json.loads(run("report", "--judge", "jury", "--unparsed", mode, "--format", "json").output)["cells"]
        (line,) = jury["lines"]
        assert (line["n"], line["unparsed"], jury["unparsed"]) == (6, 0, 0), f"{mode}: the ties are left out"
        assert line["agreement"] == pytest.approx(4 / 6), "items 1-3 and 5 are yes, 0 and 4 no: j1 and j2 say yes"
        assert (jury["judged"], jury["jury_ties"], line["jury_ties"]) == (12, 6, 6), mode
    table = " ".join(run("report", "--judge", "jury", "--unparsed", "as-negative").output.split())
    assert "verdicts unparsed" not in table and "counted as the negative label" not in table
    assert "6 of 12 judged items tied (j1 and j2 gave different labels): no jury verdict, left out" in table
    assert "a jury of two judges gives a verdict only where both agree" in table
    assert "labelled items left out as ties: ana 6" in table
    (row,) = csv.DictReader(io.StringIO(run("report", "--judge", "jury", "--format", "csv").output))
    assert (row["n"], row["unparsed"], row["jury_ties"]) == ("6", "0", "6")
    for fmt in ("markdown", "html"):
        assert "6 of 12 judged items tied" in run("report", "--judge", "jury", "--format", fmt).output, fmt


def test_a_jury_tied_on_every_labelled_item_says_so_and_exits_1(tmp_path):
    run = jury_of_two(tmp_path, {"j1": ["The answer is: yes."] * 12, "j2": ["The answer is: no."] * 12}, ["yes"] * 12)
    refused = run("report", "--judge", "jury", "--unparsed", "as-negative", ok=False)
    assert refused.exit_code == 1
    assert "the jury's judges tie on it (12 labelled items tied, which --unparsed does not settle)" in " ".join(
        refused.output.split())
    beside = " ".join(run("report").output.split())
    assert "the jury's judges tie or give no parsed verdict on every labelled item (1): c3/pause en (jury: 12 tied, " \
           "0 unparsed)" in beside


def test_the_jurys_ties_stay_out_of_the_human_ceiling_whatever_unparsed_says(tmp_path):
    """On items two people labelled, the judge's side of the human ceiling leaves the ties out
    too: --unparsed as-negative must not read them as "no" there either."""
    yes, no = "The answer is: yes.", "The answer is: no."
    ana = ["yes" if i % 4 else "no" for i in range(12)]
    run = jury_of_two(tmp_path, {"j1": [yes] * 12, "j2": [no, yes, yes, yes, no, no] + [yes, no] * 3}, ana,
                      {"bob": ["no" if i in (0, 7) else label for i, label in enumerate(ana)]})
    ceilings = {mode: json.loads(run("report", "--judge", "jury", "--unparsed", mode, "--format", "json").output)
                ["cells"][0]["ceiling"]["judge"]["value"] for mode in ("exclude", "as-negative")}
    assert ceilings["exclude"] is not None and ceilings["as-negative"] == ceilings["exclude"]


def test_the_jury_counts_and_names_the_items_only_one_judge_judged(tmp_path):
    """The audit's second case: j1's calls failed on q0 and q1 (output null), so only j2 judged
    them: the jury leaves them out by its rule and says so, and its counts add up to j2's 12. An
    unparsed output of j1 (q2) is a judgment: there j2's label stands, nothing is left out."""
    said = lambda i: "The answer is: yes." if i % 3 else "The answer is: no."  # noqa: E731
    run = jury_of_two(tmp_path, {"j1": [None, None, "I cannot tell."] + [said(i) for i in range(3, 12)],
                                 "j2": [said(i) for i in range(12)]},
                      ["yes" if i % 3 else "no" for i in range(12)])
    table = " ".join(run("report").output.split())
    jury_part = table[table.index("c3/pause · en · jury"):]
    assert ("2 items left out: judged by one judge only (j1's calls failed); a failed call is no judgment, while an "
            "unparsed output is one: beside it the other judge's label stands") in jury_part
    cells = {c["judge"]: c for c in json.loads(run("report", "--format", "json").output)["cells"]}
    assert (cells["j1"]["judged"], cells["j1"]["errors"], cells["j1"]["unparsed"]) == (10, 2, 1)
    jury = cells["jury"]
    assert (jury["judged"], jury["unparsed"], jury["errors"], jury["jury_ties"]) == (10, 0, 0, 0), "q2: j2's label"
    assert (jury["jury_one_judge_only"], jury["jury_failed_calls"]) == (2, {"j1": 2})
    assert jury["judged"] + jury["jury_one_judge_only"] == cells["j2"]["judged"] == 12
    (line,) = jury["lines"]
    assert (line["n"], line["agreement"], line["jury_one_judge_only"]) == (10, 1.0, 2)
    rows = {r["judge"]: r for r in csv.DictReader(io.StringIO(run("report", "--format", "csv").output))}
    assert (rows["jury"]["n"], rows["jury"]["jury_one_judge_only"]) == ("10", "2")
    for fmt in ("markdown", "html"):
        assert "2 items left out: judged by one judge only" in run("report", "--format", fmt).output.replace(
            "&#x27;", "'"), fmt


def test_jury_counts_current_items_only_and_takes_the_gold_of_every_labelled_item(tmp_path, templates):
    from calibrate.reliability_cells import jury_data

    store = Store(tmp_path / "g.db")
    ids = lexical_items(store, 4)
    votes = {"a": ["yes", "yes", "no", "no"], "b": ["yes", "no", "no", "no"]}  # jury: yes, tie, no, no
    store.add_judgments([NewJudgment(item_id=i, judge_name=name, judge_key=name, status="verdict", verdict=v)
                         for name, vs in votes.items() for i, v in zip(ids, vs, strict=True)])
    label_all(store, ids, ["yes", "yes", "no", "yes"], annotator="x")
    label_all(store, [ids[0], ids[3]], ["yes", "no"], annotator="y")  # item 3: x yes, y no, a tie
    store.add_items([NewItem("c3/lexical", "en", "2", {"content": "changed", "notation": "n", "response": "r"}, version=2)])
    data = jury_data(store, templates)
    cell = ("c3/lexical", "en", "jury")
    assert sorted(data.judged) == [(*cell, "tied", 1), (*cell, "verdict", 2)], "item 2's old version is not counted"
    assert sorted(data.judge_vs_human) == sorted([
        (*cell, "x", "verdict", "yes", "yes", 1), (*cell, "x", "tied", None, "yes", 1),
        (*cell, "x", "verdict", "no", "yes", 1), (*cell, "y", "verdict", "yes", "yes", 1),
        (*cell, "y", "verdict", "no", "no", 1)])
    assert sorted(data.shared_verdicts) == [(ids[0], "jury", "verdict", "yes"), (ids[3], "jury", "verdict", "no")]
    # item 1, which x alone labelled, has x's label as its gold; the tied item 3 has none
    assert sorted(data.judge_vs_gold, key=str) == sorted(
        [(*cell, "verdict", "yes", "yes", 1), (*cell, "tied", None, "yes", 1)], key=str)
    adjudicated = jury_data(store, templates, gold_from="y")
    assert sorted(adjudicated.judge_vs_gold, key=str) == sorted(
        [(*cell, "verdict", "no", "no", 1), (*cell, "verdict", "yes", "yes", 1), (*cell, "tied", None, "yes", 1)],
        key=str)


def test_unstable_first_order_and_repeats_in_batch_files(tmp_path, templates):
    from calibrate.session import AnnotationSession

    path = tmp_path / "u.db"
    store = Store(path)
    ids = lexical_items(store, 5)
    samples = {ids[3]: ["yes", "no", "yes"], ids[1]: ["no", "no", "yes"]}
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict", verdict=v, sample=k)
                         for i in ids for k, v in enumerate(samples.get(i, ["yes"] * 3))])
    session = AnnotationSession(store, templates, "bob", order="unstable-first")
    seen = [session.start().item.id]
    while (view := (session.decide("flag") and session.forward())) is not None:
        seen.append(view.item.id)
    assert seen == [ids[1], ids[3], ids[0], ids[2], ids[4]]
    store.close()
    batch = tmp_path / "batch.jsonl"
    Calibrate(path)("judge", "--model", "m", "--repeat", "2", "--export-batch", str(batch))
    lines = [json.loads(line) for line in batch.read_text().splitlines()]
    assert len(lines) == 10 and len({line["custom_id"] for line in lines}) == 10, "one request per item and sample"


def heterograph_items(store: Store, n: int) -> tuple[list[int], list[int]]:
    """`n` English and `n` Chinese heterograph items, item k's response k + 1 characters long: their ids."""
    en, _ = store.add_items([NewItem("c3/heterograph", "en", str(k), {"content": "c", "problem": "p", "notation": "n",
                                                                      "response": "r" * (k + 1)}) for k in range(n)],
                            with_ids=True)
    zh, _ = store.add_items([NewItem("c3/heterograph", "zh", str(k), {"content": "c", "annotation": "a",
                                                                      "response": "r" * (k + 1)}) for k in range(n)],
                            with_ids=True)
    return en, zh


def test_english_and_chinese_repeats_pool_by_polarity(tmp_path):
    path = tmp_path / "p.db"
    store = Store(path)
    en, zh = heterograph_items(store, 4)
    en_votes = [["yes", "yes"], ["yes", "no"], ["no", "no"], ["no", "no"]]
    zh_votes = [["是", "是"], ["是", "否"], ["否", "否"], ["是", "是"]]
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict", verdict=v, sample=k)
                         for ids, votes in ((en, en_votes), (zh, zh_votes)) for i, vs in zip(ids, votes, strict=True)
                         for k, v in enumerate(vs)])
    label_all(store, en, ["yes", "yes", "no", "no"])
    label_all(store, zh, ["是", "是", "否", "否"])
    store.close()
    cell = report_cell(path, "--by", "task")
    assert (cell["task"], cell["lang"]) == ("c3/heterograph", "*")
    row = cell["lines"][0]
    assert row["flip_rate"] == pytest.approx(2 / 8) and cell["reliability"]["unstable_items"] == [en[1], zh[1]]
    # confidence 1 on the 6 stable items (5 right: the fourth Chinese item is wrong), 0.5 and no verdict on the 2 tied
    assert row["calibration_items"] == 6 and row["ece"] == pytest.approx(1 / 6)


def test_jury_of_scores_is_the_mean(tmp_path):
    path = tmp_path / "s.db"
    store = Store(path)
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", str(k), {"question": "q", "content": "c", "answer": "a",
                                                                         "llm_answer": "x", "llm_reasoning": "y"})
                              for k in range(3)], with_ids=True)
    scores = {"a": [(80, 60), (40, 20), (90, 90)], "b": [(60, 40), (60, 30), (70, 50)]}
    store.add_judgments([
        NewJudgment(item_id=i, judge_name=name, judge_key=name, status="verdict",
                    verdict=json.dumps({"score_answer": float(s), "score_reasoning": float(r)}, sort_keys=True))
        for name, rows in scores.items() for i, (s, r) in zip(ids, rows, strict=True)])
    label_all(store, ids, [json.dumps({"score_answer": s, "score_reasoning": r}, sort_keys=True)
                           for s, r in [(70.0, 50.0), (50.0, 25.0), (80.0, 70.0)]])
    store.close()
    cells = {c["judge"]: c for c in json.loads(Calibrate(path)("report", "--format", "json").output)["cells"]}
    jury = cells["jury"]["lines"][0]["scores"]
    assert jury["score_answer"]["mae"]["value"] == 0 and jury["score_reasoning"]["mae"]["value"] == 0, "the judges' mean"
    assert cells["a"]["lines"][0]["scores"]["score_answer"]["mae"]["value"] == pytest.approx(10)


def test_a_stored_confidence_outside_0_1_is_not_used(tmp_path):
    path = tmp_path / "c.db"
    confident_db(path, [(3, 0.9, 3)])
    store = Store(path)
    store.conn.execute("UPDATE judgments SET confidence = 1.7 WHERE item_id = 1")  # a broken server's logprob > 0
    store.close()
    row = report_cell(path)["lines"][0]
    assert row["calibration_items"] == 2 and row["ece"] == pytest.approx(0.1)


def test_escalate_under_a_filter_names_only_the_filters_cells_where_nothing_is_certified(demo_db):
    from calibrate.session import AnnotationSession
    from calibrate.templates import TemplateSet

    session = AnnotationSession(Store(demo_db), TemplateSet(), "cy", task="c3/tone", lang="zh", order="escalate")
    session.start()
    assert len(session.trust_marks.refusals()) > 2, "the demo's other cells have none either"
    cells = [cell for cell, _ in session.trust_marks.refusals(session.task, session.lang)]
    assert cells and all(cell.startswith("c3/tone zh (") for cell in cells), cells
    session.store.close()


def test_the_jurys_one_judge_note_gives_each_item_one_reason(tmp_path):
    """Three judges: on q7 the calls of j2 and j3 both failed, q9 only j1 judged. The note's
    reasons add up to the two items it leaves out."""
    yes, no, unsure = "The answer is: yes.", "The answer is: no.", "I cannot tell."
    plan = {"q0": (yes, yes, yes), "q1": (yes, yes, no), "q6": (yes, no, None), "q7": (yes, None, None),
            "q9": (yes, "-", "-"), "q10": (no, no, yes), "q11": (no, no, no), "q5": (unsure, unsure, unsure)}
    run = Calibrate(tmp_path / "three.db")
    for k, judge in enumerate(("j1", "j2", "j3")):
        source = tmp_path / f"{judge}.jsonl"
        source.write_text("".join(json.dumps({"id": q, "content": "c " + q, "notation": "n", "response": "r " + q,
                                              "out": outs[k]}) + "\n" for q, outs in plan.items() if outs[k] != "-"))
        run("import", "jsonl", str(source), "--task", "c3/pause", "--lang", "en", "--system", "s", "--judge-output",
            "out", "--judge-name", judge)
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,system,source_id,annotator,label\n" + "".join(f"c3/pause,en,s,{q},ana,yes\n" for q in plan))
    run("import", "labels", str(labels))
    said = " ".join(run("report", "--judge", "jury").output.split())
    assert ("2 items left out: judged by one judge only (1: j2's and j3's calls failed; 1: no other judge judged it)"
            in said)


def test_verdicts_gathered_on_helper_threads_are_those_one_connection_gathers(tmp_path, templates):
    """With helper connections `gather` reads the items with one label on one thread and reads
    and sets the irregular verdicts on another: what it gives is what one connection gives, the
    Chinese repeats and the verdicts of a Chinese-only cell in the words of the English cell they
    pool with (which the judged cells, keyed first, decide)."""
    from calibrate.cells import CellKinds
    from calibrate.reliability_cells import gather

    path = tmp_path / "g.db"
    store = Store(path)
    en, zh = heterograph_items(store, 6)
    # the Chinese judgments first: their cell is the first an irregular verdict's thread meets
    repeats = {zh[0]: ["是", "否"], zh[1]: ["否", "否", "是"], en[0]: ["yes", "no", "yes"], en[1]: ["no", "no"]}
    single = {en[2]: ("yes", 0.9), en[3]: ("no", 0.6), zh[2]: ("是", 0.7), zh[3]: ("否", 0.8), zh[4]: ("是", None)}
    store.add_judgments([NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict", verdict=v, sample=k)
                         for i, votes in repeats.items() for k, v in enumerate(votes)]
                        + [NewJudgment(item_id=i, judge_name="gpt", judge_key="g", status="verdict", verdict=v,
                                       confidence=p) for i, (v, p) in single.items()])
    label_all(store, en[:5], ["yes", "no", "yes", "yes", "no"])
    label_all(store, zh[:5], ["是", "否", "是", "否", "是"])
    label_all(store, [en[0], zh[0]], ["yes", "是"], annotator="bo")

    def gathered(helpers) -> dict:
        found = gather(store, CellKinds(templates, ("task",)), helpers=helpers)
        return {key: ([(g.verdict, g.human, g.system, g.length, g.n, g.confidences.tolist()) for g in v.groups],
                      [(i.item_id, i.samples, i.verdict, i.confidence, i.human) for i in v.irregular])
                for key, v in found.items()}

    alone = gathered(())
    with store.helpers() as helpers, store.reading(*helpers):
        assert len(helpers) >= 1
        beside = gathered(helpers)
    store.close()
    assert beside == alone
    groups, irregular = alone[(("c3/heterograph", "*"), "gpt")]
    assert {verdict for verdict, *_ in groups} <= {"yes", "no", None}, "the Chinese verdicts in the English words"
    assert {item_id for item_id, *_ in irregular} == {en[0], en[1], zh[0], zh[1]}
