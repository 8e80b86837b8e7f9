"""calibrate's C3 figures against C3's own way of counting them, where the judges' result folders
differ: records one judge has and the other lacks, an item C3's evaluate.py passes over, a
generation item two judges' folders decide differently.

`process_results` below is C3's process_results.py as /work/shared/formats/c3.md describes it
(written from that description, not copied): a data id is a result file's path under the
judge's folder plus the record's index; per category the total is every data id either
judge's files hold, a judge without a record there (or with an empty check_answer) is wrong;
overall sums every data id. `scores`' C3-rule column and `export c3`'s statistics must give
what it gives.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from calibrate.formats.c3 import C3_LAYOUT, c3_passed_over
from calibrate.model import NewJudgment
from calibrate.store import Store
from tests.conftest import Calibrate, as_made_before_0027
from tests.fake_openai import FakeOpenAI, Reply
from tests.test_c3_roundtrip import import_tree, results_of

PHON, CTX = "ambiguity/phonological", "context-dependency"
TASKS = {"/" + part.responses: part.task for part in C3_LAYOUT["en"]}


def process_results(folders: dict[str, Path]) -> dict[str, dict]:
    """C3's `english_result_data.json` for these judges' English result trees, by category
    ("overall" and "/<result path>"): {total, <judge>_correct, <judge>_accuracy}."""
    def right(text: str) -> bool:  # split on the marker; right iff the last piece starts with yes
        return any(len(text.split(marker)) > 1 and text.split(marker)[-1].startswith(("Yes", "yes"))
                   for marker in ("The answer is: ", "the answer is: "))

    verdicts: dict[str, dict[str, bool]] = {}
    for judge, root in folders.items():
        for path in sorted(root.rglob("*.json")):
            base = "/" + path.relative_to(root).with_suffix("").as_posix()
            for index, record in enumerate(json.loads(path.read_text(encoding="utf-8"))):
                verdicts.setdefault(f"{base}/{index}", {})[judge] = right(record.get("check_answer", ""))
    counts: dict[str, Counter] = {"overall": Counter()}
    for data_id, found in verdicts.items():
        for category in ("overall", data_id.rsplit("/", 1)[0]):
            tally = counts.setdefault(category, Counter())
            tally["total"] += 1
            for judge in folders:
                tally[judge] += found.get(judge, False)
    return {category: {"total": c["total"], **{f"{j}_correct": c[j] for j in folders},
                       **{f"{j}_accuracy": round(c[j] / c["total"], 4) for j in folders}}
            for category, c in counts.items()}


def edited(tmp_path: Path, judge: str, edits: dict[str, callable]) -> Path:
    """A copy of the recorded English result folder of `judge`, each file of `edits` changed."""
    folder = tmp_path / "results" / judge / "english"
    shutil.copytree(results_of(judge, "en"), folder)
    for rel, edit in edits.items():
        path = folder / rel
        records = json.loads(path.read_text(encoding="utf-8"))
        edit(records)
        path.write_text(json.dumps(records, ensure_ascii=False, indent=4), encoding="utf-8")
    return folder


def uneven_folders(tmp_path: Path) -> dict[str, Path]:
    """dpsk lacks lexical's last record, gpt pause's, and both stress's (an interrupted run):
    each judge has a record the other lacks, and the two hold different numbers of records."""
    drop_last = lambda records: records.pop()  # noqa: E731
    return {"dpsk": edited(tmp_path, "dpsk", {"ambiguity/semantic/lexical.json": drop_last,
                                              f"{PHON}/stress.json": drop_last}),
            "gpt": edited(tmp_path, "gpt", {f"{PHON}/pause.json": drop_last, f"{PHON}/stress.json": drop_last})}


def import_folders(calibrate, tmp_path: Path, folders: dict[str, Path]) -> None:
    import_tree(calibrate, tmp_path, "en")
    for judge, folder in folders.items():
        calibrate("import", "c3-results", str(folder), "--lang", "en", "--judge-name", judge, "--system", "sdm")


def c3_rule(calibrate, *judges: str) -> dict[str, dict]:
    """`scores`' figures by C3 category ("overall" and "/<result path>"): judge -> (right, n),
    and the mean of judges' raw figure, with `--judge` for each of `judges`."""
    given = [arg for judge in judges for arg in ("--judge", judge)]
    per_task = json.loads(calibrate("scores", "--format", "json", *given).output)["cells"]
    overall = json.loads(calibrate("scores", "--by", "system,lang", "--format", "json", *given).output)["cells"]
    found = {}
    for category, cell in [("overall", c) for c in overall] + [(k, c) for c in per_task for k, t in TASKS.items()
                                                              if t == c["task"]]:
        found[category] = {j["judge"]: (j["c3_rule"]["right"], j["c3_rule"]["n"]) for j in cell["judges"]}
        found[category]["mean"] = cell["final"] and cell["final"]["raw"]
    return found


