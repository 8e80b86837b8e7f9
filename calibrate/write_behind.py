"""Writes done on a thread of their own, one at a time, while the caller goes on: an import
writes each batch of items while it reads and checks the next ones.

SQLite writes without the interpreter's lock, so on a second core a batch's statements and the
reading of the next records (JSON, hashes: Python) overlap. A store is used by one thread at a
time (`calibrate.store`): the caller hands it over with each write and takes it back with
`settle`, which waits for the write under way, before it uses the store itself.

While writes run behind, the interpreter switches threads every SWITCH_SECONDS instead of every
5 ms: a write takes the interpreter's lock back after each statement, and waited up to 5 ms for
the reading thread to let go of it each time. On 200,000 JSONL lines the import then took
longer than with no thread at all (14.2–15.1 s against 12.8–14.4 s); switching every 0.1 ms, it
took 9.0–9.6 s."""

from __future__ import annotations

import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from contextlib import suppress

SWITCH_SECONDS = 1e-4


class WriteBehind:
    """One write at a time on a thread of its own (a context manager: the thread and the
    switch interval last while it is open; leaving it waits for the write under way)."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: Future | None = None
        self._interval = sys.getswitchinterval()

    def __enter__(self) -> WriteBehind:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="write behind")
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._interval, SWITCH_SECONDS))
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.wait_out()
        finally:
            assert self._pool is not None
            self._pool.shutdown()
            sys.setswitchinterval(self._interval)

    def submit(self, write: Callable[..., object], *args) -> None:
        """Run `write(*args)` on the writer's thread, once the write before it has ended (its
        error raised here, as `settle` raises it)."""
        self.settle()
        assert self._pool is not None, "WriteBehind is used inside its with block"
        self._pending = self._pool.submit(write, *args)

    def settle(self) -> None:
        """Wait for the write under way, if any, raising its error: then what it wrote through
        is this thread's again."""
        pending = self._pending
        if pending is not None:
            futures_wait([pending])  # an interrupted wait leaves it under way, for `wait_out`
            self._pending = None
            pending.result()

    def settle_if_ended(self) -> None:
        """`settle` when the write under way has ended: its error raised as soon as it is known."""
        if self._pending is not None and self._pending.done():
            self.settle()

    def wait_out(self) -> None:
        """Wait until the write under way has ended, leaving out its error (the caller is
        failing already, and abandons what was written), and through a signal that interrupts
        the wait (a second Ctrl-C): a write takes a fraction of a second, and until it has ended
        the store is not the caller's."""
        pending, self._pending = self._pending, None
        while pending is not None and not pending.done():
            with suppress(BaseException):
                futures_wait([pending])
