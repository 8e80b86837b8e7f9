"""A real HTTP server on 127.0.0.1 that speaks OpenAI's /v1/chat/completions, for tests and
benchmarks. Each test scripts it: verdict texts, 429s with retry-after, 5xx, delays, garbage
bodies, empty content, missing logprobs, and a hostile server echoing the credentials it was
sent (`Reply(echo=True)`). It counts requests, so a test can prove a resumed run repeats no
call."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import json
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


class FakeOpenAI:
    def __init__(self, default: Reply | None = None, by_content: dict[str, Reply | list[Reply]] | None = None):
        """`by_content` maps text in the user message to its reply; a list of replies answers
        successive requests for that text in turn (the last one repeating), e.g. to script
        the verdicts of repeated samples."""
        self.default = default or Reply()
        self.by_content = by_content or {}
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
        runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._loop.run_until_complete(runner.cleanup())
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
        reply = self._pick(body)
        if reply.echo:
            reply = echoed(reply, request)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raw_body is not None:
            return web.Response(text=reply.raw_body, status=reply.status, content_type="application/json", headers=reply.headers)
        if reply.status != 200:
            error = {"error": {"message": f"scripted {reply.status}", "type": "server_error", "code": reply.status}}
            return web.json_response(error, status=reply.status, headers=reply.headers)
        return web.json_response(completion(body, reply), headers=reply.headers)


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


def completion(body: dict, reply: Reply) -> dict:
    choice: dict = {"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}
    if body.get("logprobs") and reply.logprobs is not None:
        choice["logprobs"] = {"content": [{"token": t, "logprob": lp, "bytes": None, "top_logprobs": []} for t, lp in reply.logprobs]}
    return {
        "id": f"chatcmpl-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [choice],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


if __name__ == "__main__":  # a server in its own process, for benchmarks
    import sys

    delay = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    with FakeOpenAI(Reply("Reasoning in a sentence or two.\nThe answer is: yes.", delay=delay)) as served:
        print(served.port, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            sys.stdin.read()  # serve until the parent closes our stdin
