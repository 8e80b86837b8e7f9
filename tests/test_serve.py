"""`calibrate serve`: the login token, the Origin check, one annotator per tab, tabs apart; a
tab's process ends with its websocket, what a browser sends is bounded, tokens stay out of logs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer

from calibrate.serve import CalibrateServer, Logins, ServeError
from calibrate.session import AnnotationSession
from calibrate.store import Store
from tests.tui_helpers import rows


@pytest.fixture
async def served():
    async def start(logins: Logins | None = None, max_connections: int = 4, app_args: list[str] | None = None):
        server = CalibrateServer(app_args or ["calibrate", "annotate"], host="127.0.0.1", port=0,
                                 logins=logins or Logins(), max_connections=max_connections)
        client = TestClient(TestServer(await server._make_app()))
        await client.start_server()
        started.append(client)
        return server, client

    started: list[TestClient] = []
    yield start
    for client in started:
        await client.close()


def token_of(server: CalibrateServer) -> str:
    return next(iter(server.logins.by_token))


async def test_every_route_needs_the_token(served):
    server, client = await served()
    for path in ("/", "/static/js/textual.js", "/ws/anything", "/?token=wrong"):
        response = await client.get(path)
        assert response.status == 403, path
        assert "token" in await response.text()


async def test_the_token_opens_the_page_asks_the_name_and_sets_a_cookie(served):
    server, client = await served()
    token = token_of(server)
    form = await client.get(f"/?token={token}")
    assert form.status == 200 and "Who is labelling" in await form.text()
    assert (await client.get("/static/js/textual.js")).status == 200, "the cookie carries the login"
    page = await client.get("/", params={"annotator": "ana"})
    ws_url = re.search(r'ws://[^"]+/ws/([\w-]+)', await page.text())
    assert page.status == 200 and ws_url and server.tickets[ws_url.group(1)] == (token, "ana")
    bad = await client.get("/", params={"annotator": "ana\x1b]0;evil\x07"})
    assert bad.status == 400 and "printable" in await bad.text()


async def test_a_websocket_from_another_origin_or_an_unknown_tab_is_refused(served):
    server, client = await served()
    token = token_of(server)
    page = await client.get(f"/?token={token}&annotator=ana")
    tab = re.search(r"/ws/([\w-]+)", await page.text()).group(1)
    other = await client.get(f"/ws/{tab}", headers={"Origin": "http://evil.example", "Connection": "Upgrade",
                                                     "Upgrade": "websocket"})
    assert other.status == 403 and "origin" in await other.text()
    unknown = await client.get("/ws/not-a-tab", headers={"Origin": f"http://{client.host}:{client.port}"})
    assert unknown.status == 403
    assert tab in server.tickets, "a refused connection does not use up the tab"


async def test_an_annotators_file_gives_each_person_a_token(served, tmp_path):
    (tmp_path / "team.toml").write_text('ana = "ana-token-0123456789"\nbo = "bo-token-0123456789ab"\n')
    server, client = await served(Logins.from_file(tmp_path / "team.toml"))
    page = await client.get("/?token=bo-token-0123456789ab&annotator=ana")
    tab = re.search(r"/ws/([\w-]+)", await page.text()).group(1)
    assert server.tickets[tab][1] == "bo", "the token says who it is, not the form"
    assert server.app_command(tab, "bo")[-5:] == ["annotate", "--annotator", "bo", "--tab", tab]
    (tmp_path / "short.toml").write_text('ana = "short"\n')
    with pytest.raises(ServeError, match="at least 16 characters"):
        Logins.from_file(tmp_path / "short.toml")


def test_two_tabs_of_one_annotator_never_share_an_item_and_undo_their_own(demo_db, templates):
    store = Store(demo_db)
    first = AnnotationSession(store, templates, annotator="ana", tab="t1")
    second = AnnotationSession(Store(demo_db), templates, annotator="ana", tab="t2")
    one, two = first.start(), second.start()
    assert one.item.id != two.item.id
    first.decide("label", "yes")
    second.decide("label", "no")
    undone = first.undo()
    assert undone.item.id == one.item.id, "the first tab undoes its own decision, not the second tab's later one"
    assert store.current_label(two.item.id, "ana") == "no"


def test_binding_anything_but_loopback_warns(demo_db, monkeypatch):
    from calibrate.serve import is_loopback
    from tests.conftest import Calibrate

    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    class Bound:  # a socket said to be bound to 8123, so that nothing listens beyond loopback
        def getsockname(self):
            return ("0.0.0.0", 8123)

    monkeypatch.setattr("calibrate.serve.listening_socket", lambda host, port: Bound())
    monkeypatch.setattr(CalibrateServer, "serve", lambda self, listening: None)  # print, do not run
    monkeypatch.setattr("socket.gethostname", lambda: "annotation-box")
    out = Calibrate(demo_db)("serve", "--host", "0.0.0.0", "--port", "8123")
    assert "warning: binding 0.0.0.0" in out.output and "http://annotation-box:8123/?token=" in out.output
    assert "0.0.0.0:8123" not in out.output, "a URL nobody can open"
    assert "http://[::1]:8123/?token=" in Calibrate(demo_db)("serve", "--host", "::1", "--port", "8123").output
    assert "warning" not in Calibrate(demo_db)("serve").output


def test_serve_prints_the_port_it_listens_on_and_refuses_one_it_cannot(demo_db, monkeypatch):
    from tests.conftest import Calibrate

    served = []
    monkeypatch.setattr(CalibrateServer, "serve", lambda self, listening: served.append(listening.getsockname()[1])
                        or listening.close())
    out = Calibrate(demo_db)("serve", "--port", "0").output
    assert served and served[0] > 0 and f"http://127.0.0.1:{served[0]}/?token=" in out, "the real port, not 0"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        out = Calibrate(demo_db)("serve", "--port", str(port), ok=False)
    assert out.exit_code == 1 and f"Error: cannot listen on 127.0.0.1:{port}: Address already in use; give another " \
        "--port (0: any free port)" in " ".join(out.output.split())
    assert "token=" not in out.output and len(served) == 1, "no URL that does not answer"
    for port in ("99999", "-1"):
        out = Calibrate(demo_db)("serve", "--port", port, ok=False)
        assert out.exit_code == 2 and f"Invalid value for '--port': {port} is not in the range 0<=x<=65535" in out.output


# -- a tab's process, with stand-in apps ---------------------------------------------------------

STAND_IN = """
import json, os, signal, subprocess, sys, time
log = open(sys.argv[1], "a")
log.write(json.dumps({"pid": os.getpid(), "child": subprocess.Popen(["sleep", "600"]).pid}) + "\\n")
log.flush()
if sys.argv[2] == "stubborn":  # ignores quit and SIGTERM, never reads its input
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("__GANGLION__", flush=True)
    time.sleep(600)
