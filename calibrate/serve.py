"""`calibrate serve`: the annotation app in a browser (textual-serve), behind a login.

Without a login, any web page open in the annotator's browser, or anyone on the network, could
label as the annotator. So, like Jupyter, the server makes a random token and prints the URL
with it (`…/?token=…`); every request without a valid token (in the query, or in the cookie set
on the first visit) gets 403, whatever the route: `require_login` is the one check, applied by
a middleware to every route and callable by any handler. A websocket from another Origin is
refused. Each browser tab is a named annotator (asked when the tab connects, or fixed by
`--annotators FILE`, which gives each person their own token) and its own session: tabs never
share an item and undo reverts only that tab's decisions. Binding anything but loopback prints
a warning. The browser plays an item's audio through the audio route (calibrate.audio_route),
behind the same login.

A tab is an app process, and a tab that is gone must not leave one behind: each runs in its own
process group, and when its websocket closes (or the server stops), it is asked to quit, then
terminated, then killed with everything it started (an audio player too), and reaped. An app
whose person's decision, undo or note waits for another writer has said so (TabDriver.unsaved),
and is given as long as a closed terminal's app to save it (LEFT_WAIT) before it is terminated;
Ctrl-C again while the server stops cuts that wait short, and the log names what was not saved.
Once it is reaped, the items its session held are given back (an app that was killed could not
give them back itself), so they come back at once, as a terminal app's do when it starts again.
A server that is killed cannot end its tabs: each tab's app leaves by itself when its input ends
(calibrate.tui.tab_driver).
`--max-connections` counts these processes until they are reaped, so it holds however a tab
ends. What a browser sends is bounded: a message of at most `MAX_MESSAGE` bytes (a larger one
closes the tab), a terminal of at most `MAX_COLUMNS` x `MAX_ROWS`, malformed messages ignored,
and input the app does not take within `SEND_TIMEOUT` ends the tab. The access log never shows
a token (`token=***`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import html
import ipaddress
import json
import logging
import os
import re
import secrets
import signal
import socket
import tomllib
from dataclasses import dataclass
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from calibrate.audio import AUDIO_ROUTE
from calibrate.audio_route import audio_handler
from calibrate.model import LEFT_WAIT, UNSAVED_META, CalibrateError, lease_holder
from calibrate.names import MAX_NAME, AnnotatorNameError, annotator_name

log = logging.getLogger("calibrate.serve")

TOKEN_COOKIE = "calibrate_token"
MIN_TOKEN = 16
MAX_MESSAGE = 64 * 1024  # bytes in one websocket message: keys and pastes, never megabytes
MAX_COLUMNS, MAX_ROWS = 500, 200  # beyond any screen; a bigger terminal only costs memory
SEND_TIMEOUT = 30.0  # seconds the app may leave its input unread before its tab is ended
QUIT_GRACE = 3.0  # seconds an app has to quit when asked, then again after SIGTERM, before SIGKILL
TAB_DRIVER = "calibrate.tui.tab_driver:TabDriver"  # the app's Textual driver (TEXTUAL_DRIVER): it leaves when serve is gone


class ServeError(CalibrateError):
    """A serve setting that cannot work (an annotators file that does not make sense)."""


@dataclass(frozen=True)
class Login:
    token: str
    annotator: str | None  # None: the shared token; whoever connects says who they are


class Logins:
    """Who may connect: one random shared token (each tab names its annotator), or one token
    per person from an annotators file."""

    def __init__(self, people: dict[str, str] | None = None):
        self.by_token: dict[str, str | None] = dict(people) if people else {secrets.token_urlsafe(32): None}

    @classmethod
    def from_file(cls, path: Path) -> Logins:
        """A TOML file of `name = "token"` lines (a token per person, at least 16 characters)."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ServeError(f"{path}: {exc}") from None
        people: dict[str, str] = {}
        for name, token in data.get("annotators", data).items():
            if not isinstance(token, str) or len(token) < MIN_TOKEN:
                raise ServeError(f"{path}: the token of {name!r} must be text of at least {MIN_TOKEN} characters")
            if token in people:
                raise ServeError(f"{path}: {name!r} and {people[token]!r} have the same token")
            try:
                people[token] = annotator_name(name, str(path))
            except AnnotatorNameError as exc:
                raise ServeError(str(exc)) from None
        if not people:
            raise ServeError(f"{path}: no annotators (write name = \"token\" lines)")
        return cls(people)

    def check(self, request: web.Request) -> Login:
        token = request.query.get("token") or request.cookies.get(TOKEN_COOKIE) or ""
        for known, annotator in self.by_token.items():
            if hmac.compare_digest(token.encode(), known.encode()):
                return Login(known, annotator)
        raise web.HTTPForbidden(text="calibrate: open the address `calibrate serve` printed (…/?token=…)\n")

    def urls(self, base: str) -> list[tuple[str | None, str]]:
        """(annotator or None, the URL to open) per token."""
        return [(annotator, f"{base}/?token={token}") for token, annotator in self.by_token.items()]


