"""Talking to a judge server: one request at a time per job, every attempt counted, concurrency
fitted to what the server can take, and timeouts that do not punish waiting in its queue.

The openai client is used with `max_retries=0`: it would otherwise retry timeouts, 429s and 5xx
silently (its default is 2 retries per request), so a run could not say how many requests it
really sent. Every retry happens here, is counted by cause, and honours `retry-after`. An
attempt counts as a request once it is sent (the HTTP client's trace says its headers were
written) or once it fails without being sent (no connection); an attempt the run cancels as it
stops, before sending it, is not counted, so the counts agree with what the server received.

Concurrency adapts by AIMD (additive increase, multiplicative decrease, as TCP does, and as
Netflix's concurrency-limits library does for services): it starts at the ceiling
(`--concurrency`), halves on a sign of overload (a timeout, HTTP 429 or 503) at most once per
round of requests, and grows by one per round of answers without one, up to the ceiling again.

Timeouts. A chat-completions request gives no sign when the server starts working on it: the
first byte of a non-streamed answer comes when the whole answer is ready, and a server that
answers one request at a time (llama.cpp's, with one slot) keeps the others waiting in its queue
without a word. An httpx read timeout therefore counts the time spent queued behind our own
other requests, and on such a server requests time out while the server is busy with their
predecessors; the abandoned ones are still computed (wasted), and their retries queue again.
Here the clock of a request starts when it becomes the oldest of our requests in flight (or
when it is sent, if none is older): on a server that answers in order, that is when the server
starts answering it. Requests sent at once do not always reach the server in the order they
were sent, nor does every server take them in order, so the clock of the oldest starts again
whenever the server answers another of ours: it is working through them. A request is
abandoned as timed out only when it has been the oldest for `timeout` seconds without an
answer to any of ours, so a busy server that keeps answering is never timed out, in whatever
order it takes our requests, and one that stops answering is found as fast as before. (A
server that answers the others but never this one times it out once the others are done.)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import math
import random
import re
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import openai

from calibrate.model import counted
from calibrate.redact import redact_url

TIMED_OUT = "timed out"
STREAMED = "streamed answer"  # a server-sent-events body where a whole answer was asked for
REASONING_ONLY = "answer only in reasoning"  # empty content, the text in reasoning_content: it thought to the token limit
RETRY_AFTER_CAP = 120.0  # seconds: a longer retry-after is not waited for (the request fails, not asked again)
BACKOFF_CAP = 30.0
# HTTP statuses worth asking again (as the openai client's own rule): timeout, conflict, rate
# limit and server errors; of those, 429 and 503 say the server is overloaded.
RETRY_STATUS = {408, 409, 429}
OVERLOAD_STATUS = {429, 503}
FATAL_STATUS = {401, 403, 404}  # bad key, no access, no such model: every request would get the same
# A 400 saying one of these fields is not supported is a reasoning model's refusal (OpenAI's
# "Unsupported value: 'temperature' does not support 0 with this model"); a 400 about their
# values ("max_tokens must be at most 4096") is not.
_REASONING_FIELD = re.compile(r"\b(temperature|max_tokens)\b")
_UNSUPPORTED = re.compile(r"unsupported|not supported|does not support", re.IGNORECASE)


class JudgeRefused(Exception):
    """The server refuses every request alike (bad key, no such model, no access): asking about
    more items would only store the same error, so the run stops and says why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ReasoningRefusal(Exception):
    """The server refuses `temperature` or `max_tokens` (HTTP 400), as reasoning models do."""


class UnusableAnswer(Exception):
    """A 200 response we cannot use (malformed body, empty content): worth asking again, unless
    `retry` is False (a streamed answer: the server would stream again)."""

    def __init__(self, cause: str, detail: str = "", retry: bool = True):
        super().__init__(f"{cause}: {detail}" if detail else cause)
        self.cause, self.detail, self.retry = cause, detail, retry


@dataclass
class AttemptFailure:
    """Why one attempt failed: the cause (as counted: "timed out", "HTTP 429", …) and what more
    is known, whether asking again may help, whether it is a sign of overload, and the server's
    retry-after if it sent one."""

    cause: str
    detail: str
    retry: bool
    overload: bool = False
    retry_after: float | None = None
    reached: bool = True  # False: no connection was made, so the server never saw the request

    @property
    def message(self) -> str:
        return f"{self.cause}: {self.detail}" if self.detail else self.cause


