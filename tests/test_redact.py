"""Credentials never stored or printed, in any form a server may echo them (calibrate.redact)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from calibrate.redact import Redactor
from calibrate.store import Store
from tests.conftest import Calibrate
from tests.fake_openai import FakeOpenAI, Reply

KEY = "sk-test-DO-NOT-STORE-4f9a2b77"
USER, PASSWORD = "judge-user", "hunter2/pass"  # written %2F in the URL


def forms() -> list[str]:
    """Every form of the secrets a hostile server could echo back."""
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return [KEY, USER, PASSWORD, "hunter2%2Fpass", basic, base64.b64encode(f"{USER}:hunter2%2Fpass".encode()).decode()]


@pytest.fixture
def judged(tmp_path, monkeypatch):
    """A database of three items, judged twice by a server echoing every credential: with the
    user and password in the URL (the client sends them as Basic), then with the key (Bearer)."""
    monkeypatch.setenv("MY_JUDGE_KEY", KEY)
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps({"id": k, "content": f"sentence {k}", "notation": "n", "response": "r"}) + "\n"
                              for k in range(3)))
    run = Calibrate(tmp_path / "judge.db")
    run("import", "jsonl", str(source), "--task", "c3/lexical", "--lang", "en")
    outputs = []
    with FakeOpenAI(Reply(echo=True)) as server:
        for url in (server.url.replace("http://", f"http://{USER}:hunter2%2Fpass@"), server.url):
            server.then(*[Reply(status=500, echo=True)] * 2)  # one item fails after its retry, echoing in the error body
            outputs.append(run("judge", "--model", "m", "--base-url", url, "--api-key-env", "MY_JUDGE_KEY",
                               "--max-retries", "1", "--concurrency", "1", "--force", ok=False).output)
        headers = server.headers
    return run, "\n".join(outputs), headers


def test_a_server_echoing_credentials_in_every_form_gets_none_stored_or_printed(judged):
    run, out, headers = judged
    sent = [h["Authorization"] for h in headers]
    assert f"Bearer {KEY}" in sent and f"Basic {forms()[4]}" in sent, "the credentials were sent, so the echo carries them"
    rows = [dict(r) for r in Store(run.db).conn.execute("SELECT * FROM judgments")]
    assert {r["status"] for r in rows} == {"error", "verdict"}
    assert all("***" in r["raw_output"] and "***" in r["model_reported"] for r in rows if r["status"] == "verdict")
    assert all("***" in r["error"] for r in rows if r["status"] == "error")
    printed = [out, run("items", "--json").output, run("export").output, run("render", "1").output]
    stored = [p.read_bytes().decode("utf-8", "replace") for p in Path(run.db).parent.glob("judge.db*")]
    for text in [*printed, *stored, json.dumps(rows)]:
        for form in forms():
            assert form not in text


def test_redactor_blanks_credential_shapes_without_knowing_them_and_keeps_prose():
    redact = Redactor()
    assert redact("Authorization: Basic dXNlcjpwYXNz") == "Authorization: Basic ***"
    assert redact("Bearer abcdefghijklmnop1234") == "Bearer ***"
    assert redact("at https://bob:secret@example.com/v1 ok") == "at https://***@example.com/v1 ok"
    assert redact("key sk-proj-abcdefghijklmnopqrstu, hf_abcdefghijklmnopqrstuv") == "key ***, ***"
    prose = "Basic reasoning: the Bearer of bad news says https://example.com/a:b is fine. The answer is: yes."
    assert redact(prose) == prose
