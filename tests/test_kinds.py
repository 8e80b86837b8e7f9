"""Verdict kinds as people see them: badge colours keep WCAG AA contrast in every colour depth."""

from __future__ import annotations

import pytest
from rich.color import Color, ColorSystem

from calibrate.kinds import BADGE_COLOURS, BADGE_TEXT, STATUS_BADGES, kind_for


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
