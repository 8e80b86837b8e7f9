"""A real HTTP server on 127.0.0.1 that speaks OpenAI's /v1/chat/completions, for tests and
benchmarks. Each test scripts it: verdict texts (bare ones too), 429s with retry-after, 5xx,
delays, garbage bodies, empty content (a thinking model's answer left in reasoning_content too),
missing logprobs, outputs cut at the token limit
(finish_reason "length"), another reported model, a server (or proxy) that streams its answer as
server-sent events though none was asked for (`Reply(sse=True)`), and a hostile server echoing the
credentials it was sent (`Reply(echo=True)`). Modes: `slots=1` serves one request at a time
(the others wait in its queue, as llama.cpp's server does) and counts the work done for clients
that had gone (abandoned); `rejects_temperature` answers 400 to a request with `temperature` or
`max_tokens`, as OpenAI's reasoning models do; `refused_url()` is an address where nothing
listens, `hanging_url()` one where a connection hangs. It counts requests, so a test can prove a resumed run repeats no call."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class Reply:
    """What the server does with one request."""

    text: str | None = "The answer is: yes."
    status: int = 200
    delay: float = 0.0
    headers: dict = field(default_factory=dict)
    raw_body: str | None = None  # sent as-is (malformed bodies)
    logprobs: list[tuple[str, float]] | None = None
    model: str = "fake-judge-v1"
    echo: bool = False  # put the request's credentials, in every form, in the content, model and error body
    finish_reason: str = "stop"  # "length": the output was cut at the token limit
    completion_tokens: int = 20
    sse: bool = False  # the answer as a stream of server-sent events, as OpenAI streams it
    reasoning: str | None = None  # the message's reasoning_content (a thinking model's thoughts, as vLLM and DeepSeek send)


class FakeOpenAI:
    def __init__(self, default: Reply | None = None, by_content: dict[str, Reply | list[Reply]] | None = None, *,
                 slots: int | None = None, newest_first: bool = False, rejects_temperature: bool = False):
        """`by_content` maps text in the user message to its reply; a list of replies answers
        successive requests for that text in turn (the last one repeating), e.g. to script
        the verdicts of repeated samples. With `slots`, at most that many requests are served
        at once (a reply's delay is its service time); the rest wait their turn, first come
        first served (`newest_first`: the last come first), and are served even if their
        client has gone."""
        self.default = default or Reply()
        self.by_content = by_content or {}
        self.slots = slots
        self.newest_first = newest_first
        self.rejects_temperature = rejects_temperature
        self.served = 0  # requests answered (after their service time)
        self.abandoned = 0  # of those, answered for a client that had already gone: wasted work
        self._slots: _Slots | None = None
        self._asked: dict[str, int] = {}
        self.script: deque[Reply] = deque()
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    # -- control -----------------------------------------------------------------------------

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def then(self, *replies: Reply) -> FakeOpenAI:
        self.script.extend(replies)
        return self

    @property
    def count(self) -> int:
        return len(self.requests)

    # -- server ------------------------------------------------------------------------------

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._completions)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        self._loop.run_until_complete(runner.setup())
        if self.slots:
            self._slots = _Slots(self.slots, self.newest_first)
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(runner.cleanup())
            left = asyncio.all_tasks(self._loop)  # requests still delayed when the test is done with the server
            for task in left:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self._loop.close()

    def _pick(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            if self.script:
                return self.script.popleft()
        user = body["messages"][-1]["content"]
        for needle, reply in self.by_content.items():
            if needle in user:
                if isinstance(reply, list):
                    with self._lock:
                        turn = self._asked[needle] = self._asked.get(needle, -1) + 1
                    return reply[min(turn, len(reply) - 1)]
                return reply
        return self.default

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.headers.append(dict(request.headers))
        if self.rejects_temperature and ("temperature" in body or "max_tokens" in body):
            with self._lock:
                self.requests.append(body)
            return web.json_response(reasoning_refusal(body), status=400)
        reply = self._pick(body)
        if reply.echo:
            reply = echoed(reply, request)
        async with self._slots or contextlib.nullcontext():
            if reply.delay:
                await asyncio.sleep(reply.delay)
            with self._lock:
                self.served += 1
                if request.transport is None or request.transport.is_closing():
                    self.abandoned += 1
        if reply.sse:
            return web.Response(text=streamed(reply), content_type="text/event-stream", headers=reply.headers)
        if reply.raw_body is not None:
            return web.Response(text=reply.raw_body, status=reply.status, content_type="application/json", headers=reply.headers)
        if reply.status != 200:
            error = {"error": {"message": f"scripted {reply.status}", "type": "server_error", "code": reply.status}}
            return web.json_response(error, status=reply.status, headers=reply.headers)
        return web.json_response(completion(body, reply), headers=reply.headers)


class _Slots:
    """At most `n` requests served at once; the others wait, served in the order they came, or
    the last come first (`newest_first`)."""

    def __init__(self, n: int, newest_first: bool):
        self.free, self.newest_first = n, newest_first
        self.waiting: list[asyncio.Future] = []

    async def __aenter__(self) -> None:
        if self.free:
            self.free -= 1
            return
        turn = asyncio.get_running_loop().create_future()
        self.waiting.append(turn)
        await turn

    async def __aexit__(self, *exc) -> None:
        if self.waiting:
            self.waiting.pop(-1 if self.newest_first else 0).set_result(None)
        else:
            self.free += 1


def echoed(reply: Reply, request: web.Request) -> Reply:
    """`reply` with everything secret in the request written back: the headers as sent, the
    Authorization value and its decoded Basic credentials, and the URL it was asked at."""
    authorization = request.headers.get("Authorization", "")
    scheme, _, value = authorization.partition(" ")
    try:
        decoded = base64.b64decode(value).decode() if scheme == "Basic" else value
    except (binascii.Error, UnicodeDecodeError):
        decoded = value
    echo = (f"headers {json.dumps(dict(request.headers))}; authorization {authorization}; value {value}; "
            f"decoded {decoded}; url {request.url}")
    text = None if reply.text is None else f"{echo}\n{reply.text}"
    raw_body = json.dumps({"error": {"message": f"refused {echo}", "type": "server_error"}}) if reply.status != 200 else None
    return dataclasses.replace(reply, text=text, model=f"{reply.model} {authorization} {decoded}", raw_body=raw_body,
                               echo=False)


@contextlib.contextmanager
def refused_url():
    """A loopback address where nothing listens, while in use: every connection is refused. Its
    port stays bound by a socket that never listens, so no other process can take it meanwhile
    (a port merely released could be bound by anything on the machine)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{probe.getsockname()[1]}/v1"


@contextlib.contextmanager
def hanging_url():
    """A loopback address where a connection hangs, while in use: a listening socket that never
    accepts, its queue filled first, so the kernel drops every further connection's first packet
    (as an overloaded server's full queue, or a firewall dropping packets, does)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        fillers = [socket.socket() for _ in range(4)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                filler.connect_ex(listener.getsockname())
            yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        finally:
            for filler in fillers:
                filler.close()


def reasoning_refusal(body: dict) -> dict:
    """OpenAI's 400 body for a reasoning model asked with temperature or max_tokens."""
    name = "temperature" if "temperature" in body else "max_tokens"
    message = (f"Unsupported value: 'temperature' does not support {body.get('temperature')} with this model. "
               "Only the default (1) value is supported." if name == "temperature" else
               "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.")
    return {"error": {"message": message, "type": "invalid_request_error", "param": name,
                      "code": "unsupported_value" if name == "temperature" else "unsupported_parameter"}}


def streamed(reply: Reply) -> str:
    """The reply's text as OpenAI's chat-completion chunks, one event per word, then [DONE]."""
    events = [{"object": "chat.completion.chunk", "model": reply.model,
               "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]}
              for word in (reply.text or "").split(" ")]
    return "".join(f"data: {json.dumps(event)}\n\n" for event in events) + "data: [DONE]\n\n"


def completion(body: dict, reply: Reply) -> dict:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": reply.finish_reason}
    if reply.reasoning is not None:
        choice["message"]["reasoning_content"] = reply.reasoning
    if body.get("logprobs") and reply.logprobs is not None:
        choice["logprobs"] = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []} for t, lp in reply.logprobs]}
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [choice],
        "usage": {"prompt_tokens": 100, "completion_tokens": reply.completion_tokens,
                  "total_tokens": 100 + reply.completion_tokens},
    }


if __name__ == "__main__":  # a server in its own process, for benchmarks: DELAY [SLOTS]
    import json
    import sys

    delay = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    slots = int(sys.argv[2]) if len(sys.argv) > 2 else None
    with FakeOpenAI(Reply("Reasoning in a sentence or two.\nThe answer is: yes.", delay=delay), slots=slots) as served:
        print(served.port, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.readline()  # serve until the parent writes a line (or closes our stdin)
        # what the server saw, for the parent: requests received, answered, answered for nobody
        print(json.dumps({"requests": served.count, "served": served.served, "abandoned": served.abandoned}), flush=True)