print("__GANGLION__", flush=True)
stdin = sys.stdin.buffer
while header := stdin.read(5):  # textual-serve's packets: type, 4-byte length, payload
    payload = stdin.read(int.from_bytes(header[1:], "big"))
    log.write(json.dumps({"packet": header[:1].decode(), "payload": payload.decode()}) + "\\n")
    log.flush()
    if header[:1] == b"M" and json.loads(payload)["type"] == "quit":
        break
"""


def stand_in(tmp_path: Path, mode: str) -> tuple[list[str], Path]:
    """A stand-in app command (well-behaved or stubborn) that logs what it receives, and its log."""
    script, log = tmp_path / "app.py", tmp_path / f"{mode}.log"
    script.write_text(STAND_IN)
    return [sys.executable, str(script), str(log), mode], log


def logged(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not reaped, counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


async def open_tab(client, server, **query):
    page = await client.get(f"/?token={token_of(server)}&annotator=ana")
    tab = re.search(r"/ws/([\w-]+)", await page.text()).group(1)
    return await client.ws_connect(f"/ws/{tab}", params=query, headers={"Origin": f"http://{client.host}:{client.port}"})


async def until(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.05)
    return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_stubborn_tab_process_is_killed_with_what_it_started_and_counted_until_reaped(served, tmp_path):
    app_args, log = stand_in(tmp_path, "stubborn")
    server, client = await served(max_connections=1, app_args=app_args)
    first = await open_tab(client, server)
    assert await until(lambda: logged(log), 20)
    pids = logged(log)[0]
    await first.close()
    await asyncio.sleep(0.2)
    assert alive(pids["pid"]), "it ignores quit and SIGTERM, so it takes a while to end"
    full = await client.get(f"/?token={token_of(server)}&annotator=ana")  # its process still counts
    assert full.status == 503 and "1 tabs are connected already (serve --max-connections 1): close one of them" \
        in await full.text(), "the page says why, where a refused websocket could not"
    assert await until(lambda: server.connections == 0, 20)
    assert not alive(pids["pid"]) and not alive(pids["child"]), "killed, with the process it started"
    second = await open_tab(client, server)
    assert server.connections == 1
    await second.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_sizes_are_bounded_and_a_huge_message_ends_the_tab(served, tmp_path):
    app_args, log = stand_in(tmp_path, "polite")
    server, client = await served(app_args=app_args)
    tab = await open_tab(client, server, width="1000000000", height="-3")
    assert await until(lambda: logged(log), 20)
    pid = logged(log)[0]["pid"]
    for message in (["resize", {"width": 10**9, "height": 10**9}], ["resize", {"width": "wide", "height": 5}],
                    ["stdin", 12], {"not": "a list"}, [], ["stdin", "q"]):
        await tab.send_str(json.dumps(message))
    await tab.send_str("not json")
    assert await until(lambda: len(logged(log)) >= 3, 20)
    packets = [(r["packet"], r["payload"]) for r in logged(log)[1:]]
    assert packets == [("M", json.dumps({"type": "resize", "width": 500, "height": 200})), ("D", "q")]
    with contextlib.suppress(ConnectionError):  # the server may drop the connection while it is still sent
        await tab.send_str(json.dumps(["stdin", "x" * (3 * 1024 * 1024)]))
        closing = await tab.receive(timeout=20)
        assert closing.type.name in ("CLOSE", "CLOSED", "ERROR")
    assert await until(lambda: server.connections == 0, 20) and not alive(pid)


def children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (zombies left out)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            fields = stat.read_text().rsplit(") ", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(stat.parent.name))
    return found


@dataclass
class RealServe:
    """`calibrate serve` run as a user runs it, and a browser that opened the address it printed."""

    process: subprocess.Popen
    browser: aiohttp.ClientSession | None = None
    lines: list[str] = field(default_factory=list)  # what it has printed, as it prints it (`read`)

    def read(self) -> None:
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def url(self) -> str:
        """The address it printed, with the token ("" until then)."""
        return next((line.strip() for line in self.lines if "token=" in line), "")

    @property
    def port(self) -> int:
        """The port it listens on, as its address says (it was given port 0: any free one)."""
        return urllib.parse.urlsplit(self.url).port

    async def open_tab(self, annotator: str) -> aiohttp.ClientWebSocketResponse:
        """A tab of `annotator`, once its app has started and drawn its first screen (then it
        sends nothing for a while: it waits for keys)."""
        page = await (await self.browser.get(f"{self.url}&annotator={annotator}")).text()
        tab = re.search(r"/ws/([\w-]+)", page).group(1)
        ws = await self.browser.ws_connect(f"ws://127.0.0.1:{self.port}/ws/{tab}", origin=f"http://127.0.0.1:{self.port}")
        first = await ws.receive(timeout=60)
        assert first.type == aiohttp.WSMsgType.BINARY, "the app has started and draws"
        async with asyncio.timeout(60):
            with contextlib.suppress(TimeoutError):
                while (await ws.receive(timeout=0.5)).type == aiohttp.WSMsgType.BINARY:
                    pass
        return ws


async def until_closed(ws: aiohttp.ClientWebSocketResponse, seconds: float) -> bool:
    """Whether the server closes `ws` within `seconds` (what it sends meanwhile is dropped)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while (await ws.receive()).type not in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                pass
            return True
    return False


