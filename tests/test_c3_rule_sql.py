"""C3's rule as migration 0020's SQL reads it from a judgment's raw output (kept in score_sets for
`calibrate scores`) equals `calibrate.formats.c3.c3_right`, the rule's one Python definition, on
any output; where the SQL cannot read it, it says so, and the scores read it with c3_right."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from calibrate.formats.c3 import c3_right
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store

PIECES = ["The answer is: ", "the answer is: ", "The answer is:", "最终答案为：", "最终答案为:", "Yes", "yes", "YES",
          "是", "否", "No", " ", "\n", "**", "The answer is: The answer is: ", "\x00", "\U0010ffff", "\x1e", "\x1f"]
outputs = st.one_of(st.none(), st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=10).map("".join))
UNREADABLE = ("\x00", "\U0010ffff")


def test_c3_rule_in_sql_reads_every_output_as_c3_right():
    store = Store(":memory:")
    serial = itertools.count()

    @settings(max_examples=120, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from([("c3/lexical", "en"), ("c3/semantic", "zh")]), outputs),
                    min_size=1, max_size=10))
    def check(judged):
        k = next(serial)
        ids, _ = store.add_items([NewItem(task, lang, f"{k}-{n}", {"content": "c", "response": "r"})
                                  for n, ((task, lang), _) in enumerate(judged)], with_ids=True)
        store.add_judgments([NewJudgment(item_id=item_id, judge_name="gpt", judge_key="gpt", status="verdict",
                                         verdict="yes", raw_output=raw) for item_id, (_, raw) in zip(ids, judged, strict=True)])
        for item_id, ((_, lang), raw) in zip(ids, judged, strict=True):
            stored = store.conn.execute("SELECT verdicts FROM score_sets WHERE item_id = ?", (item_id,)).fetchone()[0]
            rule = stored.rsplit("\x1f", 1)[1]
            if raw is not None and any(c in raw for c in UNREADABLE):
                assert rule == "?", (raw, lang)
            else:
                assert rule == str(int(c3_right(raw, lang))), (raw, lang)

    try:
        check()
    finally:
        store.close()


def test_scores_read_the_outputs_the_sql_cannot_with_c3_right():
    """Items whose outputs the SQL leaves to Python are counted with c3_right's reading, each
    judge's own."""
    store = Store(":memory:")
    try:
        outputs = ["The answer is: yes\x00", "The answer is: no\x00", "x\U0010ffff the answer is: Yes", "The answer is: yes"]
        ids, _ = store.add_items([NewItem("c3/lexical", "en", str(n), {"content": "c", "response": "r"})
                                  for n in range(len(outputs))], with_ids=True)
        store.add_judgments([NewJudgment(item_id=item_id, judge_name=name, judge_key=name, status="verdict",
                                         verdict="yes", raw_output=raw if name == "gpt" else "The answer is: no")
                             for item_id, raw in zip(ids, outputs, strict=True) for name in ("gpt", "r1")])
        rows = store.score_groups(["gpt", "r1"], [("c3/lexical", "en")], c3_rule=c3_right)
        rules = sorted((row[8], row[12], row[-1]) for row in rows)  # gpt's rule, r1's rule, items
        assert rules == [(0, 0, 1), (1, 0, 3)]
    finally:
        store.close()