def assert_scores_give(found: dict[str, dict], expected: dict[str, dict], judges: tuple[str, ...]) -> None:
    for category, row in expected.items():
        for judge in judges:
            assert found[category][judge] == (row[f"{judge}_correct"], row["total"]), (category, judge)
        if len(judges) == 2 and found[category]["mean"] is not None:
            assert abs(found[category]["mean"] - sum(row[f"{j}_correct"] / row["total"] for j in judges) / 2) < 1e-9


def test_export_statistics_are_c3s_whatever_the_judges_record_counts(calibrate, tmp_path):
    folders = uneven_folders(tmp_path)
    import_folders(calibrate, tmp_path, folders)
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
    theirs = process_results(folders)
    assert process_results({judge: out / judge for judge in folders}) == theirs, "the exported trees count alike"
    ours = {row["category"]: row for row in json.loads((out / "statistics" / "english_result_data.json").read_text())}
    assert set(ours) == set(theirs)
    for category, row in theirs.items():
        assert {key: ours[category][key] for key in row} == row, category
    assert theirs["overall"]["total"] == sum(row["total"] for c, row in theirs.items() if c != "overall")


def test_the_c3_rule_column_divides_as_c3_does(calibrate, tmp_path):
    """Each judge's C3 rule, per category and overall, and the mean of judges are C3's figures
    for the two folders; one --judge alone gives C3's figure on that judge's folder alone."""
    folders = uneven_folders(tmp_path)
    import_folders(calibrate, tmp_path, folders)
    assert_scores_give(c3_rule(calibrate), process_results(folders), ("dpsk", "gpt"))
    assert_scores_give(c3_rule(calibrate, "gpt"), process_results({"gpt": folders["gpt"]}), ("gpt",))
    shown = " ".join(calibrate("scores", "--by", "system,task").output.split())
    assert "C3 rule: 1 item another judge shown has a record for and dpsk none count wrong" in shown


def test_a_third_judge_counts_for_the_others_unless_the_c3_pair_is_named(calibrate, tmp_path):
    """A judge run here on every item has stress's last item, which neither C3 judge has: shown
    with them, it counts wrong for each of them there; --judge dpsk --judge gpt gives C3's pair."""
    folders = uneven_folders(tmp_path)
    import_folders(calibrate, tmp_path, folders)
    with FakeOpenAI(Reply("The answer is: yes.")) as server:
        calibrate("judge", "--model", "local", "--base-url", server.url, "--variant", "c3-official")
    theirs = process_results(folders)
    assert_scores_give(c3_rule(calibrate, "dpsk", "gpt"), theirs, ("dpsk", "gpt"))
    everyone = c3_rule(calibrate)
    stress = f"/{PHON}/stress"
    assert everyone[stress]["dpsk"] == (theirs[stress]["dpsk_correct"], theirs[stress]["total"] + 1)
    assert everyone["overall"]["gpt"] == (theirs["overall"]["gpt_correct"], theirs["overall"]["total"] + 1)
    assert everyone[stress]["local"] == (2, 2)


