"""Verdict parsers: examples, property tests, and where they differ from the C3 script's rule."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.formats.c3 import c3_right
from calibrate.kinds import kind_for
from calibrate.verdicts import (
    BARE,
    normalize_record,
    parse_label_set,
    parse_record_entity,
    parse_rubric_scores,
    parse_yes_no_en,
    parse_yes_no_zh,
)

EN_ECHO = "If the student's answer is correct, output 'The answer is: yes.' at the end; otherwise, output 'The answer is: no.' at the end."
ZH_ECHO = "请在最后一行回答是或否。回答时请遵循格式：\n\n最终答案为：是。\n或者\n最终答案为：否。"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Analysis...\nThe answer is: yes.", "yes"),
        ("The answer is: no.", "no"),
        ("the answer is: YES", "yes"),
        ("**The answer is: no.**", "no"),
        ("The answer is: **yes**.", "yes"),
        ("The answer is：yes。", "yes"),
        ("The answer is: Yes, because the student is right.", "yes"),
        ("The answer is: no.  \n\n", "no"),
        ("First I thought The answer is: no. But on reflection\nThe answer is: yes.", "yes"),
        (EN_ECHO + "\nThe student is right.\nThe answer is: yes.", "yes"),
        ("The answer is : no", "no"),
    ],
)
def test_english_verdicts(text, expected):
    assert parse_yes_no_en(text).value == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("I think the student is right.", "no 'The answer is:' verdict"),
        (EN_ECHO, "echo"),
        ("The answer is: nothing to say", "no 'The answer is:' verdict"),
        ("The answer is: yesterday's news", "no 'The answer is:' verdict"),
    ],
)
def test_english_unparsed_never_means_no(text, reason):
    verdict = parse_yes_no_en(text)
    assert verdict.value is None and verdict.status == "unparsed"
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("分析……\n最终答案为：是。", "是"),
        ("最终答案为:否", "否"),
        ("**最终答案为：否**", "否"),
        ("最终答案为：**是**。", "是"),
        ("最终答案为：否。\n修正：最终答案为：是。", "是"),
        (ZH_ECHO + "\n学生正确。\n最终答案为：是。", "是"),
    ],
)
def test_chinese_verdicts(text, expected):
    assert parse_yes_no_zh(text).value == expected


def test_chinese_echo_alone_is_unparsed():
    verdict = parse_yes_no_zh(ZH_ECHO)
    assert verdict.value is None and "echo" in verdict.reason


# -- The C3 script's own rule, for comparison: split on "The answer is: " and check startswith.


def c3_script_rule_en(text: str) -> str:
    """The published C3 script's verdict, by calibrate's one definition of its rule."""
    return "yes" if c3_right(text, "en") else "no"


def c3_script_rule_zh(text: str) -> str:
    return "是" if c3_right(text, "zh") else "否"


DISAGREEMENTS = [
    # (output, calibrate's verdict, the script's verdict, which is right and why)
    ("The answer is: **yes**.", "yes", "no", "calibrate: the judge said yes in bold"),
    ("**The answer is: yes.**", "yes", "yes", None),
    ("The answer is:yes.", "yes", "no", "calibrate: half-width colon without a space"),
    ("The answer is：yes.", "yes", "no", "calibrate: full-width colon"),
    ("THE ANSWER IS: YES", "yes", "no", "calibrate: case"),
    ("The answer is:  yes", "yes", "no", "calibrate: two spaces"),
    ("The answer is: Yes, because the student is right.", "yes", "yes", None),
    (EN_ECHO, None, "no", "calibrate: an echoed instruction holds no verdict; the script calls it wrong"),
    ("", None, "no", "calibrate: an empty output (failed call) is not a 'no'"),
    ("I cannot decide.", None, "no", "calibrate: no verdict is not a 'no'"),
    ("The answer is: yes.\nNote: earlier I wrote The answer is: no. by mistake", "no", "no", None),
    ("The answer is: \"yes\"", "yes", "no", "calibrate: quoted yes"),
    ("the answer is: no, wait. The Answer Is: yes", "yes", "no", "calibrate: last verdict, any case"),
    ("Yes.", "yes", "no", "calibrate: a bare verdict word; the script finds no marker and calls it wrong"),
    ("no", "no", "no", None),
]


@pytest.mark.parametrize(("text", "ours", "script", "right"), DISAGREEMENTS)
def test_calibrate_versus_c3_script_rule(text, ours, script, right):
    assert parse_yes_no_en(text).value == ours
    assert c3_script_rule_en(text) == script
    if right is None:  # the rows where both agree (or the script's 'no' is right) document the table
        assert ours in (script, None)


def test_at_least_ten_rows_disagree_with_the_script():
    differing = [row for row in DISAGREEMENTS if row[1] != row[2]]
    assert len(differing) >= 10


@pytest.mark.parametrize(
    ("text", "ours", "script"),
    [("最终答案为:是", "是", "否"), ("**最终答案为：是**", "是", "是"), (ZH_ECHO, None, "否"), ("", None, "否"),
     ("是。", "是", "否"), ("否。", "否", "否")],
)
def test_chinese_calibrate_versus_c3_script_rule(text, ours, script):
    assert parse_yes_no_zh(text).value == ours
    assert c3_script_rule_zh(text) == script


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [(parse_yes_no_zh, "是。", "是"), (parse_yes_no_zh, "否", "否"), (parse_yes_no_zh, " **否。** \n", "否"),
     (parse_yes_no_zh, "「是」！", "是"), (parse_yes_no_en, "yes", "yes"), (parse_yes_no_en, "No.", "no"),
     (parse_yes_no_en, "**YES**", "yes"), (parse_yes_no_en, '  "no"!\n', "no"), (parse_yes_no_en, "`Yes`", "yes")],
)
def test_an_output_that_is_only_the_verdict_word_is_that_verdict_in_bare_form(parse, text, expected):
    verdict = parse(text)
    assert (verdict.value, verdict.form) == (expected, BARE)


@pytest.mark.parametrize(
    ("parse", "text"),
    [(parse_yes_no_zh, "是的"), (parse_yes_no_zh, "不是。"), (parse_yes_no_zh, "是，因为学生说对了。"), (parse_yes_no_zh, "yes"),
     (parse_yes_no_en, "Yes, because the student is right."), (parse_yes_no_en, "yes no"), (parse_yes_no_en, "是"),
     (parse_yes_no_en, "Noted."), (parse_yes_no_en, "yes?"), (parse_yes_no_en, "Yes.\nNo.")],
)
def test_anything_more_than_the_verdict_word_is_still_no_verdict(parse, text):
    assert parse(text).value is None


def test_a_verdict_line_is_not_a_bare_form():
    assert parse_yes_no_en("The answer is: yes.").form is None and parse_yes_no_zh("最终答案为：否。").form is None


# -- properties --------------------------------------------------------------------------------

any_text = st.text(max_size=400)
PARSERS = {
    "yes_no_en": kind_for("yes_no_en").parse,
    "yes_no_zh": kind_for("yes_no_zh").parse,
    "rubric_scores": kind_for("rubric_scores").parse,
    "label_set": kind_for("label_set", ("entailment", "not_entailment")).parse,
    "record_entity": lambda t: kind_for("record_entity", ("correct", "incorrect")).parse(t, answers=["Walmart"]),
}


@pytest.mark.parametrize("kind", sorted(PARSERS))
@settings(max_examples=300, deadline=None)
@given(text=any_text)
def test_no_parser_raises_on_arbitrary_text(kind, text):
    verdict = PARSERS[kind](text)
    assert verdict.parsed or verdict.reason


@settings(max_examples=300, deadline=None)
@given(text=any_text, answer=st.sampled_from(["yes", "no"]))
def test_english_verdict_appended_is_recovered(text, answer):
    assert parse_yes_no_en(f"{text}\nThe answer is: {answer}.").value == answer


@settings(max_examples=300, deadline=None)
@given(text=any_text, answer=st.sampled_from(["是", "否"]))
def test_chinese_verdict_appended_is_recovered(text, answer):
    assert parse_yes_no_zh(f"{text}\n最终答案为：{answer}。").value == answer


@settings(max_examples=200, deadline=None)
@given(text=any_text.filter(lambda t: "{" not in t), a=st.floats(0, 100), r=st.floats(0, 100))
def test_rubric_scores_appended_are_recovered(text, a, r):
    payload = json.dumps({"score_answer": a, "score_reasoning": r, "evaluation_details": {}})
    scores = kind_for("rubric_scores")
    verdict = scores.parse(f"{text}\n```json\n{payload}\n```")
    assert verdict.value == scores.score_label({"score_answer": a, "score_reasoning": r})


@settings(max_examples=200, deadline=None)
@given(prefix=st.text(alphabet=st.characters(blacklist_categories=["L", "N"]), max_size=50),
       label=st.sampled_from(["entailment", "not_entailment", "contradiction", "neutral"]))
def test_label_appended_to_text_without_words_is_recovered(prefix, label):
    labels = ("entailment", "contradiction", "neutral", "not_entailment")
    assert parse_label_set(f"{prefix} {label}", labels).value == label


@settings(max_examples=200, deadline=None)
@given(text=any_text.filter(lambda t: "Walmart".lower() not in t.lower()))
def test_record_entity_appended_on_its_own_first_line_is_recovered(text):
    assert parse_record_entity("Walmart\n" + text, ["Walmart"]).value == "correct"


@settings(max_examples=100, deadline=None)
@given(padding=st.text(alphabet=" \n\t", max_size=5))
def test_echoed_instruction_alone_is_unparsed_for_both_languages(padding):
    assert parse_yes_no_en(padding + EN_ECHO + padding).value is None
    assert parse_yes_no_zh(padding + ZH_ECHO + padding).value is None


# -- rubric, SuperGLUE -------------------------------------------------------------------------


def test_rubric_spans_point_at_each_scores_digits():
    text = '想想。\n```json\n{"score_answer": 48.5, "score_reasoning": "42", "evaluation_details": {"score_answer": 48.5}}\n```'
    spans = kind_for("rubric_scores").parse(text).detail["spans"]
    assert {key: text[start:end] for key, (start, end) in spans.items()} == {"score_answer": "48.5", "score_reasoning": "42"}
    prose = 'Scores {"score_answer": 7, "score_reasoning": 100.0} end'
    assert [prose[a:b] for a, b in parse_rubric_scores(prose).detail["spans"].values()] == ["7", "100.0"]


def test_rubric_fenced_json_with_details():
    text = '评分：\n```json\n{"score_answer": 48.5, "score_reasoning": 42, "evaluation_details": {"strengths": "ok"}}\n```'
    verdict = parse_rubric_scores(text)
    assert json.loads(verdict.value) == {"score_answer": 48.5, "score_reasoning": 42.0}
    assert verdict.detail["evaluation_details"] == {"strengths": "ok"}


def test_rubric_json_in_prose():
    verdict = parse_rubric_scores('My scores are {"score_answer": 70.0, "score_reasoning": 65.5} overall.')
    assert json.loads(verdict.value)["score_reasoning"] == 65.5


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('{"score_answer": 95.0, "score_reasoning": "优秀"}', "not a number"),
        ('{"score_answer": 120, "score_reasoning": 50}', "outside 0.0-100.0"),
        ('{"score_answer": 80}', "no JSON object"),
        ("no json here", "no JSON object"),
        ("", "empty"),
    ],
)
def test_rubric_unparsed(text, reason):
    verdict = parse_rubric_scores(text)
    assert verdict.value is None and reason in verdict.reason


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("True", ("True", "False"), "True"),
        ("false.", ("True", "False"), "False"),
        ("Answer: **True**", ("True", "False"), "True"),
        ("2", ("1", "2"), "2"),
        ("Choice 1", ("1", "2"), "1"),
        ("not_entailment", ("entailment", "not_entailment"), "not_entailment"),
        ("Not entailment.", ("entailment", "not_entailment"), "not_entailment"),
        ("entailment", ("entailment", "not_entailment"), "entailment"),
        ("neutral", ("entailment", "contradiction", "neutral"), "neutral"),
    ],
)
def test_superglue_labels(text, labels, expected):
    assert parse_label_set(text, labels).value == expected


@pytest.mark.parametrize(
    ("text", "labels"),
    [("True or False?", ("True", "False")), ("12", ("1", "2")), ("", ("True", "False")), ("maybe", ("True", "False")),
     ("entailment, or maybe contradiction", ("entailment", "contradiction", "neutral"))],
)
def test_superglue_ambiguous_or_missing_is_unparsed(text, labels):
    assert parse_label_set(text, labels).value is None


@pytest.mark.parametrize(("text", "said"), [("Not true", "Not true"), ("That is not true.", "not true"),
                                            ("Not false", "Not false"), ("It isn't true", "isn't true"),
                                            ("never neutral", "never neutral"), ("No true.", "No true"),
                                            ("Not really true", "Not really true"), ("cannot be true", "cannot be true"),
                                            ("Answer: False (not True)", "not True")])
def test_a_negated_label_is_unparsed_not_read_as_that_label(text, said):
    verdict = parse_label_set(text, ("True", "False", "neutral"))
    assert verdict.value is None and verdict.reason == f"negates a label ({said!r}): it names none"
    rte = ("entailment", "not_entailment")
    assert parse_label_set("No entailment.", rte).value is None, "never read as the entailment it denies"
    assert parse_label_set("It is not an entailment.", rte).value is None
    assert parse_label_set("Not entailment.", rte).value == "not_entailment", "the label itself"
    assert parse_label_set("Is it true? No.", ("True", "False")).value is None, "a label asked about is not given"
    assert parse_label_set("Is it true? It is False.", ("True", "False")).value == "False"


def test_record_normalisation_matches_the_metric():
    assert normalize_record("The  Walmart, Inc.!") == "walmart inc"
    assert parse_record_entity("walmart.", ["Walmart"]).value == "correct"
    assert parse_record_entity("The Walmart", ["Walmart"]).value == "correct"
    assert parse_record_entity("Target", ["Walmart"], ["Walmart", "Target"]).value == "incorrect"
    assert parse_record_entity("", ["Walmart"]).value is None


RECORD_ENTITIES = ["Tracy Morgan", "New Jersey", "Morgan", "U.S.", "Joe Biden", "Biden"]


@pytest.mark.parametrize(("text", "gold", "verdict", "entity"), [
    ("The answer is New Jersey.", "New Jersey", "correct", "New Jersey"),  # extra text, as for labels
    ("The answer is: Tracy Morgan", "Tracy Morgan", "correct", "Tracy Morgan"),
    ("The answer is: Tracy Morgan", "New Jersey", "incorrect", "Tracy Morgan"),
    ("**the  tracy morgan**.", "Tracy Morgan", "correct", "Tracy Morgan"),
    ("Morgan", "Tracy Morgan", "incorrect", "Morgan"),  # an entity of its own: the metric's exact match
    ("Tracy Morgan was hospitalized; Tracy Morgan.", "Tracy Morgan", "correct", "Tracy Morgan"),  # one entity, twice
    ("Who was hurt, Tracy Morgan? No: New Jersey.", "New Jersey", "correct", "New Jersey"),  # asked about, not given
    ("US", "U.S.", "correct", "U.S."),  # the metric takes punctuation out of words: "U.S." is "us"
    ("The answer is the U.S.", "U.S.", "correct", "U.S."),
    ("(Tracy Morgan)", "Tracy Morgan", "correct", "Tracy Morgan"),
    ("Tracy Morgan's", "Tracy Morgan", "correct", "Tracy Morgan"),  # a word ends at any punctuation
    ("Morgan—the comedian", "Morgan", "correct", "Morgan"),
    ("U.S.-led", "U.S.", "correct", "U.S."),
])
def test_record_answer_is_the_one_passage_entity_it_names(text, gold, verdict, entity):
    parsed = parse_record_entity(text, [gold], RECORD_ENTITIES)
    assert (parsed.value, parsed.detail) == (verdict, {"entity": entity})


@pytest.mark.parametrize(("text", "reason"), [
    ("Tracy Morgan and New Jersey", "names more than one entity: Tracy Morgan, New Jersey"),
    ("Biden/Morgan", "names more than one entity: Biden, Morgan"),
    ("Biden,Morgan", "names more than one entity: Biden, Morgan"),
    ("Bob", "names none of the passage's entities"),
    ("特雷西·摩根", "names none of the passage's entities"),
    ("It is not New Jersey.", "negates an entity ('not New Jersey'): it names none"),
    ("", "empty output"),
])
def test_record_answer_naming_two_entities_or_none_is_unparsed(text, reason):
    parsed = parse_record_entity(text, ["New Jersey"], RECORD_ENTITIES)
    assert (parsed.value, parsed.reason) == (None, reason)


def test_rubric_objects_giving_different_scores_are_unparsed_naming_both():
    draft = '{"score_answer": 20.0, "score_reasoning": 20.0, "evaluation_details": {}}'
    final = '{"score_answer": 90, "score_reasoning": "90.0"}'
    verdict = parse_rubric_scores(f"{draft}\n修正后：\n```json\n{final}\n```")
    assert verdict.value is None and verdict.reason == (
        "2 JSON objects give different scores: score_answer 20.0, score_reasoning 20.0; "
        "score_answer 90.0, score_reasoning 90.0")
    again = parse_rubric_scores(f"{final}\n再次确认：\n{final.replace('90,', '90.0,')}")
    assert json.loads(again.value) == {"score_answer": 90.0, "score_reasoning": 90.0}, "the same scores twice are one verdict"


def test_a_rubric_object_giving_a_score_twice_differently_is_unparsed():
    verdict = parse_rubric_scores('{"score_answer": 20, "score_reasoning": 30, "score_answer": 90}')
    assert verdict.value is None and verdict.reason == "one JSON object gives score_answer more than once, differently: 20, 90"
    same = parse_rubric_scores('{"score_answer": 90, "score_reasoning": 30, "score_answer": 90.0}')
    assert json.loads(same.value) == {"score_answer": 90.0, "score_reasoning": 30.0}, "the same score twice is that score"


@pytest.mark.parametrize(("text", "expected"), [("２", "2"), ("１。", "1"), ("Choice ２", "2"), ("答案：２", "2")])
def test_full_width_digits_are_digits(text, expected):
    assert parse_label_set(text, ("1", "2")).value == expected
    assert parse_label_set("１２", ("1", "2")).value is None, "still one word, as 12 is"


@pytest.mark.parametrize(("text", "lang", "right"), [
    # what C3's process_results.py said of each output, run on them unchanged
    ("Yes, the student is right.", "en", False),  # no marker: wrong, however it starts
    ("yes", "en", False),
    ("the answer is: yes. The answer is: no.", "en", True),  # each marker is split on by itself
    ("The answer is: no. the answer is: Yes", "en", True),
    ("The answer is: **yes**", "en", False),
    ("the answer is: yes", "en", True),
    ("是。", "zh", False),
    ("最终答案为：是", "zh", True),
    ("最终答案为:是", "zh", False),
    ("最终答案为：否。最终答案为：是。", "zh", True),
    ("最终答案为：是。最终答案为：否。", "zh", False),
])
def test_c3_rule_reads_each_output_as_c3s_scoring_script_did(text, lang, right):
    assert c3_right(text, lang) is right


def c3_script_rule(text: str, lang: str) -> bool:
    """C3's process_results.py as written: split on each marker, and the last piece starts with the yes word."""
    starts = {"en": ("Yes", "yes"), "zh": ("是",)}[lang]
    markers = {"en": ("The answer is: ", "the answer is: "), "zh": ("最终答案为：",)}[lang]
    return any(len(pieces := text.split(marker)) > 1 and pieces[-1].startswith(starts) for marker in markers)


@given(st.lists(st.sampled_from(["The answer is: ", "the answer is: ", "最终答案为：", "Yes", "yes", "是", "否", "no",
                                 "The answer is", ": ", " ", "：", "\n", "T", "x"]), max_size=12).map("".join),
       st.sampled_from(["en", "zh"]))
@settings(max_examples=400)
def test_c3_rule_reads_any_output_as_the_scripts_split_does(text, lang):
    assert c3_right(text, lang) is c3_script_rule(text, lang)
