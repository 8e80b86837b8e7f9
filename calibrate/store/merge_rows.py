"""The rows `calibrate merge` moves: reading another database's items, judgments and
annotations as rows (with the uids and content hashes that identify them across files), and
writing the rows that passed validation, keeping the labels in force in step."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from calibrate.model import Item, NewItem
from calibrate.store.sql import ITEM_SELECT, JUDGMENT_COLUMNS, VISIBLE, chunks, item_from_row


class MergeRowsMixin:
    """Rows read from and written by merge (part of Store)."""

    # -- merging: reading another database, writing what passed validation ---------------------

    def item_rows(self) -> Iterator[sqlite3.Row]:
        """Every item row in id order, streamed (merge reads another database with it)."""
        yield from self.conn.execute(f"SELECT * FROM items i WHERE {VISIBLE} ORDER BY id")

    def judgment_rows(self) -> Iterator[sqlite3.Row]:
        """Every judgment row with its item's content hash, in id order, streamed."""
        yield from self.conn.execute(
            "SELECT j.*, i.content_hash FROM judgments j LEFT JOIN items i ON i.id = j.item_id ORDER BY j.id"
        )

    def annotation_rows(self) -> Iterator[sqlite3.Row]:
        """Every annotation row with its item's content hash, its judgment's uid and the uid of
        the row it reverts, in id order, streamed."""
        yield from self.conn.execute(
            "SELECT a.*, i.content_hash, j.uid AS judgment_uid, r.uid AS reverts_uid FROM annotations a "
            "LEFT JOIN items i ON i.id = a.item_id LEFT JOIN judgments j ON j.id = a.judgment_id "
            "LEFT JOIN annotations r ON r.id = a.reverts_id ORDER BY a.id"
        )

    def items_by_hash(self, hashes: Iterable[str]) -> dict[str, tuple[int, str, str, str]]:
        """content hash -> (id, task, lang, source id) of the stored items among `hashes`."""
        found: dict[str, tuple[int, str, str, str]] = {}
        for chunk in chunks(list(set(hashes)), 500):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(
                f"SELECT id, task, lang, source_id, content_hash FROM items i WHERE content_hash IN ({marks}) AND {VISIBLE}",
                chunk,
            ):
                found[r["content_hash"]] = (r["id"], r["task"], r["lang"], r["source_id"])
        return found

    def identity_conflicts(self, items: Sequence[NewItem]) -> dict[str, Item]:
        """content hash -> the stored item of the same identity and version with other content,
        for those of `items` whose content is not stored: an identity's version holds one
        content, so adding them would add nothing. Hidden items (of an import still running)
        count, as they hold their identity too."""
        found: dict[str, Item] = {}
        keys = [(i.task, i.lang, i.system, i.source_id, i.version, i.content_hash) for i in items]
        for chunk in chunks(keys, 100):
            rows = ",".join(["(?, ?, ?, ?, ?, ?)"] * len(chunk))
            for r in self.conn.execute(
                f"WITH k (task, lang, system, source_id, version, content_hash) AS (VALUES {rows}) "
                f"SELECT {ITEM_SELECT}, k.content_hash AS wanted FROM k JOIN items i ON i.task = k.task AND i.lang = k.lang "
                "AND i.system = k.system AND i.source_id = k.source_id AND i.version = k.version "
                "WHERE i.content_hash != k.content_hash "
                "AND NOT EXISTS (SELECT 1 FROM items h WHERE h.content_hash = k.content_hash)",
                [value for key in chunk for value in key],
            ):
                found[r["wanted"]] = item_from_row(r)
        return found

    def replaced_versions(self, item_ids: Iterable[int]) -> dict[int, str]:
        """item id -> source id of the items among `item_ids` that are versions `import --update`
        has since replaced (no longer current, so their labels no longer count)."""
        found: dict[int, str] = {}
        for chunk in chunks(sorted(set(item_ids)), 500):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(f"SELECT id, source_id FROM items WHERE id IN ({marks}) AND current = 0", chunk):
                found[r["id"]] = r["source_id"]
        return found

    def ids_by_uid(self, table: str, uids: Iterable[str]) -> dict[str, int]:
        """uid -> id of the stored judgments or annotations among `uids`."""
        if table not in ("judgments", "annotations"):
            raise ValueError(f"no uids in table {table!r}")
        found: dict[str, int] = {}
        for chunk in chunks([u for u in set(uids) if u], 500):
            marks = ",".join("?" * len(chunk))
            for r in self.conn.execute(f"SELECT uid, id FROM {table} WHERE uid IN ({marks})", chunk):
                found[r["uid"]] = r["id"]
        return found

    def add_judgment_rows(self, rows: Sequence[dict]) -> int:
        """Judgments as complete rows (every JUDGMENT_COLUMNS value), skipping uids already
        present. Returns rows added."""
        with self.transaction():
            return self.conn.executemany(
                f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(JUDGMENT_COLUMNS))})",
                [[row[c] for c in JUDGMENT_COLUMNS] for row in rows],
            ).rowcount

    def add_annotation_rows(self, rows: Sequence[dict]) -> list[dict]:
        """Annotations as complete rows (uid, item_id, judgment_id, annotator, action, label,
        reverts_uid, note, blind, seconds_spent, created_at, and optionally audio_plays,
        listened_seconds, c3_file_judge and c3_file_text; an undo names the row it reverts by uid, which may be
        written earlier in `rows`), skipping uids already present and keeping
        the labels in force in step. Returns the rows added (those whose uid was not present)."""
        added = []
        with self.transaction():
            for row in rows:
                reverts_id = None
                if row["reverts_uid"] is not None:
                    reverts_id = self.conn.execute("SELECT id FROM annotations WHERE uid = ?", (row["reverts_uid"],)).fetchone()[0]
                if self._append_annotation(
                    row["uid"], row["item_id"], row["judgment_id"], row["annotator"], row["action"], row["label"],
                    reverts_id, row["note"], row["blind"], row["seconds_spent"], row["created_at"],
                    row.get("audio_plays"), row.get("listened_seconds"), row.get("c3_file_judge"),
                    row.get("c3_file_text")) is not None:
                    added.append(row)
        return added