def test_a_verdict_on_an_item_c3_passes_over_counts_nowhere(calibrate, tmp_path):
    """omission/2 repeats omission/1's notation: a verdict stored on it (by an earlier calibrate,
    which asked every item; its output one whose C3 rule the SQL leaves to Python) is left out of
    `scores` as `export c3` leaves it out."""
    import_tree(calibrate, tmp_path, "en")
    with FakeOpenAI(Reply("The answer is: no.")) as server:
        calibrate("judge", "--model", "m", "--base-url", server.url, "--variant", "c3-official", "--task",
                  "c3/omission-detection")
    store = Store(calibrate.db)
    repeat = next(i for i in store.iter_items(task="c3/omission-detection") if i.source_id == f"{CTX}/omission/2")
    store.add_judgments([NewJudgment(repeat.id, "m", "earlier-run", "verdict", "The answer is: yes.\x00", "yes")])
    store.close()
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "m")
    row = next(r for r in json.loads((out / "statistics" / "english_result_data.json").read_text())
               if r["category"] == f"/{CTX}/omission-detection")
    cell = next(c for c in json.loads(calibrate("scores", "--format", "json").output)["cells"]
                if c["task"] == "c3/omission-detection")
    assert (cell["judges"][0]["c3_rule"]["right"], cell["judges"][0]["c3_rule"]["n"]) == (0, row["total"]) == (0, 3)
    shown = " ".join(calibrate("scores").output.split())
    assert ("3 items (c3/multi-turn (en): 1, c3/omission-completion (en): 1, c3/omission-detection (en): 1) repeat an "
            "earlier item's notation or first turn, which C3's evaluate.py passes over: no verdict on them counts") in shown
    assert "context-dependency/omission/2" not in shown, "not among the outputs read differently"


def gpt_decides_generation_0(calibrate, tmp_path: Path, check_answer: str) -> dict[str, Path]:
    """dpsk's recorded folder and gpt's with generation/0 decided as `check_answer` ("" leaves it
    undecided; dpsk's says yes), imported after the tree; the C3 rule of both checked against
    `process_results`."""
    folders = {"dpsk": edited(tmp_path, "dpsk", {}),
               "gpt": edited(tmp_path, "gpt", {f"{PHON}/generation.json":
                                              lambda records: records[0].update(check_answer=check_answer)})}
    import_folders(calibrate, tmp_path, folders)
    assert_scores_give(c3_rule(calibrate), process_results(folders), ("dpsk", "gpt"))
    return folders


def test_each_judge_keeps_its_own_generation_decisions(calibrate, tmp_path):
    """gpt's folder decides generation/0 otherwise than dpsk's (imported first): each judge's C3
    rule and exported generation file are its own folder's, and both commands say where."""
    folders = gpt_decides_generation_0(calibrate, tmp_path, "The answer is: no.")
    shown = " ".join(calibrate("scores", "--by", "system,task").output.split())
    assert ("C3 rule: dpsk's own result files decided 1 generation item otherwise than the label in force "
            f"({PHON}/generation/0: yes there, no in force from gpt's files)") in shown
    out = tmp_path / "export"
    said = " ".join(calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
                    .output.split())
    for judge, folder in folders.items():
        rel = f"{PHON}/generation.json"
        assert (out / judge / rel).read_bytes() == (folder / rel).read_bytes(), judge
    assert f"1 decision as dpsk's own result file held it, not the label in force ({PHON}/generation/0" in said
    assert "as gpt's own result file" not in said
    again = " ".join(calibrate("import", "c3-results", str(folders["dpsk"]), "--lang", "en", "--judge-name", "dpsk",
                               "--system", "sdm").output.split())
    assert f"1 generation decision of c3-result-file changed by these files ({PHON}/generation/0)" in again
    assert "put back a label the person had given" not in again, "files' decisions, not a person's"


