"""The judge runner: renders each item's prompt, asks any OpenAI-compatible server through the
official `openai` client (AsyncOpenAI, see calibrate.judge_server), parses the verdict and
stores a judgment at once.

Runs are resumable: a judgment is keyed by judge name, model, template version and request
parameters (sampling controls, extra request fields and the system prompt's digest included),
and an item that already has a non-error judgment under that key is not asked again. `repeat`
asks each item K times under that one key (test-retest consistency, confidence from agreement
among repeats); each answer is stored with its sample index 0..K-1, and a resumed run asks only
the samples still missing. Faults (429, 5xx, timeouts, refused connections, malformed bodies,
empty content) get bounded retries with backoff, every one counted; after that the item is
stored as an error at once and the run goes on. Items failing in a row with no answer in
between stop the run as a server that is down or refuses everything (calibrate.judge_stop:
three before the server has answered any request of the run, ten after); the failed items stay
stored as errors, the items never asked are not. Requests that failed in an earlier run are
asked after the others, and their failures never count toward the stop: items that always fail
(prompts longer than the model's context) cannot block the rest, on this run or the next. A
server that refuses `temperature` (a reasoning model) is asked again without it, with
`max_completion_tokens`, as `--reasoning` would. Each run is recorded (judge_runs) with its
requests, retries and failures by cause.
The API key is read from the environment and never stored: it and any credentials in the base
URL are blanked out of everything stored or printed (error bodies that echo them included).
The judge's configuration includes the server (host and port); a run whose judge name has verdicts
in force from another configuration replaces them, and says so (`calibrate.configurations`). A
run switched to reasoning mode says so in its record, and the next run of the judge on that
server and model starts in that mode (`resume_reasoning`). The rule judge is calibrate.judge_rule.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol
from urllib.parse import urlsplit

from calibrate.judge_server import (
    REASONING_ONLY,
    STREAMED,
    JudgeRefused,
    ReasoningRefusal,
    RequestFailed,
    ServerSession,
    UnusableAnswer,
)
from calibrate.judge_stop import FailureStreak, RunStopped, kept_words
from calibrate.judge_summary import RunSummary
from calibrate.judgments import (
    parse_output,
    truncated,
    verdict_confidence,
)
from calibrate.model import CalibrateError, Item, NewJudgment, digest, judge_key, no_output
from calibrate.redact import Redactor, redact_url
from calibrate.store import Store
from calibrate.templates import RenderedPrompt, Template, TemplateError, TemplateSet
from calibrate.verdicts import BARE

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Request fields set by their own flags, so --param cannot set them (or the key would lie).
FLAG_FIELDS = {"model": "--model", "messages": "the template", "temperature": "--temperature",
               "max_tokens": "--max-tokens", "max_completion_tokens": "--max-tokens with --reasoning",
               "seed": "--seed", "top_p": "--top-p", "stop": "--stop", "logprobs": "--logprobs",
               "top_logprobs": "--logprobs", "n": "--repeat"}


class JudgeConfigError(CalibrateError):
    """Judge options that cannot make a request (a --param that a flag owns, a bad value)."""


def parse_param(text: str) -> tuple[str, object]:
    """`KEY=VALUE` from --param: the value read as JSON where it is JSON (`top_k=40`, `x=true`,
    `y={"a": 1}`), else as text."""
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise JudgeConfigError(f"--param {text!r}: write KEY=VALUE, e.g. --param top_k=40")
    if key == "stream":
        raise JudgeConfigError("--param stream: streaming is not supported (calibrate reads each answer whole)")
    if key in FLAG_FIELDS:
        raise JudgeConfigError(f"--param {key}: set by {FLAG_FIELDS[key]}, not by --param")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


@dataclass
class JudgeConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    judge_name: str | None = None
    concurrency: int = 8  # the ceiling: the run adapts below it (see calibrate.judge_server)
    temperature: float = 0.0
    max_tokens: int | None = None
    logprobs: bool = False
    timeout: float = 120.0
    max_retries: int = 3
    backoff: float = 0.5
    repeat: int = 1  # samples per item; not a parameter of the judge, so K repeats share one key
    family: str | None = None  # the template family to judge with (its version is in the key); None: each task's default
    seed: int | None = None
    top_p: float | None = None
    stop: tuple[str, ...] = ()
    system_prompt: str | None = None  # replaces every template's system prompt
    extra: dict = field(default_factory=dict)  # further request fields (--param KEY=VALUE)
    reasoning: bool = False  # a reasoning model: no temperature, max_completion_tokens

    @property
    def name(self) -> str:
        return self.judge_name or self.model

    def params(self) -> dict:
        """The request parameters that define this judge (part of its key; never the key). A
        setting left unset adds nothing, so older judges keep their keys."""
        if self.reasoning:
            params: dict = {"reasoning": True, "max_completion_tokens": self.max_tokens, "logprobs": self.logprobs}
        else:
            params = {"temperature": self.temperature, "max_tokens": self.max_tokens, "logprobs": self.logprobs}
        for name in ("seed", "top_p"):
            if getattr(self, name) is not None:
                params[name] = getattr(self, name)
        if self.stop:
            params["stop"] = list(self.stop)
        if self.system_prompt is not None:
            params["system_prompt"] = digest(self.system_prompt)
        if self.extra:
            params["extra"] = dict(sorted(self.extra.items()))
        return params

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env) or "not-needed"

    @property
    def url(self) -> str:
        """The server URL the client will use (the openai client's own default when unset)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

    def url_problem(self) -> str | None:
        """Why the server URL cannot be asked (no http:// or https://: the client would take
        `127.0.0.1:8000/v1` for a path and fail to connect), or None."""
        parts = urlsplit(self.url)
        if parts.scheme in ("http", "https") and parts.hostname:
            return None
        fix = "write it with http:// or https://" + ("" if "://" in self.url else f" (http://{self.url})")
        return self.redact(f"{self.url!r} is no server URL: {fix}")

    @property
    def server(self) -> str:
        """host:port of the judge server: part of the judge's identity."""
        parts = urlsplit(self.url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        return f"{parts.hostname or ''}:{port}"

    @cached_property
    def redact(self) -> Redactor:
        """Blanks the API key and the URL's credentials out of text."""
        return Redactor.for_judge(os.environ.get(self.api_key_env), self.url)

    def key_for(self, template: Template) -> str:
        return judge_key(self.name, self.model, template.version, self.params(), self.server)


@dataclass
class Job:
    item: Item
    template: Template
    prompt: RenderedPrompt
    key: str
    sample: int = 0
    judged_after: int = 0  # a judgment of this request newer than this judgment id means another run answered it
    failed_before: bool = False  # an earlier run asked it and stored an error

    @property
    def custom_id(self) -> str:
        """The judgment key in a batch file: which item, judged by which configuration (and,
        for repeats after the first, which sample)."""
        tail = f":{self.sample}" if self.sample else ""
        return f"{self.item.content_hash}:{self.key}{tail}"


def plan_jobs(
    store: Store,
    templates: TemplateSet,
    config: JudgeConfig,
    *,
    task: str | None = None,
    lang: str | None = None,
    system: str | None = None,
    limit: int | None = None,
    force: bool = False,
    summary: RunSummary | None = None,
    passed_over: Collection[int] = (),
) -> list[Job]:
    """Requests to make: for each item with a judge prompt (in `config.family`, when set: items
    of tasks it does not serve are passed over) outside `passed_over` (the items C3's evaluate.py
    never asks, `formats.c3.c3_passed_over`: no C3 figure counts them, so they are not paid for), each of its `config.repeat` samples not yet
    judged by this exact configuration (all of them if `force`). `limit` counts items: those
    with a sample that ended in error before are taken only where fewer items are left without
    one, so that a run limited to N items is not spent asking the same failing ones again;
    an item carrying a system's response its prompt does not show is not asked
    (`summary.response_unseen`: the model would answer the task, not judge the response);
    `summary.skipped_done` counts the samples already judged of the items looked at. Samples that
    ended in error before come last: the server's answers to the others are not held up behind them."""
    summary = summary if summary is not None else RunSummary()
    summary.repeat = config.repeat
    judged_after = store.newest_judgment_id() if force else 0
    done_by_key: dict[str, dict[int, set[int]]] = {}
    failed_by_key: dict[str, dict[int, set[int]]] = {}
    fresh: list[list[Job]] = []  # per item to ask, its jobs: items with no sample failed before, then the others
    failed_before: list[list[Job]] = []
    for item in store.iter_items(task=task, lang=lang, system=system):
        if item.id in passed_over:
            summary.c3_passes_over[(item.task, item.lang)] += 1
            continue
        try:
            template = templates.for_task(item.task, item.lang, config.family)
        except TemplateError:
            if templates.people_decide(item.task, item.lang):
                summary.no_prompt += 1
            elif config.family and templates.knows(item.task, item.lang):
                summary.outside_family[(item.task, item.lang)] += 1
            else:
                summary.no_template[(item.task, item.lang)] += 1
            continue
        if not template.has_prompt:
            summary.no_prompt += 1
            continue
        key = config.key_for(template)
        if key not in done_by_key:
            done_by_key[key] = {} if force else store.judged_samples(key)
            failed_by_key[key] = {} if force else store.judged_samples(key, failed=True)
        done = done_by_key[key].get(item.id, set())
        missing = [sample for sample in range(config.repeat) if sample not in done]
        summary.skipped_done += config.repeat - len(missing)
        if not missing:
            continue
        try:
            prompt = template.render(item.task, item.fields)
        except TemplateError as exc:
            summary.not_renderable.setdefault(str(exc), []).append(item.id)
            continue
        if template.response in item.fields and not template.shows_response(item.task):
            summary.response_unseen[(item.task, item.lang)] += 1
            continue
        if config.system_prompt is not None:
            prompt = replace(prompt, system=config.system_prompt)
        failed = failed_by_key[key].get(item.id, set())
        jobs = [Job(item, template, prompt, key, sample, judged_after, sample in failed) for sample in missing]
        (failed_before if any(job.failed_before for job in jobs) else fresh).append(jobs)
        if limit is not None and len(fresh) >= limit:
            break
    asked = fresh + failed_before if limit is None else fresh + failed_before[:max(0, limit - len(fresh))]
    return sorted((job for jobs in asked for job in jobs), key=lambda job: job.failed_before)


REFUSAL_HINTS = {401: "check the key in ${api_key_env}", 403: "the key has no access to this model",
                 404: "the server has no model {model!r} (or the base URL is wrong)"}


def refusal_message(exc: JudgeRefused, config: JudgeConfig) -> str:
    hint = REFUSAL_HINTS.get(exc.status, "").format(api_key_env=config.api_key_env, model=config.model)
    return config.redact(f"{exc}; {hint}" if hint else str(exc))


@dataclass
class Answer:
    """A judgment from a server's answer, with what the run counts about it."""

    judgment: NewJudgment
    bare: bool = False
    no_confidence: str | None = None  # why a parsed verdict has no confidence (asked for logprobs)
    reached: bool = True  # False: no connection could be made, the server never saw the request


def _content(response) -> tuple[str, str | None]:
    """The answer's text and finish reason. The openai client hands over a server-sent-events
    body (a server or proxy that streams whatever it is asked) as its text."""
    if isinstance(response, str) and response.lstrip().startswith(("data:", "event:")):
        raise UnusableAnswer(STREAMED, "the server answered with a stream (server-sent events), which calibrate "
                             "does not read", retry=False)
    try:
        choice = response.choices[0]
        content = choice.message.content
    except (AttributeError, IndexError, TypeError, KeyError) as exc:
        raise UnusableAnswer("malformed response body", f"{type(exc).__name__}: {exc}") from None
    if no_output(content):
        thought = getattr(choice.message, "reasoning_content", None) or getattr(choice.message, "reasoning", None)
        if thought and str(thought).strip():  # a thinking model that spent its tokens thinking: asking again would too
            raise UnusableAnswer(REASONING_ONLY, "the answer is only in the model's reasoning (reasoning_content), its "
                                 "content is empty: raise --max-tokens, or turn thinking off", retry=False)
        raise UnusableAnswer("empty content")
    return str(content), getattr(choice, "finish_reason", None)


def _tokens(response) -> list[tuple[str, float | None]] | None:
    """The output's tokens with their logprobs, if the server sent them."""
    try:
        content = response.choices[0].logprobs.content
    except (AttributeError, IndexError, TypeError):
        return None
    return [(getattr(t, "token", "") or "", getattr(t, "logprob", None)) for t in content or []] or None


def judgment_for(job: Job, config: JudgeConfig, **values) -> NewJudgment:
    """The judgment of `job` under `config` with `values` (status, output, verdict, error, ...),
    with what the server sent redacted of credentials."""
    values = config.redact.fields(values)  # what the server sent: output, reported model, errors
    return NewJudgment(
        item_id=job.item.id,
        judge_name=config.name,
        judge_key=job.key,
        model=config.model,
        template_id=job.template.id,
        template_hash=job.template.version,
        params=config.params(),
        system_prompt=job.prompt.system,
        prompt=job.prompt.user,
        sample=job.sample,
        **values,
    )


def judgment_from_response(job: Job, config: JudgeConfig, response, latency_ms: float | None) -> Answer:
    """A server's answer as a judgment: an output cut at the token limit is unparsed
    ("truncated at N tokens"), whatever it says; otherwise the template's parser reads it."""
    raw, finish_reason = _content(response)
    usage = getattr(response, "usage", None)
    completion_tokens = getattr(usage, "completion_tokens", None)
    if finish_reason == "length":
        verdict, correct = truncated(config.max_tokens or completion_tokens), None
    else:
        verdict, correct = parse_output(job.template, job.item, raw)
    confidence, no_confidence = verdict_confidence(_tokens(response), raw, verdict) if config.logprobs else (None, None)
    judgment = judgment_for(
        job, config,
        status=verdict.status,
        raw_output=raw,
        verdict=verdict.value,
        unparsed_reason=verdict.reason,
        correct=correct,
        model_reported=getattr(response, "model", None),
        confidence=confidence,
        latency_ms=latency_ms,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=completion_tokens,
    )
    return Answer(judgment, bare=verdict.form == BARE, no_confidence=no_confidence)


def request_body(job: Job, config: JudgeConfig) -> dict:
    body: dict = {"model": config.model, "messages": job.prompt.messages()}
    if config.reasoning:
        if config.max_tokens is not None:
            body["max_completion_tokens"] = config.max_tokens
    else:
        body["temperature"] = config.temperature
        if config.max_tokens is not None:
            body["max_tokens"] = config.max_tokens
    if config.seed is not None:
        body["seed"] = config.seed
    if config.top_p is not None:
        body["top_p"] = config.top_p
    if config.stop:
        body["stop"] = list(config.stop)
    if config.logprobs:
        body.update(logprobs=True, top_logprobs=5)
    body.update(config.extra)
    return body


_VARIANT = re.compile(r"[-_.:@](v?\d|latest\b)")


def same_model(asked: str, reported: str | None) -> bool:
    """Whether the model a server reports is the one asked for: the same name, or the name with
    a version, date, size or quantisation after it (`gpt-4o` answered by `gpt-4o-2024-08-06`,
    `llama3` by `llama3:latest`, `qwen2.5-coder` by `qwen2.5-coder-0.5b-instruct-q4_k_m.gguf`),
    case and a file path (llama.cpp reports the model file) aside; `gpt-4o-mini` is another model."""
    if not reported:
        return True
    names = sorted((asked.strip().lower(), reported.strip().lower().rsplit("/", 1)[-1]), key=len)
    short, long = names
    return long == short or (long.startswith(short) and bool(_VARIANT.match(long, len(short))))


class Progress(Protocol):
    """What the runner tells whoever shows a run's progress."""

    def advance(self, job: Job) -> None: ...  # one sample stored (or, for a stopped run, given up)

    def warn(self, message: str) -> None: ...

    def refresh(self) -> None: ...  # called about once a second


class _Quiet:
    def advance(self, job: Job) -> None:
        pass

    def warn(self, message: str) -> None:
        pass

    def refresh(self) -> None:
        pass


async def run_jobs(
    store: Store,
    jobs: list[Job],
    config: JudgeConfig,
    summary: RunSummary,
    progress: Progress | None = None,
) -> RunSummary:
    """Ask for every job with up to `config.concurrency` requests in flight; store each judgment
    as it arrives, so an interruption keeps everything completed. Raises RunStopped (items
    failed in a row: see calibrate.judge_stop) or JudgeRefused; either way the run is recorded
    (a run with nothing to ask is not). Each job is claimed in the store
    before it is asked; a job another run has answered or holds counts in `summary.skipped_done`."""
    if not jobs:
        return summary
    progress = progress or _Quiet()
    holder = uuid.uuid4().hex  # this run's name on its claims: concurrent runs of one judge split the jobs
    # a claim outlasts the longest a request can take: every attempt timing out, with backoff between
    claim_seconds = config.timeout * (config.max_retries + 1) ** 2 + 60
    queue: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    run_id = store.begin_judge_run(config.name, config.model, config.server, config.params(),
                                   items=len({job.item.id for job in jobs}), samples=len(jobs),
                                   concurrency=config.concurrency)
    streak = FailureStreak(redact_url(config.url))
    outcome, message = "interrupted", None
    session = ServerSession(base_url=config.base_url, api_key=config.api_key(), timeout=config.timeout,
                            max_retries=config.max_retries, backoff=config.backoff,
                            concurrency=config.concurrency, redact=config.redact)
    summary.requests = session.counts
    switch = ReasoningSwitch(store, jobs, config, summary, progress, run_id)

    def stored(job: Job, answer: Answer) -> None:
        # the run's record counts the judgment in the transaction that stores it (true even if the process
        # dies), the summary once that is committed: a write the disk rolls back (full) is counted by neither
        cells = summary.cells + summary.cells_of(job.item, answer.judgment, answer.bare)
        with store.transaction():
            store.add_judgments([answer.judgment])
            store.release_judging(job.item.id, job.key, job.sample, holder)
            store.count_judge_run(run_id, stored=summary.stored + 1, cells=cells, requests=session.counts)
        summary.count(job.item, answer.judgment, answer.bare)
        if answer.no_confidence:
            summary.no_confidence[answer.no_confidence] += 1
        progress.advance(job)

    async def ask(job: Job) -> Answer | None:
        """The job's answer (an error judgment when its request failed); None when, after a
        switch to reasoning mode, it turns out judged already."""
        again = False  # the request was refused before the switch to reasoning mode: asking it now is a retry
        while True:
            as_reasoning = config.reasoning  # a request sent before a switch to reasoning mode is asked again
            try:
                response, seconds = await session.create(lambda: request_body(job, config), _content, again=again)
            except ReasoningRefusal as exc:
                if as_reasoning:
                    raise RunStopped(f"the server refuses the request even as a reasoning model: {exc}") from None
                session.counts.failures["HTTP 400"] += 1
                again = True
                switch.switch(str(exc))
                if switch.done(job):
                    return None
                continue
            except RequestFailed as exc:
                return Answer(judgment_for(job, config, status="error", error=exc.message), reached=exc.failure.reached)
            answer = judgment_from_response(job, config, response, seconds * 1000)
            reported = answer.judgment.model_reported
            if not same_model(config.model, reported):
                if not summary.other_models:
                    progress.warn(f"asked for model {config.model!r}, the server reports {reported!r}: the judgments "
                                  f"are stored under {config.model!r} (the reported model beside it)")
                summary.other_models[reported] += 1
            return answer

    async def worker() -> None:
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if switch.done(job):
                continue
            if store.claim_judging(job.item.id, job.key, job.sample, holder, seconds=claim_seconds,
                                   judged_after=job.judged_after) != "claimed":
                summary.skipped_done += 1
                progress.advance(job)
                continue
            answers_before = streak.answers
            answer = await ask(job)
            if answer is None:
                continue
            if not answer.reached:  # no connection: nothing the item did; not stored, so the next run asks it
                store.release_judging(job.item.id, job.key, job.sample, holder)
                summary.unsent += 1
                progress.advance(job)
                streak.failed(job.item.id, answer.judgment.error or "unknown error", answers_before)
                continue
            stored(job, answer)
            if answer.judgment.status != "error":
                streak.answered()
            elif not job.failed_before:  # an item that failed before fails again: its own fault, not the server's
                streak.failed(job.item.id, answer.judgment.error or "unknown error", answers_before)

    def note_concurrency() -> None:
        summary.concurrency = (session.concurrency.allowed, config.concurrency)
        summary.concurrency_lowest = session.concurrency.lowest

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(1)
            note_concurrency()
            progress.refresh()

    beat = None
    in_flight = 0  # as the run ends: requests still being asked, not stored (with the items never asked)
    try:
        async with session:
            beat = asyncio.ensure_future(heartbeat())
            workers = [asyncio.ensure_future(worker()) for _ in range(max(1, min(config.concurrency, len(jobs) or 1)))]
            try:
                await asyncio.gather(*workers)
            finally:
                in_flight = sum(not task.done() for task in workers)
                for task in workers:
                    task.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
        outcome = "finished"
        if summary.unsent:
            outcome, message = "stopped", kept_words(errors=False, unsent=summary.unsent, left=False)
    except RunStopped as exc:
        left = not queue.empty() or in_flight > 0
        outcome = "stopped"
        message = f"{exc} {kept_words(errors=bool(summary.failed), unsent=summary.unsent, left=left)}".strip()
        summary.stopped = message
        raise RunStopped(message) from None
    except JudgeRefused as exc:
        outcome, message = "refused", refusal_message(exc, config)
        summary.stopped = message
        raise
    finally:
        if beat is not None:
            beat.cancel()
        note_concurrency()
        store.release_all_judging(holder)
        store.finish_judge_run(run_id, outcome=outcome, message=switch.message(message), params=config.params(),
                               stored=summary.stored, cells=summary.cells, requests=session.counts,
                               concurrency_lowest=session.concurrency.lowest)
    return summary


# -- reasoning models ------------------------------------------------------------------------


SWITCHED = "switched to reasoning mode"
"""How the message of a run that switched on its own starts, for people (`status --runs`); the
switch itself is judge_runs.switched_to_reasoning."""


class ReasoningSwitch:
    """Turns a run into a reasoning-model run when the server refuses `temperature` or
    `max_tokens`: the configuration changes, every job not yet stored takes the new key, and
    jobs already judged under that key are skipped."""

    def __init__(self, store: Store, jobs: list[Job], config: JudgeConfig, summary: RunSummary, progress: Progress,
                 run_id: int):
        self.store, self.jobs, self.config, self.summary, self.progress = store, jobs, config, summary, progress
        self.run_id = run_id
        self.already: dict[str, dict[int, set[int]]] = {}
        self.switched = False

    def switch(self, refusal: str) -> None:
        if self.config.reasoning:
            return
        self.config.reasoning = self.switched = True
        # recorded at once: a run killed after this (kill -9) leaves the switch in its record for the next run
        self.store.note_reasoning_switch(self.run_id, message=self.message(None), params=self.config.params())
        note = (f"the server refused temperature / max_tokens ({refusal}): judging as a reasoning model, without "
                "temperature and with max_completion_tokens (say --reasoning to start so; the next run of this "
                "judge here does)")
        self.summary.notes.append(note)
        self.progress.warn(note)
        for job in self.jobs:
            job.key = self.config.key_for(job.template)
            if job.key not in self.already:
                self.already[job.key] = self.store.judged_samples(job.key)

    def done(self, job: Job) -> bool:
        """Whether the job was judged earlier under its (switched) key: nothing to ask."""
        if job.sample in self.already.get(job.key, {}).get(job.item.id, ()):
            self.summary.skipped_done += 1
            self.progress.advance(job)
            return True
        return False

    def message(self, message: str | None) -> str | None:
        """The run's recorded message, saying first that it switched (if it did)."""
        if not self.switched:
            return message
        said = f"{SWITCHED}: the server refused temperature / max_tokens"
        return f"{said}; {message}" if message else said


def resume_reasoning(store: Store, config: JudgeConfig) -> str | None:
    """Where an earlier run of this judge name, model and server switched to reasoning mode on
    its own (its parameters otherwise this run's), turns `config` into a reasoning-model one and
    says so; else None."""
    if config.reasoning:
        return None
    as_reasoning = replace(config, reasoning=True).params()
    for run in store.judge_runs():
        if (run["judge_name"], run["model"], run["server"]) == (config.name, config.model, config.server) \
                and run["params"] == as_reasoning and run["switched_to_reasoning"]:
            config.reasoning = True
            return (f"run {run['id']} of {config.name} switched to reasoning mode (the server refused temperature / "
                    "max_tokens): this run resumes as a reasoning model, without temperature and with "
                    "max_completion_tokens (as --reasoning)")
    return None
