"""SVG snapshots of the main screen at 80x24 (an SSH terminal): an English item, a Chinese
item, blind mode, and a long BoolQ item folded; and one wide screen at 160x45.
Refresh them after an intended change with `pytest tests/test_snapshots.py --snapshot-update`."""

from __future__ import annotations

from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from tests.tui_helpers import make_app

SIZE = (80, 24)
WIDE = (160, 45)


def test_english_item(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="c3/heterograph", lang="en"), terminal_size=SIZE)


def test_chinese_item_lines_up(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="c3/multi-turn", lang="zh"), terminal_size=SIZE)


def test_blind_mode(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="c3/pause", lang="zh", blind=True), terminal_size=SIZE)


def test_long_boolq_item_folded(snap_compare, tmp_path):
    db = tmp_path / "long.db"
    store = Store(db)
    passage = " ".join(f"Sentence {k} tells more of the river's long history and of the towns on its banks."
                       for k in range(1, 61))
    ids, _ = store.add_items([NewItem("superglue/boolq", "en", "long", {
        "question": "is the river longer than 100 km", "passage": passage,
        "response": "True: the passage says it runs for 340 km."}, "True")], with_ids=True)
    store.add_judgments([NewJudgment(item_id=ids[0], judge_name="rule", judge_key="r", status="verdict",
                                     verdict="True", raw_output="True", template_id="superglue/boolq")])
    store.close()
    assert snap_compare(make_app(db), terminal_size=SIZE)


def test_wide_wic_item(snap_compare, demo_db):
    assert snap_compare(make_app(demo_db, task="superglue/wic"), terminal_size=WIDE)
