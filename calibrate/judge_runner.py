"""The judge runner: renders each item's prompt, asks any OpenAI-compatible server through the
official `openai` client (AsyncOpenAI), parses the verdict and stores a judgment at once.

Runs are resumable: a judgment is keyed by judge name, model, template version and request
parameters, and an item that already has a non-error judgment under that key is not asked
again. `repeat` asks each item K times under that one key (test-retest consistency, confidence
from agreement among repeats); each answer is stored with its sample index 0..K-1, and a resumed
run asks only the samples still missing. Faults (429, 5xx, timeouts, refused connections, malformed bodies, empty content) get
bounded retries with backoff; after that the item is stored as an error and the run goes on.
The API key is read from the environment and never stored: it and any credentials in the base
URL are blanked out of everything stored or printed (error bodies that echo them included).
The judge's identity includes the server (host and port). The rule judge (SuperGLUE) parses
the model-under-test's own response offline, following seed 004's parsing rules.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from urllib.parse import urlsplit

import openai

from calibrate.judgments import judgment_from_output, parse_output
from calibrate.model import CalibrateError, Item, NewJudgment, judge_key
from calibrate.redact import Redactor, redact_url
from calibrate.store import Store
from calibrate.templates import RenderedPrompt, Template, TemplateError, TemplateSet

DEFAULT_BASE_URL = "https://api.openai.com/v1"
RULE_JUDGE = "rule"
RULE_PARAMS = {"rule": "superglue seed-004 answer parsing"}


@dataclass
class JudgeConfig:
    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    judge_name: str | None = None
    concurrency: int = 8
    temperature: float = 0.0
    max_tokens: int | None = None
    logprobs: bool = False
    timeout: float = 120.0
    max_retries: int = 3
    backoff: float = 0.5
    repeat: int = 1  # samples per item; not a parameter of the judge, so K repeats share one key
    family: str | None = None  # the template family to judge with (its version is in the key); None: each task's default

    @property
    def name(self) -> str:
        return self.judge_name or self.model

    def params(self) -> dict:
        """The request parameters that define this judge (part of its key; never the key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens, "logprobs": self.logprobs}

    def api_key(self) -> str:
        return os.environ.get(self.api_key_env) or "not-needed"

    @property
    def url(self) -> str:
        """The server URL the client will use (the openai client's own default when unset)."""
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL

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


@dataclass
class Job:
    item: Item
    template: Template
    prompt: RenderedPrompt
    key: str
    sample: int = 0
    judged_after: int = 0  # a judgment of this request newer than this judgment id means another run answered it

    @property
    def custom_id(self) -> str:
        """The judgment key in a batch file: which item, judged by which configuration (and,
        for repeats after the first, which sample)."""
        tail = f":{self.sample}" if self.sample else ""
        return f"{self.item.content_hash}:{self.key}{tail}"


@dataclass
class RunSummary:
    skipped_done: int = 0
    not_renderable: dict[str, list[int]] = field(default_factory=dict)  # why -> ids of the items it stops
    no_template: Counter = field(default_factory=Counter)  # (task, lang) no template serves -> items
    no_prompt: int = 0  # items of tasks people decide (no judge prompt)
    outside_family: Counter = field(default_factory=Counter)  # (task, lang) the asked --variant does not serve -> items
    stored: int = 0
    cells: Counter = field(default_factory=Counter)  # (task, lang, status) -> n
    errors: Counter = field(default_factory=Counter)  # reason (the error up to its first colon) -> n
    error_examples: dict = field(default_factory=dict)  # reason -> one full error message
    interrupted: bool = False

    def count(self, item: Item, status: str, error: str | None = None) -> None:
        self.stored += 1
        self.cells[(item.task, item.lang, status)] += 1
        if status == "error":
            reason = (error or "unknown error").split(":", 1)[0]
            self.errors[reason] += 1
            self.error_examples.setdefault(reason, error or "")

    def table(self) -> list[list]:
        cells = sorted({(t, lang) for t, lang, _ in self.cells})
        return [
            [t, lang, self.cells[(t, lang, "verdict")], self.cells[(t, lang, "unparsed")], self.cells[(t, lang, "error")]]
            for t, lang in cells
        ]


def plan_jobs(
    store: Store,
    templates: TemplateSet,
    config: JudgeConfig,
    *,
    task: str | None = None,
    lang: str | None = None,
    limit: int | None = None,
    force: bool = False,
    summary: RunSummary | None = None,
) -> list[Job]:
    """Requests to make: for each item with a judge prompt (in `config.family`, when set: items
    of tasks it does not serve are passed over), each of its `config.repeat` samples not yet
    judged by this exact configuration (all of them if `force`). `limit` counts items;
    `summary.skipped_done` counts the samples already judged."""
    summary = summary if summary is not None else RunSummary()
    params = config.params()
    judged_after = store.newest_judgment_id() if force else 0
    done_by_key: dict[str, dict[int, set[int]]] = {}
    jobs: list[Job] = []
    items_asked = 0
    for item in store.iter_items(task=task, lang=lang):
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
        key = judge_key(config.name, config.model, template.version, params, config.server)
        if key not in done_by_key:
            done_by_key[key] = {} if force else store.judged_samples(key)
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
        jobs += [Job(item, template, prompt, key, sample, judged_after) for sample in missing]
        items_asked += 1
        if limit is not None and items_asked >= limit:
            break
    return jobs


