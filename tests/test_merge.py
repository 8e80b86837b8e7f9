"""`calibrate merge`: an offline annotator's database folded in."""

from __future__ import annotations

from calibrate.model import NewItem
from calibrate.store import Store
from tests.conftest import Calibrate


def test_merge_folds_an_offline_database_in_once(demo_db, tmp_path, templates):
    from calibrate.demo import load_demo

    offline = Store(tmp_path / "offline.db")
    load_demo(offline, templates)
    item = offline.items(task="c3/lexical")[0]
    judgment = offline.judgments_for_item(item.id)[0]
    first = offline.annotate(item.id, "offline-ann", "override", label="no", judgment_id=judgment.id, note="judge too lenient")
    offline.undo_last("offline-ann")
    offline.annotate(item.id, "offline-ann", "label", label="yes")
    extra = offline.add_items([NewItem("c3/lexical", "en", "new-1", {"content": "c", "notation": "n", "response": "r"})], with_ids=True)[0][0]
    offline.annotate(extra, "offline-ann", "label", label="no")
    offline.close()
    run = Calibrate(demo_db)
    out = run("merge", str(tmp_path / "offline.db"))
    assert "1 items, 0 judgments, 4 annotations added" in out.output
    assert "0 items, 0 judgments, 0 annotations added" in run("merge", str(tmp_path / "offline.db")).output
    store = Store(demo_db)
    merged = store.item(store.source_index("c3/lexical", "en", item.system)[item.source_id])
    rows = [r for r in store.annotations() if r["item_id"] == merged.id]
    assert [r["action"] for r in rows] == ["override", "undo", "label"]
    assert rows[1]["reverts_id"] == rows[0]["id"] and rows[0]["judgment_id"] is not None and first
    assert store.current_label(merged.id, "offline-ann") == "yes"