@dataclass
class RequestCounts:
    """Every request a run sent, and why the failed ones failed (cause -> n); and the wait the
    server asked for last (retry-after), while the run waits."""

    attempts: int = 0
    retries: int = 0
    failures: Counter = field(default_factory=Counter)
    unreached: int = 0  # of the attempts, those that reached no server (no connection could be made)
    unreached_retries: int = 0  # of those, retries
    wait: tuple[float, float] | None = None  # (seconds the server asked to wait, time.monotonic() the wait ends)

    @property
    def timeouts(self) -> int:
        return self.failures[TIMED_OUT]

    @property
    def sent(self) -> int:
        """The attempts that reached the server (a connection was made)."""
        return self.attempts - self.unreached

    @property
    def sent_retries(self) -> int:
        """Of those, retries."""
        return self.retries - self.unreached_retries

    def words(self) -> str:
        """The requests in words, those that reached no server apart: "12 requests sent, 2 of
        them retries; 3 more could not connect"."""
        sent, retries = self.sent, self.sent_retries
        said = (f"{counted(sent, 'request')} sent, {retries} of them {'a retry' if retries == 1 else 'retries'}" if sent
                else "no request reached the server")
        if self.unreached:
            tries = counted(self.unreached, "attempt")
            said += f"; {tries} more could not connect" if sent else f" ({tries} to connect failed)"
        return said

    def waiting(self) -> tuple[float, float] | None:
        """(seconds the server asked to wait, seconds of it left) while some request waits as
        the server asked; else None."""
        if self.wait is None or self.wait[1] <= time.monotonic():
            return None
        return self.wait[0], self.wait[1] - time.monotonic()

    def asked_to_wait(self, seconds: float) -> None:
        """A request waits `seconds` before it is asked again, as the server said (retry-after)."""
        ends = time.monotonic() + seconds
        if self.wait is None or ends > self.wait[1]:
            self.wait = (seconds, ends)


class _Sending:
    """One attempt, counted once as a request: when the whole request is written (`trace`, the
    HTTP client's trace extension: a request cancelled between its headers and its body reaches
    the server cut short, and is none), or when it ends having failed unsent (no connection, or
    none made in time: `written` tells it apart); never if the run cancels it before it is sent
    (`unsent`)."""

    def __init__(self, counts: RequestCounts, retry: bool):
        self.counts, self.retry, self.done = counts, retry, False
        self.written = False  # whether the whole request was written

    def count(self) -> None:
        if not self.done:
            self.done = True
            self.counts.attempts += 1
            self.counts.retries += self.retry

    def unsent(self) -> None:
        """The run cancelled the attempt: it counts only if it was sent already."""
        self.done = True

    async def trace(self, event: str, info: dict) -> None:
        if event.endswith("send_request_body.complete"):
            self.written = True
            self.count()


_SENDING: contextvars.ContextVar[_Sending | None] = contextvars.ContextVar("calibrate_sending", default=None)
"""The attempt a request of the HTTP client belongs to (set around the task that sends it)."""


async def _trace_sending(request) -> None:
    """The HTTP client's request hook: the attempt's trace follows the request being sent."""
    sending = _SENDING.get()
    if sending is not None:
        request.extensions["trace"] = sending.trace


