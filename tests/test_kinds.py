"""Verdict kinds: one definition of labels, polarity, overrides, label forms and C3's wording;
badge colours keep WCAG AA contrast in every colour depth."""

from __future__ import annotations

import json

import pytest
from rich.color import Color, ColorSystem

from calibrate.kinds import (
    BADGE_COLOURS,
    BADGE_TEXT,
    NEGATIVE,
    POSITIVE,
    STATUS_BADGES,
    LabelError,
    kind_for,
)
from calibrate.templates import TemplateSet

EN, ZH = kind_for("yes_no_en"), kind_for("yes_no_zh")
SCORES = kind_for("rubric_scores")


def test_english_and_chinese_share_a_polarity_and_pool():
    assert (EN.polarity("yes"), EN.polarity("no")) == (POSITIVE, NEGATIVE)
    assert (ZH.polarity("是"), ZH.polarity("否")) == (POSITIVE, NEGATIVE)
    assert EN.pool_key == ZH.pool_key != kind_for("label_set", ("True", "False")).pool_key
    assert [ZH.canonical(x) for x in ZH.labels] == [EN.canonical(x) for x in EN.labels]


def test_override_flips_binary_kinds_only():
    assert (EN.flip("yes"), ZH.flip("否"), kind_for("label_set", ("1", "2")).flip("1")) == ("no", "是", "2")
    assert kind_for("label_set", ("entailment", "contradiction", "neutral")).flip("neutral") is None


def test_y_and_n_only_where_labels_read_yes_no():
    assert EN.reads_yes_no and ZH.reads_yes_no and kind_for("label_set", ("True", "False")).reads_yes_no
    assert not kind_for("label_set", ("entailment", "not_entailment")).reads_yes_no
    assert not kind_for("label_set", ("1", "2")).reads_yes_no


def test_labels_match_case_insensitively_where_unambiguous():
    boolq = kind_for("label_set", ("True", "False"))
    assert boolq.normalize_label("true") == "True" and boolq.normalize_label(True) == "True"
    assert EN.normalize_label(" YES ") == "yes"
    with pytest.raises(LabelError, match="not one of yes, no"):
        EN.normalize_label("maybe")


def test_scores_have_one_stored_form_and_refuse_bad_numbers():
    stored = SCORES.score_label({"score_answer": "80", "score_reasoning": 70.04})
    assert stored == json.dumps({"score_answer": 80.0, "score_reasoning": 70.0}, sort_keys=True)
    assert SCORES.normalize_label(stored) == stored and SCORES.parse(f"```json\n{stored}\n```").value == stored
    for bad in ({"score_answer": float("nan"), "score_reasoning": 1}, {"score_answer": -1, "score_reasoning": 1},
                {"score_answer": 1}, "great", {"score_answer": True, "score_reasoning": 1}):
        with pytest.raises(LabelError):
            SCORES.score_label(bad)
    assert SCORES.scored and not EN.scored


def test_scores_round_half_up_to_a_tenth_as_people_do():
    judge = SCORES.parse('{"score_answer": 75.25, "score_reasoning": 64.95}').value
    person = SCORES.normalize_label({"score_answer": 75.3, "score_reasoning": "65.0"})
    assert judge == person == json.dumps({"score_answer": 75.3, "score_reasoning": 65.0}, sort_keys=True)
    assert SCORES.score_label({"score_answer": 0.05, "score_reasoning": 99.95}) == json.dumps(
        {"score_answer": 0.1, "score_reasoning": 100.0}, sort_keys=True)
    with pytest.raises(LabelError, match="score_answer must be a number, not '4,5'"):
        SCORES.score_label({"score_answer": "4,5", "score_reasoning": 1})


def test_c3_wording_and_display():
    assert (EN.c3_wording("yes"), ZH.c3_wording("否")) == ("The answer is: yes.", "最终答案为：否。")
    assert EN.words("yes") == "YES" and ZH.words("是") == "是"
    assert (EN.colour("yes"), EN.colour("no"), kind_for("label_set", ("1", "2")).colour("1")) == (
        BADGE_COLOURS[POSITIVE], BADGE_COLOURS[NEGATIVE], BADGE_COLOURS["other"])


def test_every_bundled_template_has_a_kind_with_labels():
    """Templates that list no tasks (Inspect's) get their labels with each task's data."""
    for template in TemplateSet().templates.values():
        kind = template.kind
        assert kind.scored or kind.labels or not template.tasks, template.id


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2.x contrast ratio (L1 + 0.05) / (L2 + 0.05) of two sRGB colours, with the relative
    luminance L = 0.2126 R + 0.7152 G + 0.0722 B of linearised channels
    (https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio)."""

    def luminance(rgb) -> float:
        r, g, b = ((c / 255 / 12.92) if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def shown(colour: str, system: ColorSystem) -> tuple[int, int, int]:
    """The RGB a terminal with this colour depth shows for `colour` (rich's palettes)."""
    triplet = Color.parse(colour).downgrade(system).get_truecolor()
    return triplet.red, triplet.green, triplet.blue


PAIRS = [(BADGE_TEXT, background) for background in BADGE_COLOURS.values()] + list(STATUS_BADGES.values())


@pytest.mark.parametrize("system", [ColorSystem.TRUECOLOR, ColorSystem.EIGHT_BIT, ColorSystem.STANDARD])
@pytest.mark.parametrize(("text", "background"), PAIRS)
def test_badges_pass_wcag_aa_in_every_colour_depth(text, background, system):
    assert contrast(shown(text, system), shown(background, system)) >= 4.5


def test_yes_and_no_badges_differ_and_come_from_the_kind():
    en, zh = kind_for("yes_no_en"), kind_for("yes_no_zh")
    assert en.colour("yes") == zh.colour("是") != en.colour("no") == zh.colour("否")
    assert kind_for("label_set", ("a", "b", "c")).colour("a") == BADGE_COLOURS["other"]
