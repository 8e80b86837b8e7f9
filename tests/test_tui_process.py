"""The real app in a real terminal (a pty): kill -9 after N decisions loses none of them;
`calibrate serve` serves the same app to a browser."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request

from tests.test_database_faults import damaged_table
from tests.tui_helpers import rows


def wait_for(predicate, timeout: float = 30.0, step: float = 0.05) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def read_available(fd: int, into: bytearray | None = None) -> None:
    """Read what the app has written so far (a pty whose output is never read blocks the
    writer), kept `into` where given."""
    import select

    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return
        if not chunk:
            return
        if into is not None:
            into += chunk


def app_in_pty(*args: str) -> tuple[int, int]:
    """(pid, the terminal's fd) of `calibrate ARGS` run in a new pty of 120x40, as a person runs it."""
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: the app itself, in the pty
        os.execve(sys.executable, [sys.executable, "-m", "calibrate", *args], env)
    return pid, fd


def test_sigkill_after_n_decisions_keeps_all_n(demo_db):
    n = 7
    pid, fd = app_in_pty("--db", str(demo_db), "annotate", "--annotator", "kill-test")
    try:
        count = lambda: len(rows(demo_db, "SELECT id FROM annotations"))  # noqa: E731
        assert wait_for(lambda: (read_available(fd), len(rows(demo_db, "SELECT item_id FROM leases")) > 0)[1]), "app started"
        for k in range(n):
            os.write(fd, b"s")  # skip: a decision that is always possible
            assert wait_for(lambda k=k: (read_available(fd), count() >= k + 1)[1]), f"decision {k + 1} reached the database"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
    assert len(rows(demo_db, "SELECT id FROM annotations WHERE annotator = 'kill-test'")) == n


def test_a_closed_terminal_ends_the_app_giving_its_held_item_back_and_keeping_its_decisions(demo_db):
    pid, fd = app_in_pty("--db", str(demo_db), "annotate", "--annotator", "hangup-test")
    # the app's lease holder: its annotator in that process (`lease_holder`)
    held = lambda: len(rows(demo_db, f"SELECT item_id FROM leases WHERE annotator = 'hangup-test @pid {pid}'"))  # noqa: E731
    try:
        assert wait_for(lambda: (read_available(fd), held() > 0)[1]), "app started"
        os.write(fd, b"s")
        assert wait_for(lambda: (read_available(fd), len(rows(demo_db, "SELECT id FROM annotations")) == 1)[1])
        os.kill(pid, signal.SIGHUP)  # what a dropped SSH connection or a killed terminal sends
        assert wait_for(lambda: (read_available(fd), os.waitpid(pid, os.WNOHANG)[0] == pid)[1], timeout=20), "it ended"
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert held() == 0, "its lease given back at once, not after it expires"
    assert len(rows(demo_db, "SELECT id FROM annotations WHERE annotator = 'hangup-test'")) == 1


def test_a_closed_terminal_in_the_demo_keeps_the_database_it_made_and_the_labels_given(tmp_path):
    """The README's first command, then the terminal goes away (a dropped SSH connection): the
    file the demo created holds people's labels now, and the end of the app that cannot tell
    them so any more must not take the file with it."""
    new = tmp_path / "demo.db"
    pid, fd = app_in_pty("--db", str(new), "demo")

    def count(sql: str) -> int:
        """Rows of `sql` in the demo's file, read without writing (a store opened on a file being
        created would apply the migrations itself); 0 while the demo still creates it."""
        if not new.exists():
            return 0
        conn = sqlite3.connect(f"{new.as_uri()}?mode=ro", uri=True, timeout=0.1)
        try:
            return len(conn.execute(sql).fetchall())
        except sqlite3.Error:  # locked, or its tables not yet there
            return 0
        finally:
            conn.close()

    labelled = lambda: count("SELECT id FROM annotations WHERE action = 'label'")  # noqa: E731
    try:
        assert wait_for(lambda: (read_available(fd), count("SELECT item_id FROM leases") > 0)[1]), \
            "the demo's app started"
        os.write(fd, b"y")
        assert wait_for(lambda: (read_available(fd), labelled() == 1)[1]), "the label reached the database"
    finally:
        os.close(fd)  # the terminal is gone: the app is hung up on, and what it writes next fails
        ended = wait_for(lambda: os.waitpid(pid, os.WNOHANG)[0] == pid, timeout=20)
        if not ended:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert ended, "the app ended: not left waiting to write its last frames to the terminal that is gone"
    assert new.exists(), "the database the demo made, with a person's label in it, was removed"
    assert labelled() == 1


def test_a_closed_terminal_saves_the_decision_that_waits_for_another_writer_before_the_app_ends(demo_db):
    pid, fd = app_in_pty("--db", str(demo_db), "annotate", "--annotator", "hangup-wait")
    decided = lambda: len(rows(demo_db, "SELECT id FROM annotations WHERE annotator = 'hangup-wait'"))  # noqa: E731
    ended = lambda: os.waitpid(pid, os.WNOHANG)[0] == pid  # noqa: E731
    shown = bytearray()
    writer = sqlite3.connect(demo_db, isolation_level=None)
    closed = False
    try:
        assert wait_for(lambda: (read_available(fd), len(rows(demo_db, "SELECT item_id FROM leases")) > 0)[1]), "app started"
        os.write(fd, b"s")
        assert wait_for(lambda: (read_available(fd), decided() == 1)[1])
        writer.execute("BEGIN IMMEDIATE")  # another writer holds the database
        os.write(fd, b"s")
        assert wait_for(lambda: (read_available(fd, shown), b"another writer" in shown)[1]), "the app says it waits"
        os.close(fd)  # the terminal closes while the decision waits
        closed = True
        time.sleep(1)
        assert not ended(), "it waits for the decision instead of leaving it unsaved"
        writer.execute("COMMIT")
        assert wait_for(ended, timeout=20), "once saved, it ended"
    finally:
        writer.close()
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        if not closed:
            os.close(fd)
    assert decided() == 2, "the decision that waited was saved"
    assert not rows(demo_db, "SELECT item_id FROM leases WHERE annotator LIKE 'hangup-wait%'"), "its items given back"


def test_only_a_continue_after_a_stop_starts_the_terminal_over(demo_db):
    """A closed terminal sends SIGCONT with its SIGHUP: the app must not start the terminal over
    as after Ctrl-Z (a second writer and input thread, the whole screen drawn again, while a
    decision may wait to be saved). After a stop (SIGTSTP) it does, as before."""
    pid, fd = app_in_pty("--db", str(demo_db), "annotate", "--annotator", "cont")
    alt_screen = b"\x1b[?1049h"
    try:
        assert wait_for(lambda: (read_available(fd), len(rows(demo_db, "SELECT item_id FROM leases")) > 0)[1]), "app started"
        time.sleep(0.5)
        read_available(fd)
        os.kill(pid, signal.SIGCONT)  # as a hang-up sends it, or `kill -CONT`
        shown = bytearray()
        time.sleep(1)
        read_available(fd, shown)
        assert alt_screen not in shown, "a continue that ends no stop leaves the terminal as it is"
        os.kill(pid, signal.SIGTSTP)
        assert os.WIFSTOPPED(os.waitpid(pid, os.WUNTRACED)[1]), "stopped, as by Ctrl-Z"
        os.kill(pid, signal.SIGCONT)  # `fg`
        assert wait_for(lambda: (read_available(fd, shown), alt_screen in shown)[1], timeout=10), "started over after the stop"
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def test_the_app_on_a_damaged_database_ends_with_the_error_and_exit_status_1(demo_db):
    damaged_table(demo_db, "annotations")
    pid, fd = app_in_pty("--db", str(demo_db), "annotate", "--annotator", "damage-test")
    shown, ended = bytearray(), []

    def exited() -> bool:
        read_available(fd, shown)
        child, status = os.waitpid(pid, os.WNOHANG)
        if child == pid:
            ended.append(os.waitstatus_to_exitcode(status))
        return bool(ended)

    try:
        assert wait_for(lambda: (read_available(fd, shown), len(rows(demo_db, "SELECT item_id FROM leases")) > 0)[1]), \
            "app started"
        os.write(fd, b"s")  # a decision: it goes into the damaged table
        assert wait_for(exited, timeout=20), "it ended"
        read_available(fd, shown)
    finally:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(fd)
    assert ended == [1]
    assert f"Error: {demo_db}: the database file is damaged".encode() in shown.replace(b"\r\n", b" "), bytes(shown[-500:])


def test_serve_binds_to_loopback_and_serves_the_page_only_with_its_token(demo_db):
    # port 0: any free port, named in the printed address (a port probed free here could be taken before serve binds it)
    proc = subprocess.Popen([sys.executable, "-m", "calibrate", "--db", str(demo_db), "serve", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = ""
        while "token=" not in url:
            url = proc.stdout.readline().strip()
        address = re.match(r"http://127\.0\.0\.1:(\d+)/\?token=", url)
        assert address, url
        port = int(address.group(1))

        def page(address):
            try:
                with urllib.request.urlopen(address, timeout=2) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, ""
            except OSError:
                return None

        assert wait_for(lambda: page(url) is not None, timeout=30)
        assert page(f"http://127.0.0.1:{port}/")[0] == 403, "no token, no page"
        status, body = page(url + "&annotator=ana")
        assert status == 200 and "calibrate" in body.lower() and "textual" in body.lower()
        listening = subprocess.run(["ss", "-ltn"], capture_output=True, text=True).stdout if os.path.exists("/usr/bin/ss") else ""
        if listening:
            assert f"127.0.0.1:{port}" in listening and f"0.0.0.0:{port}" not in listening
    finally:
        proc.terminate()
        proc.wait(10)
