"""The panels' text widget: what it shows after each change is what was given, whether the new
text is taller, shorter or as tall as the old one (it skips the screen's layout only when the
height cannot have changed); and the annotation screen leaves the garbage collector as it found it."""

from __future__ import annotations

import gc

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll

from calibrate.tui.text_view import TextView
from tests.tui_helpers import make_app, screen_text


class OneText(App):
    CSS = "TextView { margin-bottom: 1; }"

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield TextView("one line", id="shown")
            yield TextView("below", id="below")


async def test_each_text_is_shown_whole_and_what_follows_moves_with_its_height():
    app = OneText()
    async with app.run_test(size=(40, 20)) as pilot:
        shown, below = app.query_one("#shown", TextView), app.query_one("#below", TextView)
        steps = [
            ("first\nsecond\nthird", 3),  # taller: laid out again
            (Text("uno\ndos\ntres", style="bold"), 3),  # as tall: repainted in place
            ("a line much longer than the forty cells of this terminal, so it wraps", 2),  # shorter, by wrapping
            ("a line much longer than the forty cells of this terminal, so it wraps", 2),  # the same again
            ("", 1),
        ]
        for content, height in steps:
            shown.show_text(content)
            await pilot.pause()
            text = screen_text(app)
            plain = content.plain if isinstance(content, Text) else content
            for line in plain.split("\n"):
                assert " ".join(line.split()[:3]) in text
            assert shown.region.height == height
            assert below.region.y == shown.region.y + height + 1, "the widget below moves with the height"
            assert shown.content == content


async def test_the_annotation_screen_freezes_the_collector_only_while_it_runs(demo_db):
    assert gc.get_freeze_count() == 0
    app = make_app(demo_db)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
