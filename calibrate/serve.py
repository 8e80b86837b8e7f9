"""`calibrate serve`: the annotation app in a browser (textual-serve), behind a login.

Without a login, any web page open in the annotator's browser, or anyone on the network, could
label as the annotator. So, like Jupyter, the server makes a random token and prints the URL
with it (`…/?token=…`); every request without a valid token (in the query, or in the cookie set
on the first visit) gets 403, whatever the route: `require_login` is the one check, applied by
a middleware to every route and callable by any handler. A websocket from another Origin is
refused. Each browser tab is a named annotator (asked when the tab connects, or fixed by
`--annotators FILE`, which gives each person their own token) and its own session: tabs never
share an item and undo reverts only that tab's decisions. Connections are limited, and binding
anything but loopback prints a warning. The browser plays an item's audio through the audio
route (calibrate.audio_route), behind the same login.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import logging
import secrets
import shlex
import socket
import tomllib
from dataclasses import dataclass
from pathlib import Path

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from calibrate.audio import AUDIO_ROUTE
from calibrate.audio_route import audio_handler
from calibrate.escape import safe
from calibrate.model import CalibrateError

log = logging.getLogger("calibrate.serve")

TOKEN_COOKIE = "calibrate_token"
MIN_TOKEN = 16
MAX_NAME = 64


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
            people[token] = annotator_name(name, str(path))
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


def annotator_name(value: str | None, where: str = "name") -> str:
    """A name typed at connect (or from the annotators file): non-empty, short, printable."""
    name = (value or "").strip()
    if not name or len(name) > MAX_NAME or safe(name) != name or "\n" in name or "@" in name:
        raise ServeError(f"{where}: an annotator name is 1-{MAX_NAME} printable characters without '@'")
    return name


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


class CalibrateServer(Server):
    """textual-serve's server with the login, one app process per tab run as that tab's
    annotator, the Origin check and a connection limit."""

    def __init__(self, app_args: list[str], *, host: str, port: int, logins: Logins, max_connections: int,
                 annotator: str | None = None, db_path: str | None = None, audio_root: Path | None = None):
        super().__init__(shlex.join(app_args), host=host, port=port, title="calibrate")
        self.app_args = app_args
        self.db_path, self.audio_root = db_path, audio_root
        self.logins = logins
        self.max_connections = max_connections
        self.annotator = annotator  # every tab is this annotator (the --annotator flag), unless a token says
        self.tickets: dict[str, tuple[str, str]] = {}  # tab id -> (token, annotator), until the tab connects
        self.connections = 0

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
        return app

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

    def app_command(self, tab: str, annotator: str) -> str:
        return shlex.join([*self.app_args, "--annotator", annotator, "--tab", tab])

    async def handle_index(self, request: web.Request) -> web.Response:
        login: Login = require_login(request)
        wanted = login.annotator or self.annotator or request.query.get("annotator")
        if wanted is None:
            return web.Response(text=NAME_FORM.format(problem="", max_name=MAX_NAME), content_type="text/html")
        try:
            annotator = login.annotator or annotator_name(wanted)
        except ServeError as exc:
            problem = html.escape(str(exc)) + "<br>"
            return web.Response(text=NAME_FORM.format(problem=problem, max_name=MAX_NAME), content_type="text/html",
                                status=400)
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

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        login: Login = require_login(request)
        if not same_origin(request):
            raise web.HTTPForbidden(text="calibrate: websocket from another origin refused\n")
        ticket = self.tickets.get(request.match_info["tab"])
        if ticket is None or not hmac.compare_digest(ticket[0], login.token):
            raise web.HTTPForbidden(text="calibrate: unknown tab; reload the page\n")
        if self.connections >= self.max_connections:
            raise web.HTTPServiceUnavailable(text=f"calibrate: {self.max_connections} tabs are connected already\n")
        tab = request.match_info["tab"]
        del self.tickets[tab]
        _, annotator = ticket
        websocket = web.WebSocketResponse(heartbeat=15)
        self.connections += 1
        app_service: AppService | None = None
        try:
            await websocket.prepare(request)
            app_service = AppService(
                self.app_command(tab, annotator), write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                close=websocket.close, download_manager=self.download_manager, debug=self.debug,
            )
            await app_service.start(to_int(request.query.get("width", "80"), 80), to_int(request.query.get("height", "24"), 24))
            await self._process_messages(websocket, app_service)
        except Exception as error:  # one tab's failure never stops the server
            log.exception(error)
        finally:
            self.connections -= 1
            if app_service is not None:
                await app_service.stop()
        return websocket
