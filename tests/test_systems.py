"""Systems under test: each item belongs to the model whose response it is; item identity is
(task, lang, system, source id) with versions; every importer, filter and export keeps systems apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from calibrate.demo import DEMO_DIR
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.test_formats import LEX, counts, write_jsonl


@pytest.fixture
def two_systems(tmp_path) -> Path:
    """C3 English reference with two response trees: model-a (the demo's) and model-b (other answers)."""
    base = tmp_path / "c3"
    shutil.copytree(DEMO_DIR / "c3" / "en" / "reference", base / "reference")
    shutil.copytree(DEMO_DIR / "c3" / "en" / "responses", base / "model-a")
    shutil.copytree(DEMO_DIR / "c3" / "en" / "responses", base / "model-b")
    (base / "model-b" / "ambiguity" / "semantic" / "lexical" / "0.txt").write_text("A bank for money.", encoding="utf-8")
    return base


def import_tree(calibrate, base: Path, system: str, *extra: str, ok: bool = True):
    return calibrate("import", "c3", "--reference", str(base / "reference"), "--responses", str(base / system),
                     "--lang", "en", *extra, ok=ok)


def test_two_systems_trees_give_separate_cells_labels_and_exports(calibrate, two_systems, tmp_path):
    import_tree(calibrate, two_systems, "model-a")
    import_tree(calibrate, two_systems, "model-b")
    status = json.loads(calibrate("status", "--json").output)
    lexical = {c["system"]: c["items"] for c in status if c["task"] == "c3/lexical"}
    assert lexical == {"model-a": 1, "model-b": 1}

    labels = write_jsonl(tmp_path / "labels.jsonl", [
        {"task": "c3/lexical", "lang": "en", "system": "model-a", "source_id": "ambiguity/semantic/lexical/0",
         "annotator": "ana", "label": "yes"},
        {"task": "c3/lexical", "lang": "en", "system": "model-b", "source_id": "ambiguity/semantic/lexical/0",
         "annotator": "ana", "label": "no"},
    ])
    calibrate("import", "labels", str(labels))
    store = Store(calibrate.db)
    assert {(r["system"], r["label"]) for r in store.current_labels()} == {("model-a", "yes"), ("model-b", "no")}
    items = json.loads(calibrate("items", "--task", "c3/lexical", "--system", "model-b", "--json").output)
    assert [i["fields"]["response"] for i in items] == ["A bank for money."]

    gold = [json.loads(line) for line in calibrate("export").output.splitlines()]
    lexical_gold = {r["system"]: r["labels"] for r in gold if r["task"] == "c3/lexical"}
    assert lexical_gold == {"model-a": {"ana": "yes"}, "model-b": {"ana": "no"}}
    only_b = [json.loads(line) for line in calibrate("export", "--system", "model-b").output.splitlines()]
    assert {r["system"] for r in only_b} == {"model-b"} and len(only_b) == len(gold) // 2
    for system in ("model-a", "model-b"):
        written = calibrate("export", "c3", "--lang", "en", "--system", system, str(tmp_path / system))
        assert "no --judge: check_answer is empty in every record of a judged phenomenon" in written.output
    exported = {s: json.loads((tmp_path / s / "ambiguity/semantic/lexical.json").read_text())[0]["answer"]
                for s in ("model-a", "model-b")}
    assert exported["model-b"] == "A bank for money." and exported["model-a"] != exported["model-b"]
    refused = calibrate("export", "c3", "--lang", "en", str(tmp_path / "x"), ok=False)
    assert "several systems (model-a, model-b): pass --system" in refused.output


def test_second_import_is_a_no_op_and_changed_content_needs_update(calibrate, two_systems):
    import_tree(calibrate, two_systems, "model-a")
    before = counts(calibrate.db)
    assert "0 items added" in import_tree(calibrate, two_systems, "model-a").output
    assert counts(calibrate.db) == before

    store = Store(calibrate.db)
    (old,) = store.items(task="c3/lexical", system="model-a")
    store.annotate(old.id, "ana", "label", label="yes")
    store.close()
    response = two_systems / "model-a" / "ambiguity" / "semantic" / "lexical" / "0.txt"
    original = response.read_bytes()
    response.write_text("changed", encoding="utf-8")
    refused = import_tree(calibrate, two_systems, "model-a", ok=False)
    assert "lexical.json[0]: c3/lexical (en, system model-a) item ambiguity/semantic/lexical/0 was imported before " \
           "with different content (its response): if these are another model's responses, in a folder of the same " \
           "name, name that model with --system; if this model's responses changed, pass --update" \
           in " ".join(refused.output.split())
    assert "SuperGLUE" not in refused.output
    assert counts(calibrate.db) == (before[0], before[1], 1)

    updated = " ".join(import_tree(calibrate, two_systems, "model-a", "--update").output.split())
    assert "0 items added, 1 new version, " in updated, "a new version is not a new item"
    assert ("1 label stays with the version --update replaced and no longer counts (ana on "
            "ambiguity/semantic/lexical/0)") in updated
    store = Store(calibrate.db)
    (new,) = store.items(task="c3/lexical", system="model-a")
    assert new.version == 2 and new.fields["response"] == "changed"
    assert store.current_label(old.id, "ana") == "yes" and store.current_label(new.id, "ana") is None
    assert store.item(old.id).version == 1 and store.count_items(system="model-a") == before[0]
    store.close()
    response.write_bytes(original)
    back = import_tree(calibrate, two_systems, "model-a", "--update", ok=False)
    assert back.exit_code == 1 and "item ambiguity/semantic/lexical/0 held this content in an earlier version; --update " \
        "records new content as a new version and cannot make an earlier one current again" in " ".join(back.output.split())


def test_judge_output_and_reference_fields_are_never_item_fields(calibrate, tmp_path):
    """Importing without --judge-output and then with it used to duplicate every item."""
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", **LEX, "judge": "The answer is: yes.", "gold": "yes"}])
    calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--system", "m")
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--system", "m",
                    "--judge-output", "judge", "--judge-name", "gpt", "--reference-field", "gold")
    assert "1 judgment added" in out.output and counts(calibrate.db) == (1, 1, 0)
    g = write_jsonl(tmp_path / "fresh.jsonl", [{"id": "b", **LEX, "judge": "The answer is: yes.", "gold": "yes"}])
    calibrate("import", "jsonl", str(g), "--task", "c3/lexical", "--lang", "en", "--system", "m",
              "--judge-output", "judge", "--judge-name", "gpt", "--reference-field", "gold")
    item = Store(calibrate.db).items(task="c3/lexical", system="m")[-1]
    assert set(item.fields) == {"content", "notation", "response"} and item.reference == "yes"


