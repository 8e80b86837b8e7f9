"""Annotations and the labels in force: appending a decision (append-only) and keeping
`labels_in_force` in step in the same transaction, undo (which appends), labels made
elsewhere, notes, and how long each decision's audio was listened to."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from calibrate.model import (
    DECISION_ACTIONS,
    LABEL_ACTIONS,
    REVERT_ACTION,
    Annotation,
    LabelsAdded,
    digest,
    dump_json,
    now_iso,
)
from calibrate.store.sql import (
    DECIDES_JSON,
    IN_FORCE,
    LABELLED,
    LABELS_JSON,
    VISIBLE,
    annotation_from_row,
    chunks,
)


class LabelsMixin:
    """Annotations, undo and the labels in force (part of Store)."""

    # -- annotations ----------------------------------------------------------------------

    def annotate(
        self,
        item_id: int,
        annotator: str,
        action: str,
        *,
        label: str | None = None,
        judgment_id: int | None = None,
        note: str | None = None,
        blind: bool = False,
        seconds_spent: float | None = None,
        reverts_id: int | None = None,
        uid: str | None = None,
        created_at: str | None = None,
        audio_plays: int | None = None,
        listened_seconds: float | None = None,
        holder: str | None = None,
    ) -> int:
        """Append one annotation row (and update the label in force in the same transaction);
        a decision releases the lease of `holder` (default: the annotator). `audio_plays` and
        `listened_seconds` record listening (None: the item has no audio)."""
        with self.transaction():
            row_id = self._append_annotation(
                uid or uuid.uuid4().hex, item_id, judgment_id, annotator, action, label, reverts_id, note, int(blind),
                seconds_spent, created_at or self._decision_time(), audio_plays, listened_seconds,
            )
            if action in DECISION_ACTIONS:
                self.conn.execute(
                    "DELETE FROM leases WHERE item_id = ? AND annotator = ?", (item_id, holder or annotator)
                )
            return row_id

    def _decision_time(self) -> str:
        """now_iso(), strictly later than the previous decision time of this connection, so two
        decisions in one microsecond still keep their order."""
        stamp = now_iso()
        last = getattr(self, "_last_decision_time", "")
        if stamp <= last:
            stamp = (datetime.fromisoformat(last) + timedelta(microseconds=1)).isoformat(timespec="microseconds")
        self._last_decision_time = stamp
        return stamp

    def _append_annotation(self, uid, item_id, judgment_id, annotator, action, label, reverts_id, note, blind,
                           seconds_spent, created_at, audio_plays=None, listened_seconds=None,
                           c3_file_judge=None, c3_file_text=None) -> int | None:
        """INSERT OR IGNORE one annotation row (by uid) and keep `labels_in_force` in step: a
        label decision takes over if it is later (decision time, then uid) than the one in
        force; an undo of the decision in force hands over to the latest decision not reverted.
        Returns the new row id, or None when the uid was already present. Call inside a
        transaction."""
        cursor = self.conn.execute(
            "INSERT OR IGNORE INTO annotations (uid, item_id, judgment_id, annotator, action, label, reverts_id, note, "
            "blind, seconds_spent, created_at, audio_plays, listened_seconds, c3_file_judge, c3_file_text) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (uid, item_id, judgment_id, annotator, action, label, reverts_id, note, blind, seconds_spent, created_at,
             audio_plays, listened_seconds, c3_file_judge, c3_file_text),
        )
        if cursor.rowcount == 0:
            return None
        if action in LABEL_ACTIONS and label is not None:
            # the row in force is replaced (deleted, then inserted), never updated: migration
            # 0008's counts follow inserts and deletes
            self.conn.execute(
                "DELETE FROM labels_in_force WHERE item_id = ? AND annotator = ? AND (decided_at, annotation_uid) < (?, ?)",
                (item_id, annotator, created_at, uid),
            )
            self.conn.execute(
                "INSERT OR IGNORE INTO labels_in_force "
                "(item_id, annotator, label, action, judgment_id, annotation_uid, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, annotator, label, action, judgment_id, uid, created_at),
            )
        elif action == REVERT_ACTION and reverts_id is not None:
            reverted = self.conn.execute(
                "DELETE FROM labels_in_force WHERE item_id = ? AND annotator = ? "
                "AND annotation_uid = (SELECT uid FROM annotations WHERE id = ?)",
                (item_id, annotator, reverts_id),
            ).rowcount
            if reverted:
                self.conn.execute(
                    "INSERT INTO labels_in_force (item_id, annotator, label, action, judgment_id, annotation_uid, decided_at) "
                    "SELECT a.item_id, a.annotator, a.label, a.action, a.judgment_id, a.uid, a.created_at "
                    f"FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND {LABELLED} AND {IN_FORCE} "
                    "ORDER BY a.created_at DESC, a.uid DESC LIMIT 1",
                    (item_id, annotator, LABELS_JSON),
                )
        return cursor.lastrowid

    def undo_last(self, annotator: str, among: Collection[str] | None = None) -> Annotation | None:
        """Reverse the annotator's latest decision still in force (only those whose uid is in
        `among`, when given: one browser tab undoes only its own decisions) by appending an
        `undo` row that names it and carries the label left in force. Returns the reversed row."""
        with self.transaction():
            sql = (f"SELECT * FROM annotations a WHERE a.annotator = ? "
                   f"AND a.action IN (SELECT value FROM json_each(?)) AND {IN_FORCE}")
            params: list = [annotator, DECIDES_JSON]
            if among is not None:
                sql += " AND a.uid IN (SELECT value FROM json_each(?))"
                params.append(dump_json(sorted(among)))
            row = self.conn.execute(sql + " ORDER BY a.id DESC LIMIT 1", params).fetchone()
            if row is None:
                return None
            undone = annotation_from_row(row)
            restored = self.conn.execute(
                f"SELECT a.label FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND a.id != ? "
                f"AND {LABELLED} AND {IN_FORCE} ORDER BY a.created_at DESC, a.uid DESC LIMIT 1",
                (undone.item_id, annotator, undone.id, LABELS_JSON),
            ).fetchone()
            self.annotate(
                undone.item_id, annotator, REVERT_ACTION, label=restored["label"] if restored else None,
                reverts_id=undone.id, judgment_id=undone.judgment_id, blind=bool(undone.blind),
            )
            return undone

    def add_imported_labels(self, rows: Iterable[tuple]) -> LabelsAdded:
        """Labels made elsewhere: (uid, item_id, annotator, label, note, decided_at, c3_file_judge,
        c3_file_text; an annotator's several notes on an item come as several rows; decided_at
        None where the file keeps no time; c3_file_judge the judge whose C3 generation result
        files held the label, else None, c3_file_text their words of it where they are not C3's).
        A row adds nothing where its label is the annotator's label in force on the item, its note
        is None or one of theirs on it already, and its judge's files (if any) held that label in
        those words last as far as this database knows, nor where its uid is present, so
        importing the same file twice adds nothing. A row that differs is a decision made at its
        time, else now, under a uid made of its own and the replaced decision's: the latest
        decision by time is in force (as `merge` keeps it), so a row older than the person's
        decision in force goes into the history only (counted as `older`; nothing where that very
        decision is there already), and a row without a time takes over (one that returns to an
        earlier decision puts it back in force: counted as `put_back`); rows without a time are
        timed in their order. A note already theirs on
        the item is not said twice; a row whose judge's files hold its label in other words than
        before is kept for those words (counted as `reworded`). Returns what it added, per
        annotator's label on an item."""
        added, put_back, older, notes, reworded = set(), set(), set(), 0, 0
        with self.transaction():
            for uid, item_id, annotator, label, note, decided_at, c3_file_judge, c3_file_text in rows:
                noted = note is not None and self.conn.execute(
                    "SELECT 1 FROM annotations WHERE item_id = ? AND annotator = ? AND note = ?",
                    (item_id, annotator, note)).fetchone() is not None
                in_force = self.conn.execute(
                    "SELECT annotation_uid, label, decided_at FROM labels_in_force WHERE item_id = ? AND annotator = ?",
                    (item_id, annotator)).fetchone()
                same = in_force is not None and in_force["label"] == label
                filed = self._c3_file_label(item_id, annotator, c3_file_judge) if c3_file_judge is not None else None
                held = c3_file_judge is None or (label, c3_file_text) == filed
                if same and (note is None or noted) and held:
                    continue
                late = not same and decided_at is not None and in_force is not None and decided_at < in_force["decided_at"]
                if late and self.conn.execute(
                        f"SELECT 1 FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND a.label = ? "
                        f"AND a.created_at = ? AND {LABELLED}", (item_id, annotator, label, decided_at, LABELS_JSON)
                ).fetchone():
                    continue
                if in_force is not None:
                    uid = digest(uid, in_force["annotation_uid"])
                if self._append_annotation(uid, item_id, None, annotator, "label", label, None,
                                           None if noted else note, 0, None, decided_at or self._decision_time(),
                                           c3_file_judge=c3_file_judge, c3_file_text=c3_file_text) is None:
                    continue
                if same:
                    notes += note is not None and not noted
                    reworded += filed is not None and filed[0] == label and filed[1] != c3_file_text
                    continue
                if late:
                    older.add((item_id, annotator))
                    continue
                added.add((item_id, annotator))
                if in_force is not None and decided_at is None and self.conn.execute(
                        f"SELECT 1 FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND a.label = ? "
                        f"AND {LABELLED} AND a.uid NOT IN (?, ?)", (item_id, annotator, label, LABELS_JSON, uid,
                                                                    in_force["annotation_uid"])).fetchone():
                    put_back.add((item_id, annotator))
        return LabelsAdded(len(added), len(put_back), notes, len(older), reworded)

    def current_label(self, item_id: int, annotator: str) -> str | None:
        row = self.conn.execute(
            "SELECT label FROM current_labels WHERE item_id = ? AND annotator = ?", (item_id, annotator)
        ).fetchone()
        return row["label"] if row else None

    def current_labels(self, annotator: str | None = None, *, task: str | None = None, lang: str | None = None,
                       system: str | None = None) -> list[dict]:
        """Every annotator's label in force per item (latest labelling row), with task and lang;
        only `annotator`'s, and only the items of `task`, `lang` and `system`, where given."""
        sql = (
            "SELECT c.item_id, c.annotator, c.label, i.task, i.lang, i.system, i.source_id "
            "FROM current_labels c JOIN items i ON i.id = c.item_id WHERE 1"
        )
        params: list = []
        for column, value in (("c.annotator", annotator), ("i.task", task), ("i.lang", lang), ("i.system", system)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        return [dict(r) for r in self.conn.execute(sql + " ORDER BY c.item_id", params)]

    def c3_file_labels(self, *, task: str, lang: str, system: str) -> list[tuple]:
        """(item id, source id, annotator, judge, label, label in force, the judge whose C3 result
        files held the decision in force or None, the files' words of the label where they are not
        C3's or None) of the current items of one cell, for each annotator's latest labelling row
        per judge whose C3 result files held it (annotations.c3_file_judge), in item order."""
        latest: dict[tuple[int, str, str], tuple] = {}
        for row in self.conn.execute(
                "SELECT a.item_id, i.source_id, a.annotator, a.c3_file_judge, a.label, f.label, fa.c3_file_judge, "
                "a.c3_file_text FROM annotations a JOIN items i ON i.id = a.item_id "
                "LEFT JOIN labels_in_force f ON f.item_id = a.item_id AND f.annotator = a.annotator "
                "LEFT JOIN annotations fa ON fa.uid = f.annotation_uid "
                f"WHERE a.c3_file_judge IS NOT NULL AND {LABELLED} AND i.task = ? AND i.lang = ? AND i.system = ? "
                f"AND i.current = 1 AND {VISIBLE} ORDER BY a.id",
                (LABELS_JSON, task, lang, system)):
            latest[(row[0], row[2], row[3])] = tuple(row)
        return sorted(latest.values(), key=lambda row: row[0])

    def _c3_file_label(self, item_id: int, annotator: str, judge: str) -> tuple[str, str | None] | None:
        """(label, the files' words of it where not C3's) of the annotator's latest labelling row
        on the item held by `judge`'s C3 result files, or None."""
        row = self.conn.execute(
            f"SELECT a.label, a.c3_file_text FROM annotations a WHERE a.item_id = ? AND a.annotator = ? AND a.c3_file_judge = ? "
            f"AND {LABELLED} ORDER BY a.id DESC LIMIT 1", (item_id, annotator, judge, LABELS_JSON)).fetchone()
        return (row[0], row[1]) if row else None

    def labelled_item_ids(self):
        """Ids of the items someone has a label in force on, as a sorted numpy array (read as one
        string along the table's key)."""
        import numpy as np

        text = self.conn.execute("SELECT group_concat(item_id) FROM (SELECT DISTINCT item_id FROM labels_in_force)").fetchone()[0]
        return np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, dtype=np.int64)

    def labels_in_force(self) -> list[tuple[int, str, str]]:
        """(item_id, annotator, label) for every annotator's label in force: current_labels
        without the join to items, for figures that need only the labels."""
        return [tuple(r) for r in self.conn.execute("SELECT item_id, annotator, label FROM current_labels")]

    def note_texts(self, item_id: int) -> list[str]:
        rows = self.conn.execute(
            "SELECT annotator, note FROM annotations WHERE item_id = ? AND note IS NOT NULL ORDER BY id",
            (item_id,),
        )
        return [f"{r['annotator']}: {r['note']}" for r in rows]

    def listening(self) -> dict[tuple[int, str], float]:
        """(item id, annotator) -> the longest listening recorded with one of their decisions on an
        item with audio (0.0: decided without playing it)."""
        rows = self.conn.execute(
            "SELECT item_id, annotator, max(coalesce(listened_seconds, 0)) AS seconds FROM annotations "
            "WHERE audio_plays IS NOT NULL GROUP BY item_id, annotator"
        )
        return {(r["item_id"], r["annotator"]): r["seconds"] for r in rows}

    def decisions(self, item_ids: Collection[int]) -> dict[int, list[dict]]:
        """Per item of `item_ids`: each annotator's label in force (annotator, label, action,
        decided_at) with the notes that annotator wrote on the item since their last decision
        of another label, oldest first: a note that argued for a label they then changed their
        mind about is not given as the reason for the label now in force (it stays in the
        history)."""
        found: dict[int, list[dict]] = {}
        for chunk in chunks(sorted(set(item_ids)), 500):
            marks = ",".join("?" * len(chunk))
            notes: dict[tuple[int, str], list[str]] = {}
            for r in self.conn.execute(
                f"SELECT a.item_id, a.annotator, a.note FROM annotations a JOIN labels_in_force l "
                f"ON l.item_id = a.item_id AND l.annotator = a.annotator "
                f"WHERE a.item_id IN ({marks}) AND a.note IS NOT NULL AND a.created_at > coalesce(("
                f"SELECT max(b.created_at) FROM annotations b WHERE b.item_id = a.item_id AND b.annotator = a.annotator "
                f"AND b.action IN ('confirm', 'override', 'label', 'undo') AND b.label IS NOT l.label), '') "
                "ORDER BY a.id", chunk,
            ):
                notes.setdefault((r["item_id"], r["annotator"]), []).append(r["note"])
            for r in self.conn.execute(
                f"SELECT item_id, annotator, label, action, decided_at FROM labels_in_force WHERE item_id IN ({marks}) "
                "ORDER BY item_id, annotator", chunk,
            ):
                found.setdefault(r["item_id"], []).append(
                    {**dict(r), "notes": notes.get((r["item_id"], r["annotator"]), [])})
        return found

    def labelled_on_newer_versions(self, item_ids: list[int], annotator: str | None = None) -> int:
        """How many of these items have a newer version (the same task, language, system and
        source id, imported again with --update) that `annotator` (None: anyone) labelled: where
        people's decisions went when a newer version replaced the one asked about."""
        found = 0
        for chunk in chunks(item_ids, 500):
            found += self.conn.execute(
                f"SELECT count(DISTINCT o.id) FROM items o JOIN items n ON n.task = o.task AND n.lang = o.lang "
                f"AND n.system = o.system AND n.source_id = o.source_id AND n.version > o.version "
                f"JOIN labels_in_force l ON l.item_id = n.id AND (?1 IS NULL OR l.annotator = ?1) "
                f"WHERE o.id IN ({','.join('?' * len(chunk))})", [annotator, *chunk]).fetchone()[0]
        return found
