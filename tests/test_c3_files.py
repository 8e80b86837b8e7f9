"""C3 files as users hand them over and get them back: what the imports and `export c3` say
about files C3's own scripts would read otherwise (an empty result list, a byte-order mark, a
repeated or empty reference entry, another export's folders), and the messages that name the
cause of a refusal rather than its symptom. Run as a user runs calibrate, on the trees of
tests/c3_trees.py and the result files C3's evaluate.py wrote on them (tests/fixtures/c3)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from calibrate.formats.c3 import C3_LANGUAGE_NAMES
from tests.c3_trees import write_tree
from tests.conftest import Calibrate

RESULTS = Path(__file__).parent / "fixtures" / "c3" / "results"
LEXICAL = "ambiguity/semantic/lexical.json"
PAUSE = "ambiguity/phonological/pause.json"


def results_of(judge: str, lang: str = "en") -> Path:
    return RESULTS / judge / C3_LANGUAGE_NAMES[lang]


def copied_results(tmp_path: Path, judge: str, lang: str = "en") -> Path:
    target = tmp_path / f"results-{judge}-{lang}"
    shutil.copytree(results_of(judge, lang), target)
    return target


def import_tree(calibrate, tmp_path: Path, lang: str = "en"):
    reference, responses = write_tree(tmp_path / lang, lang)
    return calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses), "--lang", lang,
                     "--system", "sdm")


def import_results(calibrate, folder: Path, judge: str, lang: str = "en", ok: bool = True):
    return calibrate("import", "c3-results", str(folder), "--lang", lang, "--judge-name", judge, "--system", "sdm",
                     ok=ok)


def test_a_phenomenon_the_judge_never_judged_gets_no_file_and_the_export_imports_again(calibrate, tmp_path):
    import_tree(calibrate, tmp_path)
    results = copied_results(tmp_path, "dpsk")
    (results / LEXICAL).unlink()
    import_results(calibrate, results, "dpsk")
    out = tmp_path / "export"
    said = calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk").output
    assert not (out / "dpsk" / LEXICAL).exists(), "C3 writes no file for a phenomenon it did not run"
    assert f"{out / 'dpsk' / LEXICAL}: not written: dpsk judged no item of it (2 items" in said
    rows = json.loads((out / "statistics" / "english_result_data.json").read_text(encoding="utf-8"))
    assert "/ambiguity/semantic/lexical" not in {row["category"] for row in rows}
    assert all(row["total"] for row in rows), "no category of no records"
    # the export imports again into a fresh database and exports the same files
    again = Calibrate(tmp_path / "again.db")
    import_tree(again, tmp_path / "again")
    import_results(again, out / "dpsk", "dpsk")
    second = tmp_path / "second"
    again("export", "c3", str(second), "--lang", "en", "--judge", "dpsk")
    files = sorted(p.relative_to(out) for p in out.rglob("*.json"))
    assert files == sorted(p.relative_to(second) for p in second.rglob("*.json"))
    for rel in files:
        assert (second / rel).read_bytes() == (out / rel).read_bytes(), rel


def test_an_empty_result_list_is_a_file_without_records(calibrate, tmp_path):
    import_tree(calibrate, tmp_path)
    results = copied_results(tmp_path, "dpsk")
    (results / LEXICAL).write_text("[]", encoding="utf-8")
    said = import_results(calibrate, results, "dpsk").output
    assert f"{results / LEXICAL}: an empty list, no records: dpsk judged none of its items" in said
    only_empty = tmp_path / "only-empty"
    (only_empty / LEXICAL).parent.mkdir(parents=True)
    (only_empty / LEXICAL).write_text("[]", encoding="utf-8")
    refused = import_results(calibrate, only_empty, "gpt", ok=False)
    assert refused.exit_code == 1
    assert f"{only_empty / LEXICAL}: an empty list, no records: nothing was imported" in refused.output


def test_a_second_judges_folder_without_the_tree_says_the_items_came_from_the_first_ones_files(calibrate, tmp_path):
    folders = {}
    for judge, kept in (("dpsk", 1), ("gpt", 2)):  # dpsk's file holds one of the two records gpt's holds
        folders[judge] = tmp_path / judge / "english"
        (folders[judge] / LEXICAL).parent.mkdir(parents=True)
        records = json.loads((results_of(judge) / LEXICAL).read_text(encoding="utf-8"))
        (folders[judge] / LEXICAL).write_text(json.dumps(records[:kept], ensure_ascii=False), encoding="utf-8")
    dpsk = folders["dpsk"]
    import_results(calibrate, dpsk, "dpsk")
    refused = import_results(calibrate, folders["gpt"], "gpt", ok=False)
    assert refused.exit_code == 1
    message = " ".join(refused.output.split())
    assert "files are misaligned" not in message
    assert f"the 1 item of that cell was made from the records of earlier result files (import c3-results {dpsk})" \
        in message
    assert "import the C3 tree first (calibrate import c3)" in message


def test_a_result_file_with_a_byte_order_mark_is_read_with_a_note_that_c3_cannot_read_it(calibrate, tmp_path):
    import_tree(calibrate, tmp_path)
    results = copied_results(tmp_path, "dpsk")
    (results / PAUSE).write_bytes(b"\xef\xbb\xbf" + (results / PAUSE).read_bytes())
    said = " ".join(import_results(calibrate, results, "dpsk").output.split())
    assert (f"{results / PAUSE}: starts with a UTF-8 byte-order mark (as Windows editors save): read here, but C3's "
            "process_results.py cannot read it and leaves the file out") in said
    assert said.count("byte-order mark") == 1


def test_the_jury_note_and_the_score_rows_name_only_the_judges_with_verdicts_there(calibrate, tmp_path):
    import_tree(calibrate, tmp_path)
    import_tree(calibrate, tmp_path, "zh")
    for judge in ("dpsk", "gpt"):
        import_results(calibrate, results_of(judge), judge)
    import_results(calibrate, results_of("gpt", "zh"), "local", "zh")  # a third judge, of Chinese only
    labels = tmp_path / "labels.csv"
    labels.write_text("task,lang,system,source_id,annotator,label\n" + "".join(
        f"c3/pause,en,sdm,ambiguity/phonological/pause/{k},ann,yes\n" for k in range(2)), encoding="utf-8")
    calibrate("import", "labels", str(labels))
    cells = json.loads(calibrate("report", "--format", "json").output)["cells"]
    pause = next(c for c in cells if c["judge"] == "jury" and c["task"] == "c3/pause" and c["lang"] == "en")
    assert pause["jury_ties"] and pause["jury_judges"] == ["dpsk", "gpt"], "local judged no English item"
    said = " ".join(calibrate("report").output.split())
    assert "tied (dpsk and gpt gave different labels)" in said
    rows = json.loads(calibrate("scores", "--by", "system,lang", "--format", "json").output)["cells"]
    judges = {row["lang"]: {j["judge"] for j in row["judges"]} for row in rows}
    assert judges["en"] == {"dpsk", "gpt"}, "local judged no English item"
    assert judges["zh"] == {"local"}


def test_import_c3_says_entries_c3_passes_over_and_empty_values(calibrate, tmp_path):
    reference, responses = write_tree(tmp_path / "en", "en")
    (responses / "ambiguity/phonological/stress/1.txt").write_text(" \n", encoding="utf-8")
    entries = json.loads((reference / "ambiguity/semantic/lexical.json").read_text(encoding="utf-8"))
    entries[1]["notation"] = ""
    (reference / "ambiguity/semantic/lexical.json").write_text(json.dumps(entries), encoding="utf-8")
    said = " ".join(calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses),
                              "--lang", "en", "--system", "sdm").output.split())
    assert " items added, 0 already present, 0 judgments added, 0 skipped" in said, "said, not refused"
    assert (f"{reference / 'context-dependency/omission.json'}: [2] repeats [1] (its notation): C3's evaluate.py "
            "passes over a record whose notation it has written already") in said
    assert f"{reference / 'context-dependency/multi-turn.json'}: [2] repeats [0] (its first user turn)" in said
    assert f"1 empty response ({responses / 'ambiguity/phonological/stress/1.txt'}): imported" in said
    assert f"1 empty reference value ({reference / 'ambiguity/semantic/lexical.json'}[1] 'notation'): imported" in said


def test_messages_name_the_cause(calibrate, tmp_path):
    import_tree(calibrate, tmp_path)
    wrong_language = import_results(calibrate, results_of("dpsk"), "dpsk", "zh", ok=False)
    assert "it has 'notation', as C3's English result files have: if these are English results, use --lang en" \
        in " ".join(wrong_language.output.split())
    rule = calibrate("judge", "--judge", "rule", "--task", "c3/pause", "--lang", "en", ok=False)
    assert rule.exit_code == 1
    assert ("the rule judge reads SuperGLUE responses only (the predicted label against the reference); c3/pause is "
            "not a SuperGLUE task: an LLM judge judges them") in " ".join(rule.output.split())
    results = copied_results(tmp_path, "gpt")
    records = json.loads((results / PAUSE).read_text(encoding="utf-8"))
    records[0]["content"] = None
    (results / PAUSE).write_text(json.dumps(records), encoding="utf-8")
    fresh = Calibrate(tmp_path / "fresh.db")
    null = " ".join(import_results(fresh, results, "gpt", ok=False).output.split())
    assert f"{results / PAUSE}[0]: field 'content' is null" in null


def test_skip_bad_counts_the_items_not_imported_and_a_dialogue_names_its_response_folder(calibrate, tmp_path):
    reference, responses = write_tree(tmp_path / "en", "en")
    shutil.rmtree(responses / "ambiguity/phonological/pause")
    (responses / "context-dependency/multi-turn/0/2.txt").unlink()
    said = " ".join(calibrate("import", "c3", "--reference", str(reference), "--responses", str(responses),
                              "--lang", "en", "--system", "sdm", "--skip-bad").output.split())
    assert "2 skipped (3 items not imported)" in said
    folder = responses / "context-dependency/multi-turn/0"
    assert f"multi-turn.json[0]: dialogue has 3 user turns but {folder} holds 2 response files" in said


def test_export_into_a_folder_with_another_exports_judge_folders_names_them(calibrate, tmp_path):
    import_tree(calibrate, tmp_path)
    for judge in ("dpsk", "gpt"):
        import_results(calibrate, results_of(judge), judge)
    out = tmp_path / "export"
    calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk", "--judge", "gpt")
    said = " ".join(calibrate("export", "c3", str(out), "--lang", "en", "--judge", "dpsk").output.split())
    assert f"{out} also holds gpt/, which this export does not write" in said
    assert "C3's process_results.py pointed at that folder would score the earlier export's records" in said
    clean = " ".join(calibrate("export", "c3", str(tmp_path / "clean"), "--lang", "en", "--judge", "dpsk").output.split())
    assert "also holds" not in clean