def test_system_field_and_empty_system_names(calibrate, tmp_path):
    f = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", **LEX, "model": "m1"}, {"id": "a", **LEX, "model": "m2"}])
    calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--system-field", "model")
    assert Store(calibrate.db).systems() == ["m1", "m2"]
    for value in ("", "   "):
        out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--system", value, ok=False)
        assert out.exit_code == 2 and "the system name is empty" in out.output
    blank = write_jsonl(tmp_path / "blank.jsonl", [{"id": "z", **LEX, "model": "  "}])
    out = calibrate("import", "jsonl", str(blank), "--task", "c3/lexical", "--lang", "en", "--system-field", "model", ok=False)
    assert "blank.jsonl:1: field 'model': the system name is empty" in out.output
    for value, named in ((5, "number"), (True, "boolean"), ([1], "list")):  # never turned into the names 5, True, [1]
        other = write_jsonl(tmp_path / "other.jsonl", [{"id": "y", **LEX, "model": value}])
        out = calibrate("import", "jsonl", str(other), "--task", "c3/lexical", "--lang", "en", "--system-field",
                        "model", ok=False)
        assert out.exit_code == 1 and (f"other.jsonl:1: field 'model' must be text (the system under test's name), "
                                       f"got {named}") in " ".join(out.output.split()), out.output
    assert counts(calibrate.db) == (2, 0, 0)


