"""`calibrate serve`: the login token, the Origin check, one annotator per tab, tabs apart."""

from __future__ import annotations

import re

import pytest
from aiohttp.test_utils import TestClient, TestServer

from calibrate.serve import CalibrateServer, Logins, ServeError
from calibrate.session import AnnotationSession
from calibrate.store import Store


@pytest.fixture
async def served():
    async def start(logins: Logins | None = None, max_connections: int = 4):
        server = CalibrateServer(["calibrate", "annotate"], host="127.0.0.1", port=0, logins=logins or Logins(),
                                 max_connections=max_connections)
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


async def test_connections_are_limited(served):
    server, client = await served(max_connections=1)
    page = await client.get(f"/?token={token_of(server)}&annotator=ana")
    tab = re.search(r"/ws/([\w-]+)", await page.text()).group(1)
    server.connections = 1
    full = await client.get(f"/ws/{tab}", headers={"Origin": f"http://{client.host}:{client.port}"})
    assert full.status == 503


async def test_an_annotators_file_gives_each_person_a_token(served, tmp_path):
    (tmp_path / "team.toml").write_text('ana = "ana-token-0123456789"\nbo = "bo-token-0123456789ab"\n')
    server, client = await served(Logins.from_file(tmp_path / "team.toml"))
    page = await client.get("/?token=bo-token-0123456789ab&annotator=ana")
    tab = re.search(r"/ws/([\w-]+)", await page.text()).group(1)
    assert server.tickets[tab][1] == "bo", "the token says who it is, not the form"
    assert server.app_command(tab, "bo").endswith(f"annotate --annotator bo --tab {tab}")
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
    monkeypatch.setattr(CalibrateServer, "serve", lambda self: None)  # print, do not run
    monkeypatch.setattr("socket.gethostname", lambda: "annotation-box")
    out = Calibrate(demo_db)("serve", "--host", "0.0.0.0", "--port", "8123")
    assert "warning: binding 0.0.0.0" in out.output and "http://annotation-box:8123/?token=" in out.output
    assert "0.0.0.0:8123" not in out.output, "a URL nobody can open"
    assert "http://[::1]:8123/?token=" in Calibrate(demo_db)("serve", "--host", "::1", "--port", "8123").output
    assert "warning" not in Calibrate(demo_db)("serve").output