@contextlib.asynccontextmanager
async def real_serve(db: Path):
    """A RealServe of `db`, stopped with Ctrl-C at the end (unless the test has killed it)."""
    process = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(db), "serve", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    served = RealServe(process)
    reader = threading.Thread(target=served.read, daemon=True)
    reader.start()
    try:
        assert await until(lambda: served.url or process.poll() is not None, 60) and served.url, served.output
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as served.browser:  # cookies of an IP
            for _ in range(100):  # the server is listening soon after printing
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    await served.browser.get(served.url)
                    break
                await asyncio.sleep(0.1)
            yield served
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        reader.join(timeout=30)


def holders(db: Path) -> list[tuple[int, str]]:
    """(item id, lease holder) of every lease."""
    return rows(db, "SELECT item_id, annotator FROM leases ORDER BY item_id")


def tab_of(app: int) -> str:
    """The tab id a tab's app process was started with (its --tab)."""
    args = Path(f"/proc/{app}/cmdline").read_bytes().split(b"\0")
    return args[args.index(b"--tab") + 1].decode()


def opened_by(path: Path) -> list[int]:
    """Processes that have the file `path` open."""
    found = []
    for fd in Path("/proc").glob("[0-9]*/fd/*"):
        with contextlib.suppress(OSError):
            if fd.readlink() == path:
                found.append(int(fd.parts[2]))
    return found