class BatchFileError(CalibrateError):
    """A batch result file that cannot be read, or a line of it that fits no item of this judge."""


class JudgeRefused(Exception):
    """The server refuses every request alike (bad key, no such model, no access): asking about
    more items would only store the same error, so the run stops and says why."""


FATAL_STATUS = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


class RetryableOutput(Exception):
    """A 200 response we cannot use (malformed body, empty content): worth asking again."""


def _content(response) -> str:
    try:
        choice = response.choices[0]
        content = choice.message.content
    except (AttributeError, IndexError, TypeError, KeyError) as exc:
        raise RetryableOutput(f"malformed response body ({type(exc).__name__}: {exc})") from None
    if content is None or not str(content).strip():
        raise RetryableOutput("empty content")
    return str(content)


def verdict_probability(response, verdict: str | None) -> float | None:
    """P(verdict) from the logprob of the last output token that spells the verdict."""
    if verdict is None:
        return None
    try:
        tokens = response.choices[0].logprobs.content
    except (AttributeError, IndexError, TypeError):
        return None
    if not tokens:
        return None
    target = verdict.lower()
    for token in reversed(tokens):
        text = (getattr(token, "token", "") or "").strip().strip("*").lower()
        if text and target.startswith(text):  # a multi-token label ends here with its first piece
            logprob = getattr(token, "logprob", None)
            return math.exp(logprob) if logprob is not None else None
    return None


def _judgment(job: Job, config: JudgeConfig, **values) -> NewJudgment:
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


def judgment_from_response(job: Job, config: JudgeConfig, response, latency_ms: float | None) -> NewJudgment:
    raw = _content(response)
    verdict, correct = parse_output(job.template, job.item, raw)
    usage = getattr(response, "usage", None)
    return _judgment(
        job, config,
        status=verdict.status,
        raw_output=raw,
        verdict=verdict.value,
        unparsed_reason=verdict.reason,
        correct=correct,
        model_reported=getattr(response, "model", None),
        confidence=verdict_probability(response, verdict.value) if config.logprobs else None,
        latency_ms=latency_ms,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
    )


def request_body(job: Job, config: JudgeConfig) -> dict:
    body: dict = {"model": config.model, "messages": job.prompt.messages(), "temperature": config.temperature}
    if config.max_tokens is not None:
        body["max_tokens"] = config.max_tokens
    if config.logprobs:
        body.update(logprobs=True, top_logprobs=5)
    return body


def make_client(config: JudgeConfig) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key(),
        timeout=config.timeout,
        max_retries=config.max_retries,
    )


async def _ask(client: openai.AsyncOpenAI, job: Job, config: JudgeConfig) -> NewJudgment:
    """One item: the client retries HTTP faults itself; unusable 200s are retried here."""
    body = request_body(job, config)
    started = time.perf_counter()

    def failed(error: str) -> NewJudgment:
        return _judgment(job, config, status="error", error=error, latency_ms=(time.perf_counter() - started) * 1000)

    last_error = ""
    for attempt in range(config.max_retries + 1):
        try:
            response = await client.chat.completions.create(**body)
            return judgment_from_response(job, config, response, (time.perf_counter() - started) * 1000)
        except RetryableOutput as exc:
            last_error = str(exc)
        except FATAL_STATUS as exc:
            hint = {401: f"check the key in ${config.api_key_env}", 403: "the key has no access to this model",
                    404: f"the server has no model {config.model!r} (or the base URL is wrong)"}.get(exc.status_code, "")
            raise JudgeRefused(config.redact(
                f"HTTP {exc.status_code} from {redact_url(str(client.base_url))}: {_short(exc)}; {hint}")) from None
        except openai.APIStatusError as exc:
            return failed(f"HTTP {exc.status_code} after retries: {_short(exc)}")
        except openai.APITimeoutError:
            return failed(f"timed out after {config.timeout:g}s (and retries)")
        except openai.APIConnectionError as exc:
            return failed(f"connection failed after retries: {_short(exc)}")
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
            last_error = f"malformed response body ({_short(exc)})"
        if attempt < config.max_retries:
            await asyncio.sleep(config.backoff * (2**attempt) * (0.5 + random.random()))
    return failed(f"{last_error} after {config.max_retries + 1} attempts")


def _short(exc: Exception) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= 200 else text[:200] + "…"


