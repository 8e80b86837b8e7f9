"""Writes done on a thread of their own, one at a time, while the caller goes on: an import
writes each batch of items while it reads and checks the next ones.

SQLite writes without the interpreter's lock, so on a second core a batch's statements and the
reading of the next records (JSON, hashes: Python) overlap. A store is used by one thread at a
time (`calibrate.store`): the caller hands it over with each write and takes it back with
`settle`, which waits for the write under way, before it uses the store itself.

A caller that fails or is stopped (Ctrl-C, SIGTERM) calls `wait_out` before it uses the store
again: a write handed over and not begun is left out, one waiting for another writer's lock
stops waiting, and the one under way ends. The threads share nothing a signal could leave held:
the hand-overs are `queue.SimpleQueue`s (C, each put or get whole or not at all). The writer's
word that it has ended is a flag it sets itself before it wakes `wait_out` through a queue, and the
wait looks at the flag each time it wakes: a signal that lands just as the wait took the wake-up
cannot lose the word (the caller would wait for it for ever). `Thread.join` is not used for that: in Python 3.11 a signal
that interrupts it while the thread is alive marks the thread ended (`_wait_for_tstate_lock`
releases the lock the live thread holds), and the caller went on using the store while the
writer still wrote (a second Ctrl-C; the process could then crash).

While writes run behind, the interpreter switches threads every SWITCH_SECONDS instead of every
5 ms: a write takes the interpreter's lock back after each statement, and waited up to 5 ms for
the reading thread to let go of it each time. On 200,000 JSONL lines the import then took
14–17 s, longer than with no thread at all (13–16 s); switching every 0.1 ms, 9–11.6 s."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable
from contextlib import suppress

from calibrate.store import DatabaseBusy, Store

SWITCH_SECONDS = 1e-4
THREAD_END_SECONDS = 1.0  # how long `wait_out` gives the writer's thread to end once it is done with the store


class WriteBehind:
    """One write at a time through `store` on a thread of its own (a context manager: the
    thread and the switch interval last while it is open; leaving it waits the writes out)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._writes: queue.SimpleQueue = queue.SimpleQueue()  # (write, args), then None: the thread ends
        self._ended: queue.SimpleQueue = queue.SimpleQueue()  # per write, None or what it raised
        self._gone: queue.SimpleQueue = queue.SimpleQueue()  # None once the thread has ended: wakes `wait_out`
        self._writer_ended = False  # set by the writer's thread as it ends, before it wakes `wait_out`
        self._handed = False  # a write was handed over whose end this thread has not taken
        self._stopping = False  # `wait_out` was called: no write begins, a wait for the lock stops
        self._thread: threading.Thread | None = None
        self._interval = sys.getswitchinterval()  # as it was, and the store's `on_wait`: put back on leaving
        self._on_wait = store.on_wait

    def __enter__(self) -> WriteBehind:
        try:  # an interrupt meanwhile leaves no thread, wait or interval behind (no __exit__ follows)
            self._thread = threading.Thread(target=self._write, name="write behind", daemon=True)
            self._thread.start()
            self.store.on_wait = self._waiting
            sys.setswitchinterval(min(self._interval, SWITCH_SECONDS))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.wait_out()
        finally:
            sys.setswitchinterval(self._interval)
            self.store.on_wait = self._on_wait

    def submit(self, write: Callable[..., object], *args) -> None:
        """Run `write(*args)` on the writer's thread, once the write before it has ended (its
        error raised here, as `settle` raises it)."""
        self.settle()
        self._writes.put((write, args))
        self._handed = True

    def settle(self) -> None:
        """Wait for the write under way, if any, raising its error: then the store is this
        thread's again."""
        if self._handed:
            raised = self._ended.get()
            self._handed = False
            if raised is not None:
                raise raised

    def settle_if_ended(self) -> None:
        """`settle` when the write under way has ended: its error raised as soon as it is known."""
        if self._handed and not self._ended.empty():
            self.settle()

    def wait_out(self) -> None:
        """Stop the writer and wait until its thread has ended its last write, leaving out what a
        write raised (the caller is failing already, and abandons what was written): a write not begun is
        not begun, one waiting for another writer's lock stops at its next busy step
        (DatabaseBusy), and the one under way ends, within a fraction of a second. Signals that
        come meanwhile (a second Ctrl-C) are waited through, as until the thread has ended the
        store is not the caller's."""
        self._stopping = True
        self._writes.put(None)
        while self._thread is not None and not self._writer_ended:
            with suppress(BaseException):
                self._gone.get()
        if self._thread is not None:  # done with the store; the thread itself ends a few steps later
            with suppress(BaseException):
                self._thread.join(THREAD_END_SECONDS)
        self._handed = False

    def _write(self) -> None:
        """The writer's thread: each write handed over, in turn, until told to end; then it says
        that it has ended (`wait_out` waits for that word)."""
        try:
            while (handed := self._writes.get()) is not None:
                if self._stopping:
                    continue
                write, args = handed
                try:
                    write(*args)
                except BaseException as exc:  # raised on the caller's thread
                    self._ended.put(exc)
                else:
                    self._ended.put(None)
        finally:
            self._writer_ended = True
            self._gone.put(None)

    def _waiting(self, seconds: float) -> None:
        """The store's `on_wait` while writes run behind: on the writer's thread, once the caller
        is stopping, the wait for another writer's lock stops."""
        if self._stopping and threading.current_thread() is self._thread:
            raise DatabaseBusy
        if self._on_wait is not None:
            self._on_wait(seconds)