class AdaptiveConcurrency:
    """How many requests may be in flight: AIMD between 1 and `ceiling`, starting at `ceiling`.

    Decrease: the limit halves on a sign of overload, once per round: only an attempt sent after
    the last decrease can cause another (the others were sent under the old limit). Increase:
    each answer without overload adds 1/limit, so a whole round of answers adds one."""

    def __init__(self, ceiling: int):
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.lowest = ceiling
        self.in_flight = 0
        self._last_cut = -math.inf
        self._changed = asyncio.Condition()

    @property
    def allowed(self) -> int:
        return max(1, int(self.limit))

    async def acquire(self) -> float:
        """Wait for room under the limit; returns when the attempt may be sent (monotonic)."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.allowed)
            self.in_flight += 1
        return time.monotonic()

    async def release(self, sent_at: float, overload: bool | None) -> None:
        """An attempt sent at `sent_at` is over: overloaded (True), answered (False), or failed
        in a way that says nothing about load (None)."""
        async with self._changed:
            self.in_flight -= 1
            if overload and sent_at >= self._last_cut:
                self.limit = max(1.0, self.limit / 2)
                self._last_cut = time.monotonic()
                self.lowest = min(self.lowest, self.allowed)
            elif overload is False:
                self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
            self._changed.notify_all()


@dataclass
class _Attempt:
    task: asyncio.Future
    oldest_since: float | None = None  # when it became the oldest request in flight
    timed_out: bool = False


class OldestFirstTimeout:
    """Abandons the oldest request in flight once it has been the oldest for `timeout` seconds
    with no answer to any of our requests meanwhile (see the module docstring): a request
    waiting behind our own other requests is not timed out, a server that answers none is."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self._flight: OrderedDict[int, _Attempt] = OrderedDict()
        self._next = 0
        self._changed = asyncio.Event()
        self._watch: asyncio.Task | None = None

    def start(self) -> None:
        self._watch = asyncio.ensure_future(self._watchdog())

    async def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)

    def add(self, task: asyncio.Future) -> tuple[int, _Attempt]:
        attempt = _Attempt(task, time.monotonic() if not self._flight else None)
        key, self._next = self._next, self._next + 1
        self._flight[key] = attempt
        self._changed.set()
        return key, attempt

    def remove(self, key: int, *, answered: bool = False) -> None:
        """The request `key` is no longer in flight; `answered`: the server answered it (whatever
        the answer), a sign that it is working through our requests, so the oldest one's clock
        starts again (a server need not take them in the order we sent them)."""
        was_oldest = next(iter(self._flight), None) == key
        self._flight.pop(key, None)
        if (was_oldest or answered) and self._flight:
            self._flight[next(iter(self._flight))].oldest_since = time.monotonic()
        self._changed.set()

    async def _watchdog(self) -> None:
        while True:
            self._changed.clear()
            if not self._flight:
                await self._changed.wait()
                continue
            key, oldest = next(iter(self._flight.items()))
            left = oldest.oldest_since + self.timeout - time.monotonic()
            if left <= 0:
                oldest.timed_out = True
                oldest.task.cancel()
                self.remove(key)
                continue
            # not asyncio.wait_for: on Python 3.11 it returns, swallowing stop()'s cancellation,
            # when the event is set in the same turn, and stop() then waits forever
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(left):
                    await self._changed.wait()


