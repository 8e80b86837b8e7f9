"""How a judge run shows its progress, on any stream: a Rich bar on a terminal, a plain line
every few seconds otherwise (a CI log, `nohup`, a pipe), so a long run is never silent. Items
and samples are counted apart (with `--repeat K` an item is done when its K samples are), and
the retries, failures by cause, the adaptive concurrency and a wait the server asked for
(retry-after) are shown as they happen."""

from __future__ import annotations

import math
import time
from collections import Counter

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from calibrate.escape import safe
from calibrate.judge_runner import Job
from calibrate.judge_summary import RunSummary
from calibrate.model import counted


class JudgeProgress:
    """The runner's Progress for the CLI. Use as a context manager around the run."""

    def __init__(self, console: Console, jobs: list[Job], summary: RunSummary, *, every: float = 10.0):
        self.console = console
        self.summary = summary
        self.every = every
        self.samples_left = Counter(job.item.id for job in jobs)
        self.items_total, self.samples_total = len(self.samples_left), len(jobs)
        self.items_done = self.samples_done = 0
        self.started = self.printed = time.monotonic()
        self.bar: Progress | None = None
        if console.is_terminal:
            self.bar = Progress(TextColumn("judging"), BarColumn(), TextColumn("{task.fields[counts]}"),
                                TimeRemainingColumn(), console=console)
            self.task = self.bar.add_task("judging", total=self.samples_total, counts=self.counts())

    def __enter__(self) -> JudgeProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.update(self.task, counts=self.counts())
            self.bar.stop()
        elif self.samples_done:
            self.console.print(Text(self.line()))

    # -- the runner's Progress ---------------------------------------------------------------

    def advance(self, job: Job) -> None:
        self.samples_done += 1
        self.samples_left[job.item.id] -= 1
        if not self.samples_left[job.item.id]:
            self.items_done += 1
        if self.bar is not None:
            self.bar.update(self.task, advance=1, counts=self.counts())

    def warn(self, message: str) -> None:
        self.console.print(Text(f"warning: {safe(message)}", style="yellow"))

    def refresh(self) -> None:
        if self.bar is not None:
            self.bar.update(self.task, counts=self.counts())
        elif time.monotonic() - self.printed >= self.every:
            self.printed = time.monotonic()
            self.console.print(Text(self.line()))

    # -- what it says ------------------------------------------------------------------------

    def counts(self) -> str:
        """12/58 items (36/174 samples), 0.8 samples/s, 2 retries (1 timed out, 3 HTTP 429), concurrency
        4 of 8, waiting 60 s as the server asks (52 s left); "3 failed (3 HTTP 429)" before any retry."""
        repeats = self.samples_total != self.items_total
        done = f"{self.items_done}/{self.items_total} items"
        if repeats:
            done += f" ({self.samples_done}/{self.samples_total} samples)"
        elapsed = time.monotonic() - self.started
        if self.samples_done and elapsed > 0:
            done += f", {self.samples_done / elapsed:.2f} {'samples' if repeats else 'items'}/s"
        requests = self.summary.requests
        if requests.failures:
            causes = ", ".join(f"{n} {cause}" for cause, n in requests.failures.most_common())
            tried = counted(requests.retries, "retry", "retries") if requests.retries else f"{requests.failures.total()} failed"
            done += f", {tried} ({causes})"
        if self.summary.concurrency and self.summary.concurrency[0] < self.summary.concurrency[1]:
            done += f", concurrency {self.summary.concurrency[0]} of {self.summary.concurrency[1]}"
        if (wait := requests.waiting()) and wait[0] >= 1:
            asked, left = wait
            done += f", waiting {asked:.0f} s as the server asks ({math.ceil(left)} s left)"
        return done

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        return f"judging: {self.counts()} ({elapsed:.0f} s)"