def test_c3_results_alone_create_items_and_attach_to_a_stored_tree(calibrate, two_systems):
    beta = DEMO_DIR / "c3" / "en" / "results-beta"
    out = calibrate("import", "c3-results", str(beta), "--lang", "en", "--judge-name", "gpt", "--system", "sdm-beta")
    assert "11 items added" in out.output and "11 judgments added" in out.output
    store = Store(calibrate.db)
    (lexical,) = store.items(task="c3/lexical", system="sdm-beta")
    assert lexical.fields["response"] == "She went to the bank to deposit money."
    assert store.judgments_for_item(lexical.id)[0].verdict == "no"
    store.close()
    again = calibrate("import", "c3-results", str(beta), "--lang", "en", "--judge-name", "gpt", "--system", "sdm-beta")
    assert "0 items added, 11 already present" in again.output

    import_tree(calibrate, two_systems, "model-a")
    results = DEMO_DIR / "c3" / "en" / "results"
    out = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "gpt", "--system", "model-a")
    assert "0 items added" in out.output and "12 judgments added" in out.output
    assert "the one system with C3 items in this language" in " ".join(calibrate("import", "c3-results", "--help").output.split())
    import_tree(calibrate, two_systems, "model-b")
    before = counts(calibrate.db)
    wrong = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "gpt", "--system", "model-b", ok=False)
    assert ("lexical.json[0]: its 'answer' differs from that of c3/lexical (en, system model-b) item "
            "ambiguity/semantic/lexical/0, which has the same 'content' and 'notation'") in wrong.output
    assert counts(calibrate.db) == before


def test_c3_result_record_without_its_fields_saves_nothing(calibrate, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(DEMO_DIR / "c3" / "en" / "results-beta", results)
    lexical = results / "ambiguity" / "semantic" / "lexical.json"
    records = json.loads(lexical.read_text())
    del records[0]["notation"]
    lexical.write_text(json.dumps(records))
    out = calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "gpt", ok=False)
    assert "lexical.json[0]: missing field 'notation'" in out.output and counts(calibrate.db) == (0, 0, 0)


def test_report_cuts_by_system_and_filters_one(demo_db, tmp_path):
    labels = write_jsonl(tmp_path / "labels.jsonl", [
        {"task": "c3/lexical", "lang": "en", "system": system, "source_id": "ambiguity/semantic/lexical/0",
         "annotator": "ana", "label": "yes"} for system in ("sdm-alpha", "sdm-beta")
    ])
    run = Calibrate(demo_db)
    run("import", "labels", str(labels))
    cells = json.loads(run("report", "--by", "system,task,lang", "--format", "json").output)["cells"]
    lexical = {c["system"]: c["lines"][0]["stats"]["raw_agreement"] for c in cells
               if c["task"] == "c3/lexical" and c["judge"] == "demo-judge"}
    assert lexical == {"sdm-alpha": 1.0, "sdm-beta": 0.0}  # alpha's judge said yes, beta's no
    juries = {c["system"] for c in cells if c["judge"] == "jury"}
    assert juries == {"sdm-beta"}, "a system's jury where two judges judged its items (only beta's in the demo)"
    beta = json.loads(run("report", "--system", "sdm-beta", "--format", "json").output)["cells"]
    assert {c["system"] for c in beta} == {"sdm-beta"}
    assert "| sdm-beta | c3/lexical |" in run("report", "--by", "system,task,lang", "--format", "markdown").output


async def test_the_app_filter_takes_a_system(demo_db):
    from tests.tui_helpers import make_app

    app = make_app(demo_db, system=None)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("slash", *"task=c3/lexical system=sdm-beta", "enter")
        await pilot.pause()
        view = app.screen.view
        assert (view.item.task, view.item.system) == ("c3/lexical", "sdm-beta")
        assert view.item.fields["response"] == "She went to the bank to deposit money."


def test_c3_results_default_to_the_one_imported_system(calibrate, two_systems):
    import_tree(calibrate, two_systems, "model-a")
    out = calibrate("import", "c3-results", str(DEMO_DIR / "c3" / "en" / "results"), "--lang", "en", "--judge-name", "gpt")
    assert "0 items added" in out.output and "12 judgments added" in out.output
    assert Store(calibrate.db).systems() == ["model-a"]


