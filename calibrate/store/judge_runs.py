"""The record of `calibrate judge` runs: when each started and ended, how (finished, stopped,
refused, interrupted), what it stored by kind of outcome, and how many requests, retries and
failures by cause it took, and whether it switched to reasoning mode on its own (the next run of
that judge starts in it), for `calibrate status` and the end-of-run summary. The rule judge's
runs are recorded with no model, no server ("") and no requests.

A run's counts are written in the transaction that stores each of its judgments
(`count_judge_run`), so they are true while it runs and after its process died; the run's
process (host and id) tells a run that goes on from one that died without a word."""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime

from calibrate.model import dump_json, now_iso, process_running

OUTCOMES = ("verdict", "bare", "unparsed", "truncated", "error")
"""What a run's stored judgments are counted by (judge_runs columns verdicts … errors)."""


class JudgeRunsMixin:
    """Judge runs (part of Store)."""

    def begin_judge_run(self, judge_name: str, model: str, server: str, params: dict, *, items: int, samples: int,
                        concurrency: int) -> int:
        """Record the start of a `calibrate judge` run by this process; returns its id."""
        with self.transaction():
            return self.conn.execute(
                "INSERT INTO judge_runs (judge_name, model, server, params, started_at, items, samples, concurrency, "
                "host, pid) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (judge_name, model, server, dump_json(params), now_iso(), items, samples, concurrency,
                 socket.gethostname(), os.getpid()),
            ).lastrowid

    def count_judge_run(self, run_id: int, *, stored: int, cells: dict, requests) -> None:
        """Record what a run has stored and sent so far: `cells` counts stored judgments by (task,
        lang, what) where what is one of OUTCOMES; `requests` (judge_server.RequestCounts) the
        requests that reached the server and their retries, as the run's summary counts them, and
        the failures by cause (cause -> n; attempts that could not connect among them). Call it in
        the transaction that stores a judgment."""
        what = {name: sum(n for key, n in cells.items() if key[2] == name) for name in OUTCOMES}
        with self.transaction():
            self.conn.execute(
                "UPDATE judge_runs SET stored = ?, verdicts = ?, bare = ?, unparsed = ?, truncated = ?, errors = ?, "
                "requests = ?, retries = ?, failures = ? WHERE id = ?",
                (stored, *(what[name] for name in OUTCOMES), requests.sent, requests.sent_retries,
                 dump_json(dict(requests.failures)), run_id),
            )

    def note_reasoning_switch(self, run_id: int, *, message: str, params: dict) -> None:
        """Record at once, while the run goes on, that it switched to reasoning mode on its own
        (judge_runs.switched_to_reasoning), with its new parameters and the message that says so:
        what its record says should the process die before it ends."""
        with self.transaction():
            self.conn.execute("UPDATE judge_runs SET switched_to_reasoning = 1, message = ?, params = ? WHERE id = ?",
                              (message, dump_json(params), run_id))

    def finish_judge_run(self, run_id: int, *, outcome: str, message: str | None, params: dict, stored: int,
                         cells: dict, requests, concurrency_lowest: int) -> None:
        """Record how a judge run ended, with its counts (as `count_judge_run`)."""
        with self.transaction():
            self.count_judge_run(run_id, stored=stored, cells=cells, requests=requests)
            self.conn.execute(
                "UPDATE judge_runs SET finished_at = ?, outcome = ?, message = ?, params = ?, concurrency_lowest = ? "
                "WHERE id = ?",
                (now_iso(), outcome, message, dump_json(params), concurrency_lowest, run_id),
            )

    def judge_servers(self, judge_name: str) -> list[str]:
        """The servers (host:port) the recorded runs of this judge name asked: those its
        judgments' configurations (judge_key) can be matched with."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT server FROM judge_runs WHERE judge_name = ? ORDER BY server", (judge_name,))]

    def judge_runs(self, limit: int | None = None) -> list[dict]:
        """Judge runs, newest first (`failures` and `params` as dicts). A run not recorded as
        ended has the outcome "running" while its process runs on this machine, "died" once it
        is gone from it, and None when this machine cannot tell (another machine's run, or one with no
        process recorded)."""
        sql = "SELECT * FROM judge_runs ORDER BY id DESC" + (" LIMIT ?" if limit else "")
        runs = [dict(r) for r in self.conn.execute(sql, (limit,) if limit else ())]
        here = socket.gethostname()
        for run in runs:
            run["failures"], run["params"] = json.loads(run["failures"]), json.loads(run["params"])
            if run["outcome"] is None and run["host"] == here and run["pid"] is not None:
                started = datetime.fromisoformat(run["started_at"]).timestamp()  # its id may be another's since
                run["outcome"] = "running" if process_running(run["pid"], since=started) else "died"
        return runs