async def run_jobs(
    store: Store,
    jobs: list[Job],
    config: JudgeConfig,
    summary: RunSummary,
    on_done: Callable[[], None] | None = None,
) -> RunSummary:
    """Ask for every job with `config.concurrency` requests in flight; store each judgment as
    it arrives, so an interruption keeps everything completed. Each job is claimed in the store
    before it is asked, so concurrent runs of one judge split the jobs; a job another run has
    answered or holds counts in `summary.skipped_done`."""
    client = make_client(config)
    holder = uuid.uuid4().hex  # this run's name on its claims
    # a claim outlasts the longest a request can take (the client's retries within each attempt of _ask)
    claim_seconds = config.timeout * (config.max_retries + 1) ** 2 + 60
    queue: asyncio.Queue[Job] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)

    async def worker() -> None:
        while True:
            try:
                job = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            if store.claim_judging(job.item.id, job.key, job.sample, holder, seconds=claim_seconds,
                                   judged_after=job.judged_after) != "claimed":
                summary.skipped_done += 1
                if on_done:
                    on_done()
                continue
            judgment = await _ask(client, job, config)
            with store.transaction():
                store.add_judgments([judgment])
                store.release_judging(job.item.id, job.key, job.sample, holder)
            summary.count(job.item, judgment.status, judgment.error)
            if on_done:
                on_done()

    try:
        await asyncio.gather(*(worker() for _ in range(max(1, min(config.concurrency, len(jobs) or 1)))))
    finally:
        store.release_all_judging(holder)
        await client.close()
    return summary


# -- batch files -------------------------------------------------------------------------------


def export_batch(jobs: Iterable[Job], config: JudgeConfig, path: Path) -> int:
    """Write OpenAI Batch API JSONL (also what vLLM's run-batch reads)."""
    n = 0
    with Path(path).open("w", encoding="utf-8") as out:
        for job in jobs:
            line = {"custom_id": job.custom_id, "method": "POST", "url": "/v1/chat/completions", "body": request_body(job, config)}
            out.write(json.dumps(line, ensure_ascii=False) + "\n")
            n += 1
    return n


class _Obj:
    """Attribute access over a batch result's JSON, shaped like the client's response objects."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        if not isinstance(self._data, dict) or name not in self._data:
            raise AttributeError(name)
        return _wrap(self._data[name])


def _wrap(value):
    if isinstance(value, dict):
        return _Obj(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def import_batch(
    store: Store, templates: TemplateSet, config: JudgeConfig, path: Path, summary: RunSummary, *, force: bool = False
) -> RunSummary:
    """Store the results of a batch exported with the same configuration. Lines for items
    already judged by it are skipped unless `force`; a line from another configuration is an
    error naming the line."""
    path = Path(path)
    jobs = {job.custom_id: job for job in plan_jobs(store, templates, config, force=True)}
    done: dict[str, dict[int, set[int]]] = {}
    judgments: list[NewJudgment] = []
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise BatchFileError(f"{path}: {exc.strerror or exc}") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            try:
                record = json.loads(line.decode("utf-8"))
                custom_id = record["custom_id"]
            except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
                raise BatchFileError(f"{where}: not a batch result line ({exc})") from None
            job = jobs.get(custom_id)
            if job is None:
                raise BatchFileError(
                    f"{where}: custom_id {custom_id} matches no item for judge {config.name} with these "
                    "parameters (was the batch exported with another --model, template or parameters?)"
                )
            if not force:
                already = done.setdefault(job.key, store.judged_samples(job.key))
                if job.sample in already.get(job.item.id, ()):
                    summary.skipped_done += 1
                    continue
            response = (record.get("response") or {})
            status_code = response.get("status_code")
            if record.get("error") or status_code != 200:
                error = record.get("error") or {"status_code": status_code}
                judgment = _judgment(job, config, status="error", error=f"batch error: {json.dumps(error)[:200]}")
            else:
                try:
                    judgment = judgment_from_response(job, config, _wrap(response.get("body")), None)
                except RetryableOutput as exc:
                    judgment = _judgment(job, config, status="error", error=f"batch result: {exc}")
            judgments.append(judgment)
            summary.count(job.item, judgment.status, judgment.error)
    store.add_judgments(judgments)
    return summary


# -- rule judge --------------------------------------------------------------------------------


def run_rule_judge(
    store: Store, templates: TemplateSet, *, task: str | None = None, force: bool = False, limit: int | None = None
) -> RunSummary:
    """SuperGLUE offline: parse each item's `response` (the model under test) with the task's
    rules and compare with the gold label. The verdict is the parsed answer; `correct` says
    whether it matches."""
    summary = RunSummary()
    judgments = []
    done: dict[str, set[int]] = {}
    for item in store.iter_items(task=task):
        if not item.task.startswith("superglue/") or "response" not in item.fields:
            continue
        template = templates.for_task(item.task, item.lang)
        key = judge_key(RULE_JUDGE, None, template.version, RULE_PARAMS)
        if key not in done:
            done[key] = set() if force else store.judged_item_ids(key)
        if item.id in done[key]:
            summary.skipped_done += 1
            continue
        judgment = judgment_from_output(item.id, item, templates, RULE_JUDGE, item.fields["response"], params=RULE_PARAMS)
        judgments.append(judgment)
        summary.count(item, judgment.status)
        if limit is not None and len(judgments) >= limit:
            break
    store.add_judgments(judgments)
    return summary