def test_c3s_own_layout_names_the_model_so_its_results_judge_its_tree(calibrate, tmp_path):
    """C3's EvaluationUsage keeps a model's answers in <model>/english/txt and a judge's results
    of them in <model>/<judge>/english: both name the model, so two models' trees stay apart and
    the results judge the tree's items instead of making copies of them."""
    c3 = DEMO_DIR / "c3" / "en"
    for sdm in ("Mooer-Omni", "Other-SDM"):
        shutil.copytree(c3 / "responses", tmp_path / sdm / "english" / "txt")
        out = calibrate("import", "c3", "--reference", str(c3 / "reference"), "--responses",
                        str(tmp_path / sdm / "english" / "txt"), "--lang", "en")
        assert f"system {sdm} (the folder above english/txt in C3's layout; --system names another)" \
            in " ".join(out.output.split())
    shutil.copytree(c3 / "results", tmp_path / "Mooer-Omni" / "gpt-4o" / "english")
    out = calibrate("import", "c3-results", str(tmp_path / "Mooer-Omni" / "gpt-4o" / "english"), "--lang", "en",
                    "--judge-name", "gpt-4o")
    assert "0 items added" in out.output and "12 judgments added" in out.output
    assert "system Mooer-Omni (the folder above gpt-4o/english in C3's layout" in " ".join(out.output.split())
    store = Store(calibrate.db)
    assert store.systems() == ["Mooer-Omni", "Other-SDM"]
    assert {j.item_id for j in store.judgments(judge="gpt-4o")} <= {i.id for i in store.items(system="Mooer-Omni")}
    store.close()

    third = tmp_path / "Third" / "gpt-4o" / "english"  # results of a model whose tree was not imported
    shutil.copytree(c3 / "results", third)
    (third / "context-dependency" / "multi-turn.json").unlink()  # (it needs the tree)
    before = counts(calibrate.db)
    refused = calibrate("import", "c3-results", str(third), "--lang", "en", "--judge-name", "gpt-4o", ok=False)
    assert refused.exit_code == 2 and "--system is required: " in refused.output
    assert "would be system Third (the folder above gpt-4o/english in C3's layout), which has no C3 en items here while " \
           "Mooer-Omni, Other-SDM have: its records would make new items beside theirs" in " ".join(refused.output.split())
    assert counts(calibrate.db) == before
    named = calibrate("import", "c3-results", str(third), "--lang", "en", "--judge-name", "gpt-4o", "--system", "Third")
    assert "12 items added" in named.output
    assert "12 items of system Third made from the result records (c3/generation, c3/heterograph, c3/pause, c3/stress, " \
           "c3/intonation and 6 more, en): this database holds those tasks' items under Mooer-Omni, Other-SDM, not " \
           "under Third" in " ".join(named.output.split())


def test_changed_content_gets_the_advice_of_its_format(calibrate, tmp_path):
    """What an item imported before with other content means depends on the files: C3 result
    files imported before the tree made items without the tree's fields; SuperGLUE's idx restarts
    in each split."""
    c3 = DEMO_DIR / "c3" / "en"
    results = tmp_path / "Mooer-Omni" / "gpt-4o" / "english"
    shutil.copytree(c3 / "results", results)
    (results / "context-dependency" / "multi-turn.json").unlink()
    calibrate("import", "c3-results", str(results), "--lang", "en", "--judge-name", "gpt-4o")
    before = counts(calibrate.db)
    tree = calibrate("import", "c3", "--reference", str(c3 / "reference"), "--responses", str(c3 / "responses"),
                     "--lang", "en", "--system", "Mooer-Omni", ok=False)
    said = " ".join(tree.output.split())
    assert "coreference.json[0]: c3/coreference-detection (en, system Mooer-Omni) item context-dependency/coreference/0 " \
           "was imported before with different content (the stored item has no 'answer', 'problem', as one made from " \
           "C3 result files has): import the C3 tree into a fresh database first and the result files after it" in said
    assert "SuperGLUE" not in said and "pass --update" not in said
    assert counts(calibrate.db) == before

    for split, premise in (("val", "It rained."), ("test", "The sun shone.")):
        write_jsonl(tmp_path / f"{split}.jsonl", [{"premise": premise, "hypothesis": "h", "idx": 0, "label": "neutral"}])
    calibrate("import", "superglue", "--task", "cb", str(tmp_path / "val.jsonl"))
    split = calibrate("import", "superglue", "--task", "cb", str(tmp_path / "test.jsonl"), ok=False)
    assert "if this file is another split of the task (SuperGLUE's idx restarts in each), import it into a database " \
           "of its own instead" in " ".join(split.output.split())
