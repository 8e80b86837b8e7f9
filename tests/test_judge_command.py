"""What `calibrate judge` tells its user and exits with: the rule judge whose outputs do not
parse, filters that select nothing, `--variant`'s tasks, and options that do not belong to the
judge asked (`--judge` given a model's name, a model's options with `--judge rule`), and the
`--system` filter."""

from __future__ import annotations

import pytest

from calibrate.store import Store
from tests.conftest import Calibrate
from tests.fake_openai import FakeOpenAI
from tests.test_cli_outcomes import fingerprint
from tests.test_formats import write_jsonl


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_a_rule_judge_run_none_of_whose_outputs_parse_warns_with_the_reasons_and_fails(tmp_path):
    questions = write_jsonl(tmp_path / "val.jsonl", [{"question": f"q{k}", "passage": "p", "idx": k, "label": k == 0}
                                                     for k in range(3)])
    answers = write_jsonl(tmp_path / "answers.jsonl", [{"idx": k, "response": "Yes" if k else "No, it is not."}
                                                       for k in range(3)])
    run = Calibrate(tmp_path / "rule.db")
    run("import", "superglue", "--task", "boolq", str(questions), "--predictions", str(answers), "--system", "s")
    out = run("judge", "--judge", "rule", ok=False)
    said = one_line(out.output)
    assert out.exit_code == 1
    assert "warning: 3 of the 3 outputs did not parse as a verdict (3 × none of True, False found)" in said
    assert "the rule judge reads the system's own responses" in said
    assert "none of the 3 outputs of this run parsed as a verdict" in said
    again = run("judge", "--judge", "rule")  # they stay stored, as the LLM judge's do
    assert "nothing to judge: rule has judged all 3 (--force judges them again)" in again.output


def test_the_rule_judge_takes_the_system_and_language_filters(demo_db):
    run = Calibrate(demo_db)
    out = run("judge", "--judge", "rule", "--force", "--system", "sdm-beta")
    assert "2 judgments stored, 0 items already judged" in out.output  # sdm-beta's cb and rte, not sdm-alpha's 12
    out = run("judge", "--judge", "rule", "--lang", "zh", ok=False)
    assert out.exit_code == 1
    assert f"no SuperGLUE items with a model response in {demo_db} match --lang 'zh'" in one_line(out.output)


def test_an_llm_judge_run_over_one_system_asks_only_its_items(demo_db):
    run = Calibrate(demo_db)
    with FakeOpenAI() as server:
        out = run("judge", "--model", "m", "--base-url", server.url, "--system", "sdm-beta", "--task", "c3/heterograph")
        asked = server.count
    assert "3 items to judge with m" in out.output and asked == 3
    store = Store(demo_db)
    assert {store.item(j.item_id).system for j in store.judgments(judge="m")} == {"sdm-beta"}
    store.close()


@pytest.mark.parametrize(("args", "message"), [
    (["--judge", "rule", "--system", "sdm-betta"], "Invalid value for '--system': unknown system 'sdm-betta' (did you "
                                                  "mean sdm-beta?)"),
    (["--judge", "gpt-4o"], "Invalid value for '--judge': 'gpt-4o' is not one of 'llm', 'rule': here --judge says how "
                            "to judge (elsewhere it names a judge); to ask the model gpt-4o, give --model gpt-4o"),
    (["--judge", "rule", "--model", "gpt-4o", "--temperature", "0.5", "--logprobs"],
     "--judge rule asks no model, so --model, --temperature, --logprobs would be ignored: they are for --judge llm"),
    (["--judge", "rule", "--judge-name", "mine"], "--judge rule asks no model, so --judge-name would be ignored"),
])
def test_options_that_do_not_belong_to_the_judge_asked_are_usage_errors(demo_db, args, message):
    before = fingerprint(demo_db.parent)
    out = Calibrate(demo_db)("judge", "--force", *args, ok=False)
    assert out.exit_code == 2 and message in one_line(out.output), out.output
    assert fingerprint(demo_db.parent) == before


@pytest.mark.parametrize("kind", [["--model", "m", "--base-url", "http://127.0.0.1:9/v1"], ["--judge", "rule"]])
def test_filters_that_select_nothing_are_named_not_called_an_empty_database(demo_db, kind):
    out = Calibrate(demo_db)("judge", *kind, "--task", "c3/generation-tone", "--lang", "en", ok=False)
    assert out.exit_code == 1
    assert f"no items in {demo_db} match --task 'c3/generation-tone' --lang 'en'" in one_line(out.output)


def test_tasks_a_variant_does_not_serve_are_passed_over_as_asked_and_said(demo_db, tmp_path):
    out = Calibrate(demo_db)("judge", "--model", "m", "--variant", "c3-official", "--export-batch",
                             str(tmp_path / "batch.jsonl"))
    assert out.exit_code == 0 and "wrote 42 requests" in out.output
    assert ("--variant c3-official judges the tasks it has templates for: 16 items of other tasks passed over "
            "(rubric/reference (zh): 2, superglue/axb (en): 1,") in one_line(out.output)


