"""The annotation queue's store side: leasing the next item to an annotator (with overlap,
so several people can share a database without colliding), and the item ids and counts a queue
is built from (decided, contested, unstable)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from calibrate.model import DECISION_ACTIONS, PROCESS_HOLDER, dump_json, holder_process, now_iso
from calibrate.store.sql import DECIDES_JSON, IN_FORCE, LABELS_JSON, VISIBLE

DEFAULT_LEASE_SECONDS = 30 * 60
LABELS_LATELY = 500  # how many of an annotator's latest labels `labels_lately` gives
KEPT_STRATIFIED_ORDERS = 8  # stratified queues kept (`keep_stratified_order`), the latest made
# how many labels are in force on the item named by `{item}`
_LABELS_IN_FORCE = "(SELECT count(*) FROM labels_in_force f WHERE f.item_id = {item})"


class QueueMixin:
    """Leases and the queue's reads (part of Store)."""

    def count_decided(
        self, annotator: str, *, task: str | None = None, lang: str | None = None, system: str | None = None
    ) -> int:
        """Items this annotator has a decision in force on (label, skip or flag)."""
        where, params = self._item_filter(task, lang, None, None, system)
        return self.conn.execute(
            f"SELECT count(DISTINCT a.item_id) FROM annotations a JOIN items i ON i.id = a.item_id "
            f"WHERE a.annotator = ? AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE} AND {where}",
            [annotator, DECIDES_JSON, *params],
        ).fetchone()[0]

    def count_labelled(self, annotator: str, *, task: str | None = None, lang: str | None = None,
                       system: str | None = None) -> int:
        """Items on which this annotator has a label in force (skips and flags are not labels)."""
        where, params = self._item_filter(task, lang, None, None, system)
        return self.conn.execute(
            f"SELECT count(*) FROM current_labels c JOIN items i ON i.id = c.item_id WHERE c.annotator = ? AND {where}",
            [annotator, *params],
        ).fetchone()[0]

    def decided_item_ids(self, annotator: str, action: str, *, task: str | None = None,
                         lang: str | None = None, system: str | None = None) -> list[int]:
        """Items whose latest decision in force by this annotator is `action` (skip or flag),
        in the order those decisions were made."""
        where, params = self._item_filter(task, lang, None, None, system)
        sql = f"""
        SELECT d.item_id FROM (
            SELECT a.item_id, a.action, max(a.id) AS latest FROM annotations a
            WHERE a.annotator = ? AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE}
            GROUP BY a.item_id) d
        JOIN items i ON i.id = d.item_id WHERE d.action = ? AND {where} ORDER BY d.latest
        """
        return [r[0] for r in self.conn.execute(sql, [annotator, DECIDES_JSON, action, *params])]

    def labels_lately(self, annotator: str, *, task: str | None = None, lang: str | None = None,
                      system: str | None = None, limit: int = LABELS_LATELY) -> list[tuple[int, str, str, str, str, str]]:
        """(item id, task, lang, source id, label, decided at) of the items this annotator's label
        is in force on, the latest decided first (merged labels by when they were decided, not
        when they came in), at most `limit`: read backwards along labels_in_force_by_time,
        so the latest come at once however many there are."""
        where, params = self._item_filter(task, lang, None, None, system)
        return [tuple(r) for r in self.conn.execute(f"""
            SELECT l.item_id, i.task, i.lang, i.source_id, l.label, l.decided_at
            FROM labels_in_force l INDEXED BY labels_in_force_by_time JOIN items i ON i.id = l.item_id
            WHERE l.annotator = ? AND {where} ORDER BY l.decided_at DESC LIMIT ?""", [annotator, *params, limit])]

    def contested_item_ids(self, *, task: str | None = None, lang: str | None = None, judge: str | None = None,
                           system: str | None = None, between: tuple[int, int] | None = None,
                           overlap: int | None = None) -> list[int]:
        """Items whose latest verdict is unparsed (or an error), or whose judges disagree; only
        item ids within `between` (inclusive) when given, so a queue can read them in slices;
        only items with fewer than `overlap` labels in force when given (`_open_to_labels`:
        no claim at that overlap leases the others), so a queue's windows hold only items it may
        lease."""
        where, params = self._item_filter(task, lang, None, None, system)
        judge_clause, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
        if between:
            judge_clause += " AND item_id BETWEEN ? AND ?"
            judge_params += list(between)
        if overlap is not None:
            judge_clause += f" AND {_LABELS_IN_FORCE.format(item='verdicts_in_force.item_id')} < ?"
            judge_params.append(overlap)
        sql = f"""
        WITH latest AS (SELECT item_id, status, verdict FROM verdicts_in_force WHERE 1{judge_clause})
        SELECT l.item_id FROM latest l JOIN items i ON i.id = l.item_id WHERE {where}
        GROUP BY l.item_id
        HAVING sum(l.status != 'verdict') > 0 OR count(DISTINCT l.verdict) > 1
        ORDER BY l.item_id
        """
        return [r[0] for r in self.conn.execute(sql, [*judge_params, *params])]

    def unstable_item_ids(self, *, task: str | None = None, lang: str | None = None, judge: str | None = None,
                          system: str | None = None, between: tuple[int, int] | None = None,
                          overlap: int | None = None) -> list[int]:
        """Items on which one judge configuration gave different parsed verdicts over its
        repeats (`judge --repeat`), newest judgment per sample; only item ids within `between`
        (inclusive) when given, so a queue can read them in slices; only items with fewer than
        `overlap` labels in force when given (as `contested_item_ids`)."""
        where, params = self._item_filter(task, lang, None, None, system)
        judge_clause, judge_params = (" AND judge_name = ?", [judge]) if judge else ("", [])
        low, high = between or (0, 2**63 - 1)
        open_clause, open_params = ((f" WHERE {_LABELS_IN_FORCE.format(item='d.item_id')} < ?", [overlap])
                                    if overlap is not None else ("", []))
        # only items with a repeat (a sample > 0, found by migration 0014's index) can be unstable
        sql = f"""
        WITH repeated AS (SELECT item_id FROM (SELECT DISTINCT item_id FROM judgments INDEXED BY judgments_repeats
                                               WHERE sample > 0 AND item_id BETWEEN ? AND ?) d{open_clause}),
        latest AS (SELECT max(j.id) AS id FROM repeated r CROSS JOIN judgments j ON j.item_id = r.item_id
                   WHERE j.status != 'error'{judge_clause.replace('judge_name', 'j.judge_name')}
                   GROUP BY j.item_id, j.judge_key, j.sample)
        SELECT j.item_id FROM judgments j JOIN latest l ON l.id = j.id JOIN items i ON i.id = j.item_id
        WHERE j.status = 'verdict' AND {where}
        GROUP BY j.item_id, j.judge_key HAVING count(DISTINCT j.verdict) > 1
        """
        return sorted({r[0] for r in self.conn.execute(sql, [low, high, *open_params, *judge_params, *params])})

    def unlabelled_ids(self, item_ids: Sequence[int]) -> list[int]:
        """Those of `item_ids` on which nobody has a label in force, in the order given."""
        labelled = {r[0] for r in self.conn.execute(
            "SELECT item_id FROM labels_in_force WHERE item_id IN (SELECT value FROM json_each(?))",
            (dump_json(list(item_ids)),))}
        return [i for i in item_ids if i not in labelled]

    # -- leases ---------------------------------------------------------------------------

    _ELIGIBLE = f"""
        NOT EXISTS (
            SELECT 1 FROM annotations a WHERE a.item_id = i.id AND a.annotator = :me
            AND a.action IN (SELECT value FROM json_each(:decides)) AND {IN_FORCE})
        AND (
            SELECT count(DISTINCT a.annotator) FROM annotations a
            WHERE a.item_id = i.id AND a.annotator != :me AND a.action IN (SELECT value FROM json_each(:labels)) AND {IN_FORCE})
          + (SELECT count(*) FROM leases l
             WHERE l.item_id = i.id AND l.annotator != :holder AND l.expires_at > :now) < :overlap
        AND NOT EXISTS (
            SELECT 1 FROM leases l WHERE l.item_id = i.id AND l.annotator != :holder AND l.expires_at > :now
            AND (l.annotator = :me OR substr(l.annotator, 1, length(:me) + 2) = :me || ' @'))
    """

    def claim_next(
        self,
        annotator: str,
        *,
        overlap: int = 1,
        task: str | None = None,
        lang: str | None = None,
        system: str | None = None,
        after_id: int = 0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        holder: str | None = None,
    ) -> int | None:
        """Lease the next item (in id order, after `after_id`, wrapping round) that this
        annotator has not decided, that fewer than `overlap` other annotators have labelled
        or hold, and that no other session of this annotator holds (`holder`, see
        lease_holder). A lease expires, so a crashed annotator's items come back."""
        clauses = ["i.id > :after", "i.current = 1"]
        # with task and lang, the (task, lang) index walks in id order; with one of them alone it
        # would sort every match of the cell, so walk the id order instead (the unary +)
        plus = "" if task and lang else "+"
        if task:
            clauses.append(f"{plus}i.task = :task")
        if lang:
            clauses.append(f"{plus}i.lang = :lang")
        if system is not None:
            clauses.append("i.system = :system")
        sql = (f"SELECT i.id FROM items i WHERE {' AND '.join(clauses)} AND {VISIBLE} AND {self._ELIGIBLE} "
               "ORDER BY i.id LIMIT 1")
        recheck = f"SELECT 1 FROM items i WHERE i.id = :id AND {VISIBLE} AND {self._ELIGIBLE}"
        params = {"me": annotator, "holder": holder or annotator, "overlap": overlap, "task": task, "lang": lang,
                  "system": system, "decides": DECIDES_JSON, "labels": LABELS_JSON}
        after, wrapped = after_id, not after_id
        while True:
            # find a candidate outside the write lock, then lease it if it is still free: the
            # lock is held for a lookup by id, not for the search
            row = self.conn.execute(sql, {**params, "now": time.time(), "after": after}).fetchone()
            if row is None:
                if wrapped:
                    return None
                after, wrapped = 0, True
                continue
            with self.transaction():
                now = time.time()
                if self.conn.execute(recheck, {**params, "now": now, "id": row[0]}).fetchone():
                    self._lease(row[0], holder or annotator, now + lease_seconds)
                    return row[0]
            after = row[0]

    def claim_first(
        self,
        annotator: str,
        candidates: Sequence[int],
        *,
        overlap: int = 1,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        skipped_too: bool = False,
        holder: str | None = None,
        task: str | None = None,
        lang: str | None = None,
        system: str | None = None,
    ) -> int | None:
        """Lease the first eligible item of `candidates` (a queue in the caller's order) that is
        a current item of the filter (`task`, `lang`, `system`: candidates may be any ids);
        `skipped_too` lets items this annotator skipped be taken again. Candidates are checked
        8 at a time, then in chunks doubling up to 256: the first is usually eligible, and
        each check of an item scattered over a large table costs page reads. Items with
        `overlap` labels in force or more are dropped from each chunk first, by one look-up each
        in `labels_in_force` (none of them is eligible: this annotator or `overlap` others
        labelled it), so a long labelled stretch of the queue costs a look-up per item, not the
        whole check."""
        decides = dump_json([a for a in DECISION_ACTIONS if a != "skip"]) if skipped_too else DECIDES_JSON
        where, filters = self._item_filter(task, lang, None, None, system)
        with self.transaction():
            now = time.time()
            start, size = 0, 8
            while start < len(candidates):
                chunk = list(candidates[start : start + size])
                start, size = start + size, min(2 * size, 256)
                open_ = self._open_to_labels(chunk, overlap)
                chunk = [item_id for item_id in chunk if item_id in open_]
                if not chunk:
                    continue
                marks = ",".join(f":c{k}" for k in range(len(chunk)))
                params = {"me": annotator, "holder": holder or annotator, "now": now, "overlap": overlap,
                          "decides": decides, "labels": LABELS_JSON}
                params.update({f"c{k}": v for k, v in enumerate(chunk)})
                params.update({f"f{k}": v for k, v in enumerate(filters)})
                named = where
                for k in range(len(filters)):  # the filter's positional marks, named
                    named = named.replace("?", f":f{k}", 1)
                eligible = {
                    r[0]
                    for r in self.conn.execute(
                        f"SELECT i.id FROM items i WHERE i.id IN ({marks}) AND {named} AND {self._ELIGIBLE}", params
                    )
                }
                for item_id in chunk:
                    if item_id in eligible:
                        self._lease(item_id, holder or annotator, now + lease_seconds)
                        return item_id
            return None

    def _open_to_labels(self, item_ids: Sequence[int], overlap: int) -> set[int]:
        """Those of `item_ids` with fewer than `overlap` labels in force: whoever asks, none of
        the others can be leased (`_ELIGIBLE`: the asker labelled it, or `overlap` others did).
        Only these come back as rows, so a labelled stretch costs its look-ups and no rows."""
        return {r[0] for r in self.conn.execute(
            "SELECT value FROM json_each(?) WHERE (SELECT count(*) FROM labels_in_force f WHERE f.item_id = value) < ?",
            (dump_json(list(item_ids)), overlap))}

    def hold(self, item_id: int, holder: str, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        """Lease `item_id` to `holder` again (an item its session shows again once its decision
        is undone), so that no other session takes it meanwhile."""
        with self.transaction():
            self._lease(item_id, holder, time.time() + lease_seconds)

    def _lease(self, item_id: int, holder: str, expires_at: float) -> None:
        self.conn.execute(
            "INSERT INTO leases (item_id, annotator, expires_at) VALUES (?, ?, ?) "
            "ON CONFLICT (item_id, annotator) DO UPDATE SET expires_at = excluded.expires_at",
            (item_id, holder, expires_at),
        )

    def release_ended_sessions(self, annotator: str, running: Callable[[int], bool]) -> int:
        """Give back the items held by sessions of `annotator` that ran in a process that is no
        longer `running` (`lease_holder` without a tab: an app killed before it could give them
        back), at once instead of when their leases expire. Returns how many leases were given back.
        Writes only when there are some (a process that ended stays ended: read before)."""
        prefix = f"{annotator} {PROCESS_HOLDER}"
        holders = [h for (h,) in self.conn.execute(
            "SELECT DISTINCT annotator FROM leases WHERE substr(annotator, 1, ?) = ?", (len(prefix), prefix))]
        ended = [h for h in holders if (pid := holder_process(h, annotator)) is not None and not running(pid)]
        if not ended:
            return 0
        with self.transaction():
            return self.conn.execute("DELETE FROM leases WHERE annotator IN (SELECT value FROM json_each(?))",
                                     (dump_json(ended),)).rowcount

    def release_all(self, holder: str) -> None:
        """Give back every item this lease holder (an annotator, or one session of one) holds;
        writes only while it holds some (so a holder with none never waits for another writer)."""
        if self.conn.execute("SELECT 1 FROM leases WHERE annotator = ? LIMIT 1", (holder,)).fetchone():
            with self.transaction():
                self.conn.execute("DELETE FROM leases WHERE annotator = ?", (holder,))

    # -- kept stratified queues ------------------------------------------------------------

    def _items_stamp(self) -> str | None:
        """A string that changes whenever the ids of the current items in each cell may: the
        highest item id (every item added raises it, or gives back ids a killed import took),
        and the import runs (their number, highest id and last finish: an import's items show,
        and supersede older versions, when it finishes). None while an import runs, whose items
        stay hidden until then."""
        row = self.conn.execute(
            "SELECT (SELECT max(id) FROM items), count(*), max(id), max(finished_at), count(*) - count(finished_at) "
            "FROM import_runs").fetchone()
        return None if row[4] else "|".join(map(str, row[:4]))

    @contextmanager
    def cell_id_texts(self, *, task: str | None = None, lang: str | None = None, system: str | None = None
                      ) -> Iterator[tuple[str | None, Iterator[tuple[tuple[str, str, str], str]]]]:
        """The items' stamp (`_items_stamp`) and each cell of the filter in sorted order with its
        ids (`item_ids_text`), all in one snapshot of the database (a read transaction, held until
        the block ends). A cell's ids are read when it is taken, so the first cell's come after
        one cell's read (about 0.01 s of the 0.2 s all twenty take at a million items)."""
        in_transaction = self.conn.in_transaction
        if not in_transaction:
            self.conn.execute("BEGIN")
        try:
            stamp = self._items_stamp()
            cells = self.cells(task=task, lang=lang, system=system)
            yield stamp, ((cell, self.item_ids_text(task=cell[0], lang=cell[1], system=cell[2])) for cell in cells)
        finally:
            if not in_transaction and self.conn.in_transaction:
                self.conn.execute("COMMIT")

    def kept_stratified_order(self, scope: dict, seed: int) -> bytes | None:
        """The stratified queue of the filter `scope` and `seed` as `keep_stratified_order`
        kept it, if it was worked out from the items as they are (same stamp); else None."""
        stamp = self._items_stamp()
        if stamp is None:
            return None
        row = self.conn.execute("SELECT ids FROM stratified_orders WHERE scope = ? AND seed = ? AND items_stamp = ?",
                                (_scope_key(scope), seed, stamp)).fetchone()
        return row[0] if row else None

    def keep_stratified_order(self, scope: dict, seed: int, stamp: str, ids: bytes) -> None:
        """Keep the stratified queue of the filter `scope` and `seed` (`ids`: 8 bytes each,
        little-endian), worked out from the items of `stamp`; only the KEPT_STRATIFIED_ORDERS
        latest kept stay."""
        with self.transaction():
            self.conn.execute("INSERT OR REPLACE INTO stratified_orders (scope, seed, items_stamp, ids, made_at) "
                              "VALUES (?, ?, ?, ?, ?)", (_scope_key(scope), seed, stamp, ids, now_iso()))
            self.conn.execute("DELETE FROM stratified_orders WHERE (scope, seed) NOT IN (SELECT scope, seed FROM "
                              "stratified_orders ORDER BY made_at DESC LIMIT ?)", (KEPT_STRATIFIED_ORDERS,))


def _scope_key(scope: dict) -> str:
    """How a session's filter is named in stratified_orders."""
    return dump_json([scope.get("task"), scope.get("lang"), scope.get("system")])
