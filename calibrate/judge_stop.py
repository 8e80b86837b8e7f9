"""When a judge run stops on its own: items failing one after another, with no answer from the
server in between, are the sign of a server that is down or refuses everything, and asking
thousands more items would only store the same error. The items that failed are stored as
errors before the stop (the runner stores each judgment as it comes), so a rerun asks them after
the others (model.ASKED_AGAIN) and `calibrate items --status error` lists them; the stop message
names them and what failed, and `kept_words` says what the run kept, in the sentences that apply."""

from __future__ import annotations

from collections import Counter

from calibrate.judge_server import REASONING_ONLY, STREAMED, TIMED_OUT
from calibrate.model import ASKED_AGAIN, counted
from calibrate.names import listing

STOP_AFTER_FAILURES = 3
"""Items failing in a row that stop a run the server has answered no request of: nothing
listens, or the server refuses everything (or the run began with items it cannot judge: stored
as errors, they are asked last next time)."""
STOP_AFTER_FAILURES_ONCE_ANSWERED = 10
"""Items failing in a row, with no answer in between, that stop a run the server has answered:
it has stopped working. Three would stop runs on servers that fail a share of the items (at
15 %, three in a row come once in ~350 items; ten in a row at 33 %, once in ~90,000)."""


class RunStopped(Exception):
    """The run stopped before asking every item: the server failed or refused too often."""


class FailureStreak:
    """Items failing one after another with no answer in between: the run's sign of a server
    that is down or refuses everything. It stops the run at STOP_AFTER_FAILURES items while the
    server has answered none of the run's requests, at STOP_AFTER_FAILURES_ONCE_ANSWERED after
    (the samples of one item count as one item). A failure counts only if the server answered
    nothing while the item was being asked: with requests in flight side by side, an item's
    retries (with backoff) end after the quick answers sent with it, so failures would otherwise
    come in a row whenever the answers run out, at the end of the run or once every request in
    flight is a failing item's. The message names the items and what failed, and says whether
    the server had answered anything."""

    SHOWN = 5  # items named in the message

    def __init__(self, url: str):
        self.url = url
        self.answers = 0
        self.failures: list[tuple[int, str]] = []  # (item id, error) since the last answer

    def answered(self) -> None:
        self.answers += 1
        self.failures.clear()

    def failed(self, item_id: int, error: str, answers_before: int) -> None:
        """Counts a failed request (stored as the item's error, or not stored: no connection
        could be made), unless the server has answered since `answers_before` (`answers` when the item was
        first asked); raises RunStopped once the streak is long enough."""
        if self.answers > answers_before:
            return
        self.failures.append((item_id, error))
        limit = STOP_AFTER_FAILURES_ONCE_ANSWERED if self.answers else STOP_AFTER_FAILURES
        if len(self.item_ids) >= limit:
            raise RunStopped(self.message())

    @property
    def item_ids(self) -> list[int]:
        return sorted({item_id for item_id, _ in self.failures})

    def message(self) -> str:
        reason, _ = Counter(error.split(":", 1)[0] for _, error in self.failures).most_common(1)[0]
        example = next(error for _, error in self.failures if error.startswith(reason))
        ids = self.item_ids
        shown = listing([str(item_id) for item_id in ids], self.SHOWN)
        url = self.url
        if reason in ("connection failed", TIMED_OUT):
            seen = f"is the server at {url} up and serving this model?"
        elif reason == "HTTP 429":
            seen = f"the server at {url} limits how often it is asked: wait as it says, or lower --concurrency."
        elif reason == "HTTP 400":
            seen = (f"the server at {url} rejects these requests (prompts longer than the model's context? a field "
                    "it does not take?).")
        elif reason == STREAMED:
            seen = f"the server at {url} (or a proxy before it) streams its answers: make it answer whole."
        elif reason == REASONING_ONLY:
            seen = (f"the model at {url} answers only in its reasoning (reasoning_content), with nothing in the "
                    "answer itself: it thinks up to the token limit. Raise --max-tokens, or turn its thinking off.")
        elif self.answers:
            seen = f"the server at {url} is up, but may have stopped answering anything but errors."
        else:
            seen = (f"the server at {url} is up, but failed each request of this run: it fails every request, or "
                    "these items are ones it cannot judge.")
        cause = reason if example == reason else f"e.g. {example}"
        if self.answers:
            what = (f"{len(ids)} items in a row failed after the server had given {counted(self.answers, 'usable answer')} "
                    "in this run")
        else:
            what = f"{len(ids)} items failed before the server gave any usable answer in this run"
        return f"{what} ({cause}): id {shown}. Stopped: {seen}"


def kept_words(*, errors: bool, unsent: int, left: bool) -> str:
    """What a stopped run kept, in the sentences that apply: failed items stored as errors
    (`errors`), `unsent` requests no connection could be made for (not stored), and, when
    something is `left` to ask (items never asked, or in flight as it stopped), to run again."""
    said = []
    if errors:
        said.append(f"The failed items are stored as errors (calibrate items --status error lists them; {ASKED_AGAIN}).")
    if unsent:
        said.append(f"{counted(unsent, 'request')} reached no server (no connection could be made): "
                    f"{'its item is' if unsent == 1 else 'their items are'} not stored, and the next run asks "
                    f"{'it' if unsent == 1 else 'them'}.")
    if left:
        said.append("The items not yet answered are not stored: run again to resume"
                    + (" once the server is up." if unsent and not errors else "."))
    return " ".join(said)