LOGINS = web.AppKey("logins", Logins)


def require_login(request: web.Request) -> Login:
    """The login of a request, or 403: the one token check every route goes through."""
    return request.app[LOGINS].check(request)


def same_origin(request: web.Request) -> bool:
    """A browser sends Origin with every websocket; it must be this server's own address."""
    origin = request.headers.get("Origin")
    return origin is None or origin == f"{request.scheme}://{request.host}"


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to `host`:`port` and listening (port 0: any free port; its number is
    `getsockname()[1]`), so that the URL printed is one that answers; ServeError naming the
    address when it cannot be bound (in use, not this machine's, not resolvable)."""
    try:
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
        return socket.create_server(address, family=family, backlog=128)
    except OSError as exc:
        hint = "give another --port (0: any free port)" if exc.errno == errno.EADDRINUSE else "check --host and --port"
        reason = os.strerror(exc.errno) if exc.errno and not isinstance(exc, socket.gaierror) else str(exc)
        raise ServeError(f"cannot listen on {url_host(host)}:{port}: {reason}; {hint}") from None


def url_host(host: str) -> str:
    """The host of the URL to print for a server bound to `host`: the machine's host name when
    it listens on every address (0.0.0.0, ::), which a teammate can open and those cannot; an
    IPv6 address in brackets."""
    if host in ("0.0.0.0", "::", ""):
        host = socket.gethostname()
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@web.middleware
async def login_middleware(request: web.Request, handler):
    login = require_login(request)
    response = await handler(request)
    if request.query.get("token") and request.cookies.get(TOKEN_COOKIE) != login.token:
        response.set_cookie(TOKEN_COOKIE, login.token, httponly=True, samesite="Strict", path="/")
    return response


NAME_FORM = """<!doctype html><html><head><meta charset="utf-8"><title>calibrate</title></head>
<body style="font-family:system-ui,sans-serif;background:#0c181f;color:#eee;display:flex;justify-content:center;padding-top:20vh">
<form method="get" action="/"><h2>calibrate</h2><p>{problem}Who is labelling in this tab?</p>
<input name="annotator" autofocus maxlength="{max_name}" required>
<button type="submit">start</button></form></body></html>
"""


_TOKEN_IN_URL = re.compile(r"(token=)[^&\s\"']+")


class HideTokens(logging.Filter):
    """Rewrites access-log lines (request line, Referer) so that no token is shown."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = _TOKEN_IN_URL.sub(r"\1***", record.getMessage())
        record.args = ()
        for name, value in list(record.__dict__.items()):
            if isinstance(value, str) and "token=" in value:
                setattr(record, name, _TOKEN_IN_URL.sub(r"\1***", value))
        return True


def terminal_size(width, height) -> tuple[int, int] | None:
    """(columns, rows) clamped to 1..MAX_COLUMNS x 1..MAX_ROWS, or None if not two whole numbers."""
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (width, height)):
        return None
    return min(max(width, 1), MAX_COLUMNS), min(max(height, 1), MAX_ROWS)


class TabProcess(AppService):
    """textual-serve's app process, run without a shell in its own process group with the
    tab's driver (TAB_DRIVER), and ended for sure: `stop` asks it to quit, then terminates, then
    kills the group, and reaps it; an app that says its person's action waits to be saved
    (`unsaved`) is given the time to save it first."""

    def __init__(self, args: list[str], *, hurry: asyncio.Event, **options):
        """`hurry`: set when serve is to stop without waiting for what apps save."""
        super().__init__(" ".join(args), **options)
        self.args = args
        self.hurry = hurry
        self.unsaved: str | None = None  # what the app last said waits for another writer (TabDriver.unsaved)

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        return {**super()._build_environment(width=width, height=height), "TEXTUAL_DRIVER": TAB_DRIVER}

    async def run(self) -> None:
        """Relay the app's output to the browser until it ends, then close the tab's websocket,
        which ends the tab (`_end_tab`): textual-serve closes it only when the app says it is
        leaving, which an app that was killed cannot."""
        await super().run()
        await self.remote_close()

    async def on_data(self, payload: bytes) -> None:
        """Relay the app's output to the browser; once the tab is closed, drop it: the app's
        output is still read to its end, for what the app tells serve (`on_meta`)."""
        with contextlib.suppress(ConnectionResetError):
            await super().on_data(payload)

    async def on_meta(self, data: bytes) -> None:
        meta = json.loads(data)
        if meta.get("type") == UNSAVED_META:
            self.unsaved = None if meta.get("what") is None else str(meta["what"])
            return
        with contextlib.suppress(ConnectionResetError):
            await super().on_meta(data)

    async def _open_app_process(self, width: int = 80, height: int = 24):
        self._process = await asyncio.create_subprocess_exec(
            *self.args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._build_environment(width=width, height=height),
            start_new_session=True,
        )
        self._stdin = self._process.stdin
        return self._process

    async def send_within(self, sending) -> bool:
        """Await one send to the app; False when the app has not taken it within SEND_TIMEOUT."""
        try:
            return await asyncio.wait_for(sending, SEND_TIMEOUT) is not False
        except TimeoutError:
            return False

    async def stop(self) -> None:
        """End the app: ask it to quit and give it QUIT_GRACE seconds, or, if its person's
        action waits for another writer (`unsaved`), up to LEFT_WAIT more (as long as a closed
        terminal's app waits) unless `hurry` is set; then terminate it, then kill its group.
        What it had not saved when it ended is named in the log."""
        process = self._process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.send_meta({"type": "quit"}), QUIT_GRACE)
            if not await self._ends_within(QUIT_GRACE) and self.unsaved is not None:
                log.warning("%s waits for another writer: its tab's app has up to %g s to save it", self.unsaved, LEFT_WAIT)
                await self._ends_within(LEFT_WAIT, self.hurry)
            for sent in (signal.SIGTERM, signal.SIGKILL):
                if process.returncode is not None:
                    break
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sent)
                await self._ends_within(QUIT_GRACE)
            await process.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever it started and left behind
        if self._task is not None:
            with contextlib.suppress(TimeoutError):  # the app's output read to its end: what it said last
                await asyncio.wait_for(asyncio.shield(self._task), QUIT_GRACE)
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self.unsaved is not None:
            log.error("not saved: %s (another writer held the database until its tab's app ended)", self.unsaved)

    async def _ends_within(self, seconds: float, hurry: asyncio.Event | None = None) -> bool:
        """Whether the app has ended within `seconds` (sooner if `hurry` is set)."""
        waits = [asyncio.ensure_future(self._process.wait())]
        if hurry is not None:
            waits.append(asyncio.ensure_future(hurry.wait()))
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        for waiting in waits:
            waiting.cancel()
        return self._process.returncode is not None


class CalibrateServer(Server):
    """textual-serve's server with the login, one app process per tab run as that tab's
    annotator, the Origin check and a connection limit."""

    def __init__(self, app_args: list[str], *, host: str, port: int, logins: Logins, max_connections: int,
                 annotator: str | None = None, db_path: str | None = None, audio_root: Path | None = None):
        super().__init__(" ".join(app_args), host=host, port=port, title="calibrate")
        self.app_args = app_args
        self.db_path, self.audio_root = db_path, audio_root
        self.logins = logins
        self.max_connections = max_connections
        self.annotator = annotator  # every tab is this annotator (the --annotator flag), unless a token says
        self.tickets: dict[str, tuple[str, str]] = {}  # tab id -> (token, annotator), until the tab connects
        # tab id -> its app, its websocket and its session's lease holder
        self.tabs: dict[str, tuple[TabProcess, web.WebSocketResponse, str]] = {}
        self._endings: dict[str, asyncio.Task] = {}  # tab id -> the task ending it
        self.stopping = False  # Ctrl-C (or SIGTERM) was received: the server stops (`request_exit`)
        self.hurry = asyncio.Event()  # received again: it stops without waiting for what the tabs' apps save

    def serve(self, listening: socket.socket | None = None, debug: bool = False) -> None:
        """Serve until Ctrl-C, on `listening` (from `listening_socket`) when given, else binding
        the host and port itself."""
        if listening is None:
            return super().serve(debug)
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
            loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        web.run_app(self._make_app(), sock=listening, handle_signals=False, loop=loop, print=lambda *args: None)

    def request_exit(self) -> None:
        """Ctrl-C or SIGTERM: stop, ending every tab (`on_shutdown`), whose app is given the time
        to save what its person did that waits for another writer (`TabProcess.stop`); again:
        stop without waiting for that (the log names what was not saved)."""
        if self.stopping:
            self.hurry.set()
            return
        self.stopping = True
        super().request_exit()

    @property
    def connections(self) -> int:
        """Tabs whose app process has not been reaped yet (what --max-connections limits)."""
        return len(self.tabs)

    def initialize_logging(self) -> None:
        super().initialize_logging()
        logging.getLogger("aiohttp.access").addFilter(HideTokens())

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[login_middleware])
        app[LOGINS] = self.logins
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws/{tab}", self.handle_websocket, name="websocket"),
            web.get(AUDIO_ROUTE, audio_handler(self.find_clip), name="audio"),
            web.static("/static", self.statics_path, name="static"),
        ])
        app.on_startup.append(self.on_startup)
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def on_shutdown(self, app: web.Application) -> None:
        """The server stops: every tab's process ends (reaped) and its websocket closes."""
        if waiting := sum(process.unsaved is not None for process, _, _ in self.tabs.values()):
            log.warning("stopping: %d tab(s) wait for another writer to save what their people did, for up to %g s; "
                        "Ctrl-C again stops at once, and that is not saved", waiting, LEFT_WAIT)
        await asyncio.gather(*(self._end_tab(tab) for tab in list(self.tabs)), return_exceptions=True)

    def find_clip(self, item_id: int, position: int) -> Path | None:
        """The file of one stored clip (under --audio-root when given), or None."""
        from calibrate.store import Store

        if self.db_path is None:
            return None
        store = Store(self.db_path, read_only=True)
        try:
            clips = store.audio_by_item(item_id).get(item_id, [])
        finally:
            store.close()
        if not 0 <= position < len(clips) or not clips[position].usable:
            return None
        clip = clips[position] if self.audio_root is None else clips[position].moved_to(self.audio_root)
        return clip.file

    async def on_startup(self, app: web.Application) -> None:
        """The URLs are printed by the command; textual-serve's banner would show the command line."""

    def app_command(self, tab: str, annotator: str) -> list[str]:
        return [*self.app_args, "--annotator", annotator, "--tab", tab]

    async def handle_index(self, request: web.Request) -> web.Response:
        login: Login = require_login(request)
        wanted = login.annotator or self.annotator or request.query.get("annotator")
        if wanted is None:
            return web.Response(text=NAME_FORM.format(problem="", max_name=MAX_NAME), content_type="text/html")
        try:
            annotator = login.annotator or annotator_name(wanted)
        except AnnotatorNameError as exc:
            problem = html.escape(str(exc)) + "<br>"
            return web.Response(text=NAME_FORM.format(problem=problem, max_name=MAX_NAME), content_type="text/html",
                                status=400)
        if self.connections >= self.max_connections:  # said on the page: a refused websocket shows no reason
            return web.Response(text=self._full_text(), content_type="text/plain", status=503)
        tab = secrets.token_urlsafe(12)
        self.tickets[tab] = (login.token, annotator)
        scheme = "wss" if request.secure else "ws"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{scheme}://{request.host}/ws/{tab}",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": f"calibrate · {annotator}"},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    def _full_text(self) -> str:
        return (f"calibrate: {self.max_connections} tabs are connected already (serve --max-connections "
                f"{self.max_connections}): close one of them, then reload this page\n")

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        login: Login = require_login(request)
        if not same_origin(request):
            raise web.HTTPForbidden(text="calibrate: websocket from another origin refused\n")
        ticket = self.tickets.get(request.match_info["tab"])
        if ticket is None or not hmac.compare_digest(ticket[0], login.token):
            raise web.HTTPForbidden(text="calibrate: unknown tab; reload the page\n")
        if self.connections >= self.max_connections:
            raise web.HTTPServiceUnavailable(text=self._full_text())
        tab = request.match_info["tab"]
        del self.tickets[tab]
        _, annotator = ticket
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        app = TabProcess(self.app_command(tab, annotator), hurry=self.hurry, write_bytes=websocket.send_bytes,
                         write_str=websocket.send_str, close=websocket.close,
                         download_manager=self.download_manager, debug=self.debug)
        self.tabs[tab] = (app, websocket, lease_holder(annotator, tab))
        try:
            await websocket.prepare(request)
            await app.start(*terminal_size(to_int(request.query.get("width", "80"), 80),
                                           to_int(request.query.get("height", "24"), 24)))
            await self._process_messages(websocket, app)
        except Exception as error:  # one tab's failure never stops the server
            log.error("a tab ended: %s: %s", type(error).__name__, error)
        finally:
            await asyncio.shield(self._end_tab(tab))  # aiohttp cancels the handler when the tab closes
        return websocket

    def _end_tab(self, tab: str) -> asyncio.Task:
        """The one task that ends a tab: its process ended and reaped, its websocket closed, and
        only then the tab uncounted; it runs to the end even if whoever awaits it is cancelled."""
        if tab not in self._endings:
            self._endings[tab] = asyncio.ensure_future(self._finish_tab(tab))
        return self._endings[tab]

    async def _finish_tab(self, tab: str) -> None:
        app, websocket, holder = self.tabs[tab]
        try:
            await app.stop()
            await asyncio.to_thread(self._give_back, holder)
            await websocket.close()
        finally:
            self.tabs.pop(tab, None)
            self._endings.pop(tab, None)

    def _give_back(self, holder: str) -> None:
        """Give back the items a tab's session held, once its app is reaped: an app that was
        killed (kill -9, out of memory) could not, and they would stay withheld until their leases
        end. An app that quit gave them back itself, and this only reads. Like the app's own end,
        it does not wait for another writer: then the items come back when their leases end."""
        from calibrate.store import DatabaseBusy, Store, stop_waiting

        if self.db_path is None:
            return
        try:
            store = Store(self.db_path)
            store.on_wait = stop_waiting
            try:
                store.release_all(holder)
            finally:
                store.close()
        except DatabaseBusy:
            log.warning("another writer holds the database: the items a tab held come back when their leases end")
        except CalibrateError as exc:
            log.warning("the items a tab held come back when their leases end: %s", exc)

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: TabProcess) -> None:
        """Forward what the browser sends to the tab's app: keys, resizes (clamped), focus; a
        malformed message is ignored, a message over MAX_MESSAGE or input the app leaves
        unread for SEND_TIMEOUT ends the tab."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                kind, *data = json.loads(message.data)
            except (ValueError, TypeError):
                continue
            if kind == "stdin" and data and isinstance(data[0], str):
                sent = app_service.send_bytes(data[0].encode("utf-8"))
            elif kind == "resize" and data and isinstance(data[0], dict):
                size = terminal_size(data[0].get("width"), data[0].get("height"))
                if size is None:
                    continue
                sent = app_service.set_terminal_size(*size)
            elif kind == "ping" and data and isinstance(data[0], str | int | float):
                await websocket.send_json(["pong", data[0]])
                continue
            elif kind in ("blur", "focus"):
                sent = app_service.blur() if kind == "blur" else app_service.focus()
            else:
                continue
            if not await app_service.send_within(sent):
                log.warning("tab's app took no input for %ss: ending it", SEND_TIMEOUT)
                return
