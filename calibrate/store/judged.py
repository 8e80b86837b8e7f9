"""Judgments: storing a judge's answers, reading them back per item, per judge configuration
(what a resumed run need not ask again) and per sample, re-parsing, and the verdicts in force
(each judge's newest judgment per item by the time it was made, a failed call never over a
verdict: migration 0028); and the claims by which concurrent runs of one judge
split the items between them, so that each is asked once."""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Iterable, Iterator

from calibrate.model import Judgment, NewJudgment, dump_json, now_iso, process_running
from calibrate.store.sql import JUDGMENT_COLUMNS, chunks, judgment_from_row

# judgments stored at once from which their items' score_sets rows are rewritten once at the end
# (migration 0021) rather than once per verdict in force: measured 0.79-0.93 times the CPU of the
# per-row rewrite in batches of 4 to 64, and within the noise for 1 or 2 (which keep the per-row
# rewrite, as the judge runner stores each answer on its own)
SCORE_SETS_DEFERRED_FROM = 4


class JudgmentsMixin:
    """Judgments and the verdicts in force (part of Store)."""

    # -- judgments ------------------------------------------------------------------------

    def add_judgments(self, judgments: Iterable[NewJudgment]) -> int:
        """Store judgments; a judgment whose uid is already present is skipped, and so is one
        stored under its former uid since its run began (`NewJudgment.former`). Returns added."""
        stamp = now_iso()
        rows = []
        for j in judgments:
            values = {**j.__dict__, "created_at": stamp, "judged_at": j.judged_at or stamp}
            values["uid"] = j.uid or uuid.uuid4().hex
            values["params"] = dump_json(j.params or {})
            rows.append((*(values[c] for c in JUDGMENT_COLUMNS), *(j.former or (None, None))))
        deferred = len(rows) >= SCORE_SETS_DEFERRED_FROM
        with self.transaction():
            if deferred:  # score_sets rewritten once per touched item, as the deferral ends
                self.conn.execute("INSERT INTO score_set_deferrals (writer) VALUES (1)")
            try:
                return self.conn.executemany(
                    f"INSERT OR IGNORE INTO judgments ({', '.join(JUDGMENT_COLUMNS)}) "
                    f"SELECT {', '.join('?' * len(JUDGMENT_COLUMNS))} "
                    "WHERE NOT EXISTS (SELECT 1 FROM judgments WHERE uid = ? AND created_at > ?)",
                    rows,
                ).rowcount
            finally:
                if deferred:  # on an error too: a caller's transaction that goes on rewrites per row again
                    self.conn.execute("DELETE FROM score_set_deferrals")

    def judgments_for_item(self, item_id: int, judge: str | None = None, *,
                           output_chars: int | None = None) -> list[Judgment]:
        """The item's judgments, newest first; with `output_chars`, each raw output cut to
        that many characters by SQLite (a 10 MB output then costs nothing to show)."""
        if output_chars is None:
            sql, params = "SELECT * FROM judgments WHERE item_id = ?", [item_id]
        else:
            columns = ", ".join(c for c in (*JUDGMENT_COLUMNS, "id") if c != "raw_output")
            sql, params = (f"SELECT {columns}, substr(raw_output, 1, ?) AS raw_output FROM judgments WHERE item_id = ?",
                           [output_chars, item_id])
        if judge:
            sql += " AND judge_name = ?"
            params.append(judge)
        return [judgment_from_row(r) for r in self.conn.execute(sql + " ORDER BY id DESC", params)]

    def judgments(self, *, judge: str | None = None, status: str | None = None) -> Iterator[Judgment]:
        sql, params = "SELECT * FROM judgments WHERE 1", []
        if judge:
            sql += " AND judge_name = ?"
            params.append(judge)
        if status:
            sql += " AND status = ?"
            params.append(status)
        for row in self.conn.execute(sql + " ORDER BY id", params):
            yield judgment_from_row(row)

    def judged_item_ids(self, judge_key_value: str) -> set[int]:
        """Items that already have a non-error judgment from this exact judge configuration."""
        rows = self.conn.execute(
            "SELECT item_id FROM judgments WHERE judge_key = ? AND status != 'error'", (judge_key_value,)
        )
        return {r[0] for r in rows}

    def judged_samples(self, judge_key_value: str, *, failed: bool = False) -> dict[int, set[int]]:
        """item id -> the sample indices (repeats) that already have a non-error judgment from
        this exact judge configuration: what a resumed `judge --repeat K` need not ask again.
        With `failed`, those that have an error judgment instead: asked before, in vain."""
        done: dict[int, set[int]] = {}
        for item_id, sample in self.conn.execute(
            "SELECT item_id, sample FROM judgments WHERE judge_key = ? AND (status = 'error') = ?",
            (judge_key_value, failed),
        ):
            done.setdefault(item_id, set()).add(sample)
        return done

    def errors_of(self, judge_key_value: str) -> set[tuple[int, int, str]]:
        """(item id, sample, error) of each error judgment of this judge configuration: an
        import of the same batch results again finds its error lines stored already."""
        return {tuple(r) for r in self.conn.execute(
            "SELECT item_id, sample, error FROM judgments WHERE judge_key = ? AND status = 'error'", (judge_key_value,))}

    def has_repeats_or_confidence(self) -> bool:
        """Whether any judgment is a repeat (`judge --repeat`) or carries a confidence: without
        either, a judge's consistency and calibration cannot be measured."""
        return bool(self.conn.execute(
            "SELECT EXISTS (SELECT 1 FROM judgments WHERE sample > 0 OR confidence IS NOT NULL)").fetchone()[0])


    def judge_names(self, *, system: str | None = None) -> list[str]:
        """The judges with a verdict in force on a current, visible item (of `system`, if given),
        sorted (read from the counts kept by migration 0008's triggers)."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT judge_name FROM verdict_counts WHERE n != 0 AND (? IS NULL OR system = ?) ORDER BY 1",
            (system, system))]

    def failed_only_judges(self, *, system: str | None = None, judge: str | None = None) -> dict[str, int]:
        """judge -> its verdicts in force, for the judges (`judge`, if given) whose every verdict
        in force on a current, visible item (of `system`, if given) is a failed call (an error):
        judges that ran, or were imported, without giving one verdict."""
        return dict(self.conn.execute(
            "SELECT judge_name, sum(n) FROM verdict_counts WHERE (? IS NULL OR system = ?) AND (? IS NULL OR "
            "judge_name = ?) GROUP BY judge_name HAVING sum(n) > 0 AND sum(CASE WHEN status = 'error' THEN 0 ELSE n END) = 0 "
            "ORDER BY judge_name", (system, system, judge, judge)).fetchall())

    def configuration_counts(self, *, system: str | None = None,
                             judge: str | None = None) -> list[tuple[str, str, str, str, str, int]]:
        """(task, lang, system, judge, configuration, n): the verdicts in force (of `judge`, if
        given) on current, visible items (of `system`, if given) per judge configuration (its
        judge_key), read from the counts kept by migration 0025's triggers: a few rows per judge."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT task, lang, system, judge_name, judge_key, n FROM configuration_counts "
            "WHERE n != 0 AND (? IS NULL OR system = ?) AND (? IS NULL OR judge_name = ?) ORDER BY 1, 2, 3, 4, 5",
            (system, system, judge, judge))]

    def update_parse(self, judgment_id: int, status: str, verdict, reason, correct) -> None:
        """Re-parse result for a stored judgment; raw output is never touched."""
        with self.transaction():
            self.conn.execute(
                "UPDATE judgments SET status = ?, verdict = ?, unparsed_reason = ?, correct = ? WHERE id = ?",
                (status, verdict, reason, correct, judgment_id),
            )

    def repeat_temperatures(self) -> dict[str, list]:
        """judge -> the temperatures its repeats (`judge --repeat`) were asked at, sorted (None:
        none was sent, as for a reasoning model)."""
        found: dict[str, set] = {}
        for judge, temperature in self.conn.execute(
                "SELECT DISTINCT judge_name, json_extract(params, '$.temperature') FROM judgments "
                "INDEXED BY judgments_repeats WHERE sample > 0"):
            found.setdefault(judge, set()).add(temperature)
        return {judge: sorted(values, key=lambda t: (t is not None, t or 0)) for judge, values in found.items()}

    def verdict_in_force(self, item_id: int, judge: str) -> dict | None:
        """The judge's verdict in force on the item (judgment_id, status, verdict, reason): its
        one judgment, or under `judge --repeat` the majority of its samples (migration 0015)."""
        row = self.conn.execute("SELECT judgment_id, status, verdict, reason FROM verdicts_in_force "
                                "WHERE item_id = ? AND judge_name = ?", (item_id, judge)).fetchone()
        return dict(row) if row else None

    def verdicts_in_force_of(self, pairs: Iterable[tuple[int, str]]) -> dict[tuple[int, str], tuple[str, str | None]]:
        """(item id, judge) -> (status, verdict) of the judge's verdict in force on the item, for
        those of `pairs` that have one: what an import compares before and after it stores
        judgments, to say which verdicts it changed."""
        wanted = set(pairs)
        found = {}
        for chunk in chunks(sorted({item_id for item_id, _ in wanted}), 500):
            for item_id, judge, status, verdict in self.conn.execute(
                f"SELECT item_id, judge_name, status, verdict FROM verdicts_in_force "
                f"WHERE item_id IN ({','.join('?' * len(chunk))})", chunk,
            ):
                if (item_id, judge) in wanted:
                    found[item_id, judge] = (status, verdict)
        return found

    def out_of_force(self, uids: Iterable[str]) -> list[tuple[str, str]]:
        """(judge, why) of each judgment of these uids that is not its judge's verdict in force on
        its item: 'failed' for a failed call beside a verdict in force (a failed call never
        displaces one), 'older' for one made before the judgment in force (its `judged_at`),
        'other' otherwise (an equal one stored earlier, or a repeat outvoted)."""
        found = []
        for chunk in chunks(sorted(set(uids)), 500):
            found += [tuple(r) for r in self.conn.execute(
                "SELECT j.judge_name, CASE WHEN j.status = 'error' AND f.status != 'error' THEN 'failed' "
                "WHEN j.judged_at < f.judged_at THEN 'older' ELSE 'other' END "
                "FROM judgments j JOIN verdicts_in_force v ON v.item_id = j.item_id AND v.judge_name = j.judge_name "
                "JOIN judgments f ON f.id = v.judgment_id "
                f"WHERE j.uid IN ({','.join('?' * len(chunk))}) AND v.judgment_id != j.id", chunk)]
        return found

    def configurations_in_force(self, judge: str, item_ids: Iterable[int]) -> dict[int, tuple]:
        """item id -> (judge_key, model, template id, template version, params) of the judgment
        that gives `judge`'s verdict in force on each of these items that has one: the
        configuration a run of that judge name under another one replaces there."""
        found = {}
        for chunk in chunks(sorted(set(item_ids)), 500):
            for row in self.conn.execute(
                "SELECT v.item_id, j.judge_key, j.model, j.template_id, j.template_hash, j.params "
                "FROM verdicts_in_force v JOIN judgments j ON j.id = v.judgment_id "
                f"WHERE v.judge_name = ? AND v.item_id IN ({','.join('?' * len(chunk))})", (judge, *chunk),
            ):
                found[row[0]] = (*row[1:5], json.loads(row[5] or "{}"))
        return found

    def samples_in_force(self, item_id: int, judge: str) -> list[tuple[int, str, str | None]]:
        """(sample, status, verdict) of each sample the verdict in force is taken from, in
        sample order: one without repeats."""
        return [tuple(r) for r in self.conn.execute(
            "SELECT sample, status, verdict FROM samples_in_force WHERE item_id = ? AND judge_name = ? ORDER BY sample",
            (item_id, judge))]

    # -- claims: concurrent runs of one judge ask each item once ---------------------------------

    def claim_judging(self, item_id: int, judge_key_value: str, sample: int, holder: str, *, seconds: float,
                      judged_after: int = 0) -> str:
        """Claim one request of a judge run (an item, a judge configuration, a sample) for
        `seconds`, before asking the server. Returns "claimed"; "judged" when a judgment of it that
        is not an error and is newer than judgment id `judged_after` exists (another run answered
        it); or "held" when another run holds it (its claim has not expired and its process has
        not gone from this machine)."""
        now = time.time()
        with self.transaction():
            if self.conn.execute(
                "SELECT 1 FROM judgments WHERE judge_key = ? AND item_id = ? AND sample = ? AND status != 'error' "
                "AND id > ? LIMIT 1", (judge_key_value, item_id, sample, judged_after)
            ).fetchone():
                return "judged"
            held = self.conn.execute(
                "SELECT holder, host, pid, expires_at FROM judge_claims WHERE item_id = ? AND judge_key = ? AND sample = ?",
                (item_id, judge_key_value, sample),
            ).fetchone()
            if (held and held["holder"] != holder and held["expires_at"] > now
                    and not (held["host"] == socket.gethostname() and not process_running(held["pid"]))):
                return "held"
            self.conn.execute(
                "INSERT OR REPLACE INTO judge_claims (item_id, judge_key, sample, holder, host, pid, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (item_id, judge_key_value, sample, holder, socket.gethostname(), os.getpid(), now + seconds),
            )
            return "claimed"

    def release_judging(self, item_id: int, judge_key_value: str, sample: int, holder: str) -> None:
        """Give back a claim (once the judgment is stored: the same transaction, preferably)."""
        with self.transaction():
            self.conn.execute(
                "DELETE FROM judge_claims WHERE item_id = ? AND judge_key = ? AND sample = ? AND holder = ?",
                (item_id, judge_key_value, sample, holder),
            )

    def release_all_judging(self, holder: str) -> None:
        """Give back every claim of one judge run (at its end, however it ended)."""
        with self.transaction():
            self.conn.execute("DELETE FROM judge_claims WHERE holder = ?", (holder,))

    def newest_judgment_id(self) -> int:
        """The highest judgment id (0 when there is none)."""
        return self.conn.execute("SELECT coalesce(max(id), 0) FROM judgments").fetchone()[0]