class ServerSession:
    """One run's connection to the judge server: sends a request body, with retries, under the
    adaptive concurrency and the oldest-first timeout, counting every attempt."""

    def __init__(self, *, base_url: str | None, api_key: str, timeout: float, max_retries: int, backoff: float,
                 concurrency: int, redact: Callable[[str], str]):
        # httpx's own timeouts guard connecting and sending; waiting for the answer is the
        # oldest-first timeout's job (a read timeout would count time spent in the server's queue)
        self.client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key, max_retries=0,
            timeout=openai.Timeout(connect=timeout, read=None, write=timeout, pool=None),
            http_client=openai.DefaultAsyncHttpxClient(event_hooks={"request": [_trace_sending]}),
        )
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.redact = redact
        self.concurrency = AdaptiveConcurrency(concurrency)
        self.counts = RequestCounts()
        self._timeouts = OldestFirstTimeout(timeout)

    @property
    def url(self) -> str:
        """The server's URL as it may be shown (credentials blanked)."""
        return redact_url(str(self.client.base_url))

    async def __aenter__(self) -> ServerSession:
        self._timeouts.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self._timeouts.stop()
        await self.client.close()

    async def create(self, body: Callable[[], dict], check: Callable, *, again: bool = False) -> tuple[object, float]:
        """The answer to `body()` (rebuilt for each attempt) that passes `check(response)` (which
        raises UnusableAnswer otherwise), and the seconds its attempt took. Asks again while an
        attempt fails in a way worth retrying, up to `max_retries` times; then raises
        RequestFailed with the last failure. `again`: the request was sent before (in another
        form), so even its first attempt counts as a retry."""
        for attempt in range(self.max_retries + 1):
            sent_at = await self.concurrency.acquire()
            sending = _Sending(self.counts, retry=attempt > 0 or again)
            overload: bool | None = None
            try:
                response = await self._send(body(), check, sending)
                overload = False
                return response, time.monotonic() - sent_at
            except _Failed as failed:
                failure = failed.failure
                overload = failure.overload or None
            except asyncio.CancelledError:
                sending.unsent()
                raise
            finally:
                sending.count()
                await self.concurrency.release(sent_at, overload)
            self.counts.failures[failure.cause] += 1
            if not failure.reached:
                self.counts.unreached += 1
                self.counts.unreached_retries += sending.retry
            if not failure.retry or attempt == self.max_retries:
                break
            if failure.retry_after is not None:
                self.counts.asked_to_wait(failure.retry_after)
            await asyncio.sleep(failure.retry_after if failure.retry_after is not None
                                else min(BACKOFF_CAP, self.backoff * 2**attempt * (0.5 + random.random())))
        raise RequestFailed(failure, attempt + 1)

    async def _send(self, body: dict, check: Callable, sending: _Sending):
        # the body is sent as it is (as a batch file holds it): every field but the two the
        # client requires goes through extra_body, so fields the client does not know pass too
        fields = {k: v for k, v in body.items() if k not in ("model", "messages")}
        token = _SENDING.set(sending)  # the task copies this context: its request hook finds the attempt
        try:
            task = asyncio.ensure_future(self.client.chat.completions.create(
                model=body["model"], messages=body["messages"], extra_body=fields))
        finally:
            _SENDING.reset(token)
        key, attempt = self._timeouts.add(task)
        answered = False  # whether the server answered, with anything
        try:
            response = await task
            answered = True
            check(response)
            return response
        except asyncio.CancelledError:
            if attempt.timed_out:
                raise _Failed(self._timed_out(sending)) from None
            raise
        except openai.APITimeoutError:
            raise _Failed(self._timed_out(sending)) from None
        except openai.APIStatusError as exc:
            answered = True
            raise _Failed(self._status_failure(exc)) from None
        except openai.APIConnectionError as exc:
            # httpx's ConnectError (the client's own httpx, whatever its package is named): refused, unknown host; a
            # connection lost before the whole request was written reached no server either (it got it cut short)
            refused = type(exc.__cause__).__name__ == "ConnectError"
            raise _Failed(AttemptFailure("connection failed", "could not connect" if refused else self._short(exc),
                                         retry=True, reached=sending.written)) from None
        except UnusableAnswer as exc:
            raise _Failed(AttemptFailure(exc.cause, exc.detail, retry=exc.retry)) from None
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
            answered = True
            raise _Failed(AttemptFailure("malformed response body", self._short(exc),
                                         retry=True)) from None
        finally:
            self._timeouts.remove(key, answered=answered)

    def _timed_out(self, sending: _Sending) -> AttemptFailure:
        """An attempt that timed out: after its request was written, the server had it and gave
        no answer in time; before, it never reached the server (a connection that could not be
        made in time: an overloaded server's full queue, a firewall dropping the packets)."""
        if sending.written:
            return AttemptFailure(TIMED_OUT, f"no answer {self.timeout:g}s after the server (presumably) started on it",
                                  retry=True, overload=True)
        return AttemptFailure(TIMED_OUT, f"could not connect or send within {self.timeout:g}s", retry=True,
                              overload=True, reached=False)

    def _status_failure(self, exc: openai.APIStatusError) -> AttemptFailure:
        status = exc.status_code
        if status in FATAL_STATUS:
            raise JudgeRefused(status, f"HTTP {status} from {self.url}: {self._short(exc)}") from None
        if status == 400 and _REASONING_FIELD.search(str(exc)) and _UNSUPPORTED.search(str(exc)):
            raise ReasoningRefusal(self.redact(self._short(exc))) from None
        retry = status in RETRY_STATUS or status >= 500
        wait, detail = _retry_after(exc.response), self._short(exc)
        if wait is not None and wait > RETRY_AFTER_CAP:  # (a quota spent for the day): not asked again in this run
            retry, wait, detail = False, None, f"{detail} (the server asks to wait {wait:.0f} s before asking again)"
        return AttemptFailure(f"HTTP {status}", detail, retry=retry, overload=status in OVERLOAD_STATUS,
                              retry_after=wait)

    def _short(self, exc: Exception) -> str:
        text = self.redact(str(exc).replace("\n", " "))
        return text if len(text) <= 200 else text[:200] + "…"


class _Failed(Exception):
    def __init__(self, failure: AttemptFailure):
        self.failure = failure


class RequestFailed(Exception):
    """A request that failed on its last attempt (or on one not worth repeating)."""

    def __init__(self, failure: AttemptFailure, attempts: int):
        super().__init__(failure.message)
        self.failure = failure
        self.attempts = attempts

    @property
    def message(self) -> str:
        tail = f" (after {self.attempts} attempts)" if self.attempts > 1 else ""
        return f"{self.failure.message}{tail}"


def _retry_after(response) -> float | None:
    """The server's retry-after-ms or retry-after in seconds (retry-after in seconds or as an
    HTTP date, RFC 9110 section 10.2.3), if it sent one."""
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        try:
            seconds = float(value) / scale
        except (TypeError, ValueError):
            try:
                seconds = (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds() if name == "retry-after" \
                    else None
            except (TypeError, ValueError):
                seconds = None
        if seconds is not None and not math.isnan(seconds):
            return max(0.0, seconds)
    return None