def test_a_generation_item_a_judges_files_left_undecided_counts_wrong_for_that_judge(calibrate, tmp_path):
    """gpt's folder leaves generation/0 empty (undecided) where dpsk's says yes: C3 counts it
    wrong for gpt, and so do its C3 rule and its exported file, which say so."""
    folders = gpt_decides_generation_0(calibrate, tmp_path, "")
    shown = " ".join(calibrate("scores", "--by", "system,task").output.split())
    assert f"({PHON}/generation/0: left undecided there, yes in force)" in shown
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
    rel = f"{PHON}/generation.json"
    assert json.loads((out / "gpt" / rel).read_text(encoding="utf-8"))[0]["check_answer"] == ""
    assert (out / "dpsk" / rel).read_bytes() == (folders["dpsk"] / rel).read_bytes()


def test_the_generation_note_compares_a_judges_decision_with_the_label_people_put_in_force(calibrate, tmp_path):
    """Two people label generation/0 'no' after the folders were imported (both say yes): the
    label in force is theirs, so each judge's file now differs from it, and the note says so."""
    folders = {"dpsk": edited(tmp_path, "dpsk", {}), "gpt": edited(tmp_path, "gpt", {})}
    import_folders(calibrate, tmp_path, folders)
    labels = tmp_path / "people.csv"
    labels.write_text("task,lang,system,source_id,annotator,label\n" + "".join(
        f"c3/generation,en,sdm,{PHON}/generation/0,{who},no\n" for who in ("ana", "bob")))
    calibrate("import", "labels", str(labels))
    shown = " ".join(calibrate("scores", "--by", "system,task", "--judge", "dpsk", "--judge", "gpt").output.split())
    for judge in ("dpsk", "gpt"):
        assert (f"C3 rule: {judge}'s own result files decided 1 generation item otherwise than the label in force "
                f"({PHON}/generation/0: yes there, no in force)") in shown
    assert_scores_give(c3_rule(calibrate, "dpsk", "gpt"), process_results(folders), ("dpsk", "gpt"))


def test_a_judges_files_imported_again_count_the_decision_they_now_hold(calibrate, tmp_path):
    """dpsk's folder, imported again after its generation/0 was changed to no, which gpt's folder
    (imported since) put in force already: dpsk's C3 rule counts no, as its files now hold, and the
    import says so."""
    folders = gpt_decides_generation_0(calibrate, tmp_path, "The answer is: no.")
    path = folders["dpsk"] / f"{PHON}/generation.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    records[0]["check_answer"] = "The answer is: no."
    path.write_text(json.dumps(records, ensure_ascii=False, indent=4), encoding="utf-8")
    again = calibrate("import", "c3-results", str(folders["dpsk"]), "--lang", "en", "--judge-name", "dpsk",
                      "--system", "sdm")
    assert (f"1 generation decision of dpsk's result files changed since they were imported before ({PHON}/generation/0), "
            "to the label in force of c3-result-file: C3's figures for dpsk count the new ones") in " ".join(again.stderr.split())
    assert_scores_give(c3_rule(calibrate), process_results(folders), ("dpsk", "gpt"))


def test_a_persons_note_worded_like_the_imports_is_not_taken_for_a_judges_file(calibrate, tmp_path):
    """ana labels generation/0 'no' with the note "in the C3 result files of judge dpsk", the
    words the import notes a judge's decision with: dpsk's own files still decide it (yes), in
    its C3 rule and in its exported file."""
    folders = {"dpsk": edited(tmp_path, "dpsk", {}), "gpt": edited(tmp_path, "gpt", {})}
    import_folders(calibrate, tmp_path, folders)
    labels = tmp_path / "ana.csv"
    labels.write_text("task,lang,system,source_id,annotator,label,note\n"
                      f"c3/generation,en,sdm,{PHON}/generation/0,ana,no,in the C3 result files of judge dpsk\n")
    calibrate("import", "labels", str(labels))
    assert_scores_give(c3_rule(calibrate, "dpsk", "gpt"), process_results(folders), ("dpsk", "gpt"))
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
    rel = f"{PHON}/generation.json"
    assert (out / "dpsk" / rel).read_bytes() == (folders["dpsk"] / rel).read_bytes()