async def until_shown(ws: aiohttp.ClientWebSocketResponse, text: str, seconds: float) -> bool:
    """Whether the tab's app draws `text` within `seconds`."""
    drawn = b""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            while text.encode() not in drawn:
                message = await ws.receive()
                if message.type != aiohttp.WSMsgType.BINARY:
                    return False
                drawn = drawn[-len(text):] + message.data
            return True
    return False


@contextlib.contextmanager
def another_writer(db: Path):
    """Another writer (an import, a judge run) holding `db`'s write lock; yields its connection,
    which commits what it wrote (nothing) at the end unless the test ends its transaction itself."""
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        yield writer
    finally:
        if writer.in_transaction:
            writer.execute("COMMIT")
        writer.close()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_real_serve_ends_a_tabs_app_when_its_websocket_closes_and_logs_no_token(demo_db):
    async with real_serve(demo_db) as served:
        ws = await served.open_tab("ana")
        assert len(children(served.process.pid)) == 1
        await ws.send_str(json.dumps(["resize", {"width": 10**7, "height": 10**7}]))
        with contextlib.suppress(ConnectionError):  # the server may drop the connection while it is still sent
            await ws.send_str(json.dumps(["stdin", "x" * 3 * 1024 * 1024]))
            assert await until_closed(ws, 60)
        assert await until(lambda: not children(served.process.pid), 30), "the tab's app ended with its websocket"
    logged = served.output.split(served.url, 1)[1]  # what it printed after the address
    assert "token=***" in logged, "requests are logged, the token blanked"
    assert served.url.split("token=")[1] not in re.sub(r"\s+", "", logged)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_killed_serve_leaves_no_app_behind_and_the_items_come_back(demo_db):
    async with real_serve(demo_db) as served:
        await served.open_tab("eve")
        (app,) = children(served.process.pid)
        assert await until(lambda: holders(demo_db) == [(1, f"eve @{tab_of(app)}")], 30)
        served.process.kill()  # kill -9: the server cannot end its tabs
        served.process.wait()
        try:
            assert await until(lambda: not alive(app), 30), "the tab's app ended by itself"
        finally:
            if alive(app):  # left behind: end it
                os.kill(app, signal.SIGKILL)
    assert holders(demo_db) == [], "its item given back as it ended"
    assert opened_by(demo_db) == [], "no process holds the database"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_tabs_app_killed_under_serve_ends_its_tab_and_its_item_comes_back_at_once(demo_db):
    async with real_serve(demo_db) as served:
        ws = await served.open_tab("gus")
        (app,) = children(served.process.pid)
        assert await until(lambda: holders(demo_db) == [(1, f"gus @{tab_of(app)}")], 30)
        os.kill(app, signal.SIGKILL)
        assert await until_closed(ws, 30), "the tab ended (the browser shows 'Session ended')"
        assert await until(lambda: holders(demo_db) == [], 30), "serve gave its item back"
        await served.open_tab("gus")
        (again,) = children(served.process.pid)
        assert await until(lambda: holders(demo_db) == [(1, f"gus @{tab_of(again)}")], 30), "the same item, at once"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_tab_of_a_killed_app_ends_without_waiting_for_another_writer(demo_db):
    async with real_serve(demo_db) as served:
        ws = await served.open_tab("gus")
        (app,) = children(served.process.pid)
        assert await until(lambda: holders(demo_db) != [], 30)
        held = holders(demo_db)
        with another_writer(demo_db):  # a long import, say
            os.kill(app, signal.SIGKILL)
            assert await until_closed(ws, 30)
            assert await until(lambda: "another writer holds the database: the items a tab held come back when "
                                       "their leases end" in " ".join(served.output.split()), 30)
        assert holders(demo_db) == held, "its item comes back when its lease ends"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_a_closed_tab_saves_the_decision_that_waits_for_another_writer(demo_db):
    """A tab closed while its decision waits for another writer: serve gives its app the time to
    save it (a closed terminal's 30 s), well beyond the 3 s it gives an app that saves nothing."""
    async with real_serve(demo_db) as served:
        ws = await served.open_tab("hal")
        (app,) = children(served.process.pid)
        assert await until(lambda: holders(demo_db) != [], 30)
        ((item, _),) = holders(demo_db)
        with another_writer(demo_db):
            await ws.send_str(json.dumps(["stdin", "s"]))  # a skip: a decision, waiting to be saved
            assert await until_shown(ws, "not saved yet", 30)
            await ws.close()  # the tab is closed while it waits
            await asyncio.sleep(5)  # the other writer goes on for longer than serve's 3 s
        assert await until(lambda: not alive(app), 30), "it ended once the decision was saved"
    assert rows(demo_db, "SELECT annotator, action FROM annotations") == [("hal", "skip")]
    assert holders(demo_db) == [], "its items given back"
    assert f"hal's skip on item #{item} waits for another writer: its tab's app has up to 30 s to save it" in \
        " ".join(served.output.split())
    assert "not saved" not in served.output


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
async def test_serve_stopping_waits_for_a_decision_waiting_to_be_saved_and_ctrl_c_again_names_it(demo_db):
    """Ctrl-C ends the tabs, each app given the time to save a decision waiting for another
    writer; Ctrl-C again stops at once, and serve's log names the decision it did not save."""
    async with real_serve(demo_db) as served:
        ws = await served.open_tab("ida")
        assert await until(lambda: holders(demo_db) != [], 30)
        ((item, _),) = holders(demo_db)
        with another_writer(demo_db) as writer:
            await ws.send_str(json.dumps(["stdin", "n"]))  # the label 'no'
            assert await until_shown(ws, "not saved yet", 30)
            served.process.send_signal(signal.SIGINT)
            assert await until(lambda: "Ctrl-C again stops at once" in " ".join(served.output.split()), 30)
            assert served.process.poll() is None, "it waits"
            served.process.send_signal(signal.SIGINT)
            assert await until(lambda: served.process.poll() is not None, 30), "it stops"
            writer.execute("ROLLBACK")
    said = " ".join(served.output.split())
    assert "stopping: 1 tab(s) wait for another writer to save what their people did, for up to 30 s" in said
    assert f"not saved: ida's label 'no' on item #{item} (another writer held the database until its tab's app " \
        "ended)" in said
    assert rows(demo_db, "SELECT annotator, label FROM annotations") == []