def test_the_rule_judge_with_force_stores_new_judgments_that_come_into_force(demo_db):
    run = Calibrate(demo_db)
    before = [j for j in Store(demo_db).judgments() if j.judge_name == "rule"]
    out = run("judge", "--judge", "rule", "--force")
    after = [j for j in Store(demo_db).judgments() if j.judge_name == "rule"]
    assert f"{len(before)} judgments stored" in out.output and len(after) == 2 * len(before)


def test_a_models_run_under_the_rule_judges_name_and_misspelt_kinds_and_variants_are_usage_errors(demo_db):
    run = Calibrate(demo_db)
    before = fingerprint(demo_db.parent)
    for args, said in ((["--model", "m", "--judge-name", "rule"], "'rule' is the rule judge's name"),
                       (["--model", "rule"], "'rule' is the rule judge's name"),
                       (["--judge", "RULE"], "'RULE' is not one of 'llm', 'rule' (did you mean rule?)"),
                       (["--model", "m", "--variant", "c3-oficial"],
                        "unknown template family 'c3-oficial' (did you mean c3-official?)")):
        out = run("judge", "--base-url", "http://127.0.0.1:9/v1", *args, ok=False)
        assert out.exit_code == 2 and said in one_line(out.output), (args, out.output)
    assert fingerprint(demo_db.parent) == before


def _boolq(tmp_path, answered: int) -> tuple:
    """Three BoolQ validation items, the first `answered` of them answered by system s."""
    questions = write_jsonl(tmp_path / "val.jsonl", [{"question": f"q{k}", "passage": "p", "idx": k, "label": True}
                                                     for k in range(3)])
    answers = write_jsonl(tmp_path / "answers.jsonl", [{"idx": k, "response": "True"} for k in range(answered)])
    return questions, answers


def test_a_model_is_not_asked_items_whose_response_its_prompt_does_not_show_unless_the_template_shows_it(tmp_path):
    questions, answers = _boolq(tmp_path, 2)
    run = Calibrate(tmp_path / "sg.db")
    run("import", "superglue", "--task", "boolq", str(questions), "--predictions", str(answers), "--system", "s")
    batch = tmp_path / "batch.jsonl"
    out = run("judge", "--model", "m", "--export-batch", str(batch))
    said = one_line(out.output)
    assert ("2 items (superglue/boolq (en): 2) not asked: they carry a system's response that their template's prompt "
            "does not show, so the model would answer the task itself") in said
    assert "calibrate judge --judge rule" in said and "without --predictions" in said
    assert "wrote 1 request" in said and len(batch.read_text().splitlines()) == 1  # the gold-only item is asked
    refused = run("judge", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--system", "s", ok=False)
    assert refused.exit_code == 1 and "nothing was asked (see above)" in one_line(refused.output)
    assert not list(Store(tmp_path / "sg.db").judgments())
    # a template of one's own that shows the response: the model judges it
    folder = tmp_path / "tpl" / "mine"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'family = "mine"\n[[template]]\nid = "mine/boolq"\nfile = "b.j2"\nlang = "en"\ntasks = ["superglue/boolq"]\n'
        'required = ["passage", "question"]\nverdict = "label_set"\nlabels = ["True", "False"]\n', encoding="utf-8")
    (folder / "b.j2").write_text("{{ passage }}\n{{ question }}\nThe system answered: {{ response }}\nIs it right?",
                                 encoding="utf-8")
    out = run("--templates", str(tmp_path / "tpl"), "judge", "--model", "m", "--system", "s", "--export-batch",
              str(tmp_path / "mine.jsonl"))
    assert "wrote 2 requests" in out.output and "not asked" not in out.output


def test_the_rule_judge_says_how_many_items_it_passed_over_without_a_response(tmp_path):
    """Gold-only SuperGLUE items, and the items of other tasks (no rule reads C3), are each
    counted on a line of their own."""
    questions, answers = _boolq(tmp_path, 2)
    run = Calibrate(tmp_path / "sg.db")
    run("import", "superglue", "--task", "boolq", str(questions), "--predictions", str(answers), "--system", "s")
    c3 = write_jsonl(tmp_path / "c3.jsonl", [{"id": f"i{k}", "content": "c", "notation": "n", "response": f"r{k}"}
                                             for k in range(3)])
    run("import", "jsonl", str(c3), "--task", "c3/lexical", "--lang", "en")
    out = run("judge", "--judge", "rule")
    assert "1 item (superglue/boolq (en): 1) passed over: no system's response to read" in one_line(out.output)
    assert ("the rule judge reads SuperGLUE responses only: 3 items of other tasks passed over (c3/lexical (en): 3)"
            in one_line(out.output)), out.output
    assert "2 judgments stored" in out.output
    gold_only = run("judge", "--judge", "rule", "--system", "", ok=False)
    assert gold_only.exit_code == 1 and "nothing was judged" in one_line(gold_only.output)
