"""The record of `calibrate judge` runs: when each started and ended, how (finished, stopped,
refused, interrupted), what it stored by kind of outcome, and how many requests, retries and
failures by cause it took, for `calibrate status` and the end-of-run summary."""

from __future__ import annotations

import json

from calibrate.model import dump_json, now_iso


class JudgeRunsMixin:
    """Judge runs (part of Store)."""

    def begin_judge_run(self, judge_name: str, model: str, server: str, params: dict, *, items: int, samples: int,
                        concurrency: int) -> int:
        """Record the start of a `calibrate judge` run; returns its id."""
        with self.transaction():
            return self.conn.execute(
                "INSERT INTO judge_runs (judge_name, model, server, params, started_at, items, samples, concurrency) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (judge_name, model, server, dump_json(params), now_iso(), items, samples, concurrency),
            ).lastrowid

    def finish_judge_run(self, run_id: int, *, outcome: str, message: str | None, params: dict, stored: int,
                         cells: dict, requests, concurrency_lowest: int) -> None:
        """Record how a judge run ended: `cells` counts stored judgments by (task, lang, what)
        where what is verdict, bare, unparsed, truncated or error; `requests` has attempts,
        retries and failures (cause -> n)."""
        what = {name: sum(n for key, n in cells.items() if key[2] == name)
                for name in ("verdict", "bare", "unparsed", "truncated", "error")}
        with self.transaction():
            self.conn.execute(
                "UPDATE judge_runs SET finished_at = ?, outcome = ?, message = ?, params = ?, stored = ?, verdicts = ?, "
                "bare = ?, unparsed = ?, truncated = ?, errors = ?, requests = ?, retries = ?, failures = ?, "
                "concurrency_lowest = ? WHERE id = ?",
                (now_iso(), outcome, message, dump_json(params), stored, what["verdict"], what["bare"],
                 what["unparsed"], what["truncated"], what["error"], requests.attempts, requests.retries,
                 dump_json(dict(requests.failures)), concurrency_lowest, run_id),
            )

    def judge_runs(self, limit: int | None = None) -> list[dict]:
        """Judge runs, newest first (`failures` and `params` as dicts)."""
        sql = "SELECT * FROM judge_runs ORDER BY id DESC" + (" LIMIT ?" if limit else "")
        runs = [dict(r) for r in self.conn.execute(sql, (limit,) if limit else ())]
        for run in runs:
            run["failures"], run["params"] = json.loads(run["failures"]), json.loads(run["params"])
        return runs