def test_generation_decisions_imported_before_migration_0027_count_as_they_did(calibrate, tmp_path):
    """Result folders imported by the calibrate before migration 0027, which kept the judge whose
    file held a generation decision only in the note on its label: after the upgrade each judge's
    C3 rule, exported file and the note where it differs from the label in force are as before."""
    folders = gpt_decides_generation_0(calibrate, tmp_path, "The answer is: no.")
    as_made_before_0027(calibrate.db)
    upgraded = calibrate("scores", "--by", "system,task")
    assert "upgrading" in upgraded.stderr
    assert ("C3 rule: dpsk's own result files decided 1 generation item otherwise than the label in force "
            f"({PHON}/generation/0: yes there, no in force from gpt's files)") in " ".join(upgraded.output.split())
    assert_scores_give(c3_rule(calibrate), process_results(folders), ("dpsk", "gpt"))
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
    for judge, folder in folders.items():
        rel = f"{PHON}/generation.json"
        assert (out / judge / rel).read_bytes() == (folder / rel).read_bytes(), judge


@pytest.mark.parametrize("older", [False, True], ids=["offline copy", "offline copy made before migration 0027"])
def test_a_merge_carries_each_judges_generation_decisions(tmp_path, older):
    """The result folders imported into an offline copy, which is merged into an empty database:
    each judge's C3 rule there is its own folder's, as in the copy (one made by the calibrate
    before migration 0027 too: merge reads it through an upgraded copy, leaving it as it is)."""
    offline = Calibrate(tmp_path / "offline.db")
    folders = gpt_decides_generation_0(offline, tmp_path, "The answer is: no.")
    if older:
        as_made_before_0027(offline.db)
    main = Calibrate(tmp_path / "main.db")
    main("merge", str(offline.db))
    assert_scores_give(c3_rule(main), process_results(folders), ("dpsk", "gpt"))


def test_result_records_of_items_c3_passes_over_are_said_at_import(calibrate, tmp_path):
    """Result files holding a record of an item C3's evaluate.py passes over (written by another
    tool, or by hand): the import stores its verdict and says that no figure counts it."""
    import_tree(calibrate, tmp_path, "en")
    store = Store(calibrate.db)
    (skipped,) = [store.item(item_id) for item_id, where in c3_passed_over(store).items()
                  if where.task == "c3/omission-detection"]
    store.close()
    folder = tmp_path / "full" / "dpsk"
    shutil.copytree(results_of("dpsk", "en"), folder)
    path = folder / CTX / "omission-detection.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    records.append({"content": skipped.fields["content"], "notation": skipped.fields["notation"],
                    "answer": skipped.fields["response"], "check_answer": "The answer is: Yes."})
    path.write_text(json.dumps(records, ensure_ascii=False, indent=4), encoding="utf-8")
    out = calibrate("import", "c3-results", str(folder), "--lang", "en", "--judge-name", "dpsk", "--system", "sdm")
    said = " ".join(out.output.split())
    assert (f"1 record of dpsk judge items that C3's evaluate.py passes over (repeating an earlier item's notation or "
            f"first turn: {skipped.source_id}): stored, but no calibrate figure counts them") in said
    plain = Calibrate(tmp_path / "plain.db")
    import_tree(plain, tmp_path / "p", "en")
    assert "judge items that C3's evaluate.py passes over" not in plain("import", "c3-results", str(results_of("dpsk", "en")), "--lang", "en",
                                      "--judge-name", "dpsk", "--system", "sdm").output
