"""SVG snapshots of the main screen: an English item, a Chinese item, and blind mode.
Refresh them after an intended change with `pytest tests/test_snapshots.py --snapshot-update`."""

from __future__ import annotations

from tests.tui_helpers import make_app

SIZE = (130, 36)


def test_english_item(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="c3/heterograph", lang="en"), terminal_size=SIZE)


def test_chinese_item_lines_up(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="c3/multi-turn", lang="zh"), terminal_size=SIZE)


def test_blind_mode(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="c3/pause", lang="zh", blind=True), terminal_size=SIZE)
