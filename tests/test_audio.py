"""Response audio: read at import, shown and played in the app, required before a label when
asked, reported in gold exports, and served to a browser only with the token."""

from __future__ import annotations

import hashlib
import json
import shutil
import wave
from pathlib import Path

import numpy as np
import pytest
from aiohttp.test_utils import TestClient, TestServer

from calibrate.audio import envelope
from calibrate.demo import DEMO_DIR
from calibrate.item_view import SessionError
from calibrate.session import AnnotationSession
from calibrate.store import Store
from calibrate.tui.audio_strip import AudioStrip
from tests.conftest import Calibrate
from tests.tui_helpers import make_app, rows, screen_text, told

SIZE = (100, 30)
PAUSE = "ambiguity/phonological/pause"


def write_wav(path: Path, seconds: float, rate: int = 16000) -> Path:
    """A 440 Hz tone that is silent in its second half, as 16-bit mono PCM."""
    t = np.arange(int(seconds * rate)) / rate
    tone = np.where(t < seconds / 2, 0.5 * np.sin(2 * np.pi * 440 * t), 0.0)
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes((tone * 32767).astype("<i2").tobytes())
    return path


@pytest.fixture
def c3_en(tmp_path) -> Path:
    shutil.copytree(DEMO_DIR / "c3" / "en", tmp_path / "en")
    return tmp_path / "en"


def import_c3(calibrate: Calibrate, tree: Path):
    return calibrate("import", "c3", "--reference", str(tree / "reference"), "--responses", str(tree / "responses"),
                     "--lang", "en")


def audio_of(db: Path, task: str, lang: str = "en") -> list:
    store = Store(db)
    try:
        return store.item_audio(store.items(task=task, lang=lang)[0].id)
    finally:
        store.close()


# -- import --------------------------------------------------------------------------------------


def test_c3_import_records_a_generated_wav_with_its_duration(calibrate, c3_en):
    wav = write_wav(c3_en / "responses" / PAUSE / "0.wav", 1.5)
    out = import_c3(calibrate, c3_en)
    assert "without audio" not in out.output
    [clip] = audio_of(calibrate.db, "c3/pause")
    assert (clip.part, clip.path, clip.duration, clip.sample_rate) == ("response", f"{PAUSE}/0.wav", 1.5, 16000)
    assert clip.checksum == hashlib.sha256(wav.read_bytes()).hexdigest() and clip.problem is None
    assert clip.root == (c3_en / "responses").resolve()
    assert [c.part for c in audio_of(calibrate.db, "c3/multi-turn")] == ["turn 1", "turn 2", "turn 3"]


def test_a_missing_or_unreadable_wav_is_reported_and_the_item_still_imported(calibrate, c3_en):
    (c3_en / "responses" / PAUSE / "0.wav").unlink()
    (c3_en / "responses" / "ambiguity/phonological/stress/0.wav").write_bytes(b"not a wav at all")
    out = import_c3(calibrate, c3_en)
    assert f"no audio: {(c3_en / 'responses' / PAUSE / '0.wav').resolve()}: no such file" in out.output
    assert "stress/0.wav: unreadable .wav" in out.output and "2 without audio" in out.output
    [missing] = audio_of(calibrate.db, "c3/pause")
    assert missing.problem == "no such file" and missing.duration is None and not missing.usable
    assert Store(calibrate.db).count_items(task="c3/pause") == 1


async def test_the_app_names_the_missing_file_and_plays_nothing(calibrate, c3_en, fake_player):
    (c3_en / "responses" / PAUSE / "0.wav").unlink()
    import_c3(calibrate, c3_en)
    app = make_app(calibrate.db, task="c3/pause", require_listen=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        assert f"♪ no audio for response: {PAUSE}/0.wav (no such file)" in screen_text(app)
        await pilot.press("l", "y")
        assert "no audio for this item" in told(app)[0] and not fake_player.exists()
    assert rows(calibrate.db, "SELECT label, audio_plays FROM annotations") == [("yes", None)]


def test_reimporting_once_the_audio_is_there_records_it(calibrate, c3_en):
    (c3_en / "responses" / PAUSE / "0.wav").unlink()
    import_c3(calibrate, c3_en)
    write_wav(c3_en / "responses" / PAUSE / "0.wav", 0.5)
    again = import_c3(calibrate, c3_en)
    assert "0 items added" in again.output
    assert audio_of(calibrate.db, "c3/pause")[0].duration == 0.5


def test_jsonl_audio_field_is_relative_to_the_file(calibrate, tmp_path):
    (tmp_path / "clips").mkdir()
    write_wav(tmp_path / "clips" / "a.wav", 2.0, rate=8000)
    lex = {"content": "She went to the bank.", "notation": "river bank", "response": "the river bank"}
    lines = [{"id": "a", **lex, "audio": "clips/a.wav"}, {"id": "b", **lex, "audio": "clips/b.wav"}]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    out = calibrate("import", "jsonl", str(f), "--task", "c3/lexical", "--lang", "en", "--audio-field", "audio")
    assert "2 items added" in out.output and "clips/b.wav: no such file" in out.output
    store = Store(calibrate.db)
    item_id = store.identity_index("c3/lexical", "en")[("", "a")][0]
    [clip] = store.item_audio(item_id)
    assert (clip.duration, clip.sample_rate, clip.path) == (2.0, 8000, "clips/a.wav")
    assert "audio" not in store.item(item_id).fields


def test_envelope_is_loud_where_the_tone_is_and_flat_where_it_is_silent(tmp_path):
    points = envelope(write_wav(tmp_path / "x.wav", 1.0), 10)
    assert max(points) == 1.0 and all(p > 0.9 for p in points[:5]) and all(p == 0 for p in points[5:])


def test_demo_audio_is_synthetic_small_and_beside_every_c3_response():
    texts = sorted(DEMO_DIR.glob("c3/*/responses/**/*.txt"))
    wavs = sorted(DEMO_DIR.glob("c3/*/responses/**/*.wav"))
    assert [p.with_suffix("") for p in wavs] == [p.with_suffix("") for p in texts]
    assert sum(p.stat().st_size for p in wavs) < 600_000
    assert "synthetic" in (DEMO_DIR / "README.md").read_text(encoding="utf-8")


# -- the app -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def player_dirs(tmp_path_factory) -> dict[str, Path]:
    """Fake players, each alone in a folder to be the PATH: `ffplay` records its arguments in
    $PLAYER_LOG; `paplay` plays for 30 s; `aplay` names an interpreter that does not exist.
    Written once, before any test starts a player, so no player is executed while its file is
    still open for writing."""
    sleep = shutil.which("sleep")  # by full path: the player's PATH holds only the player
    scripts = {"ffplay": '#!/bin/sh\necho "$@" >> "$PLAYER_LOG"', "paplay": f"#!/bin/sh\nexec {sleep} 30",
               "aplay": "#!/nonexistent/sh\n"}
    dirs = {}
    for name, body in scripts.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / name).write_text(f"{body}\n", encoding="utf-8")
        (folder / name).chmod(0o755)
        dirs[name] = folder
    return dirs


@pytest.fixture
def fake_player(tmp_path, monkeypatch, player_dirs) -> Path:
    """An `ffplay` on an otherwise empty PATH that records its arguments, one line per run."""
    log = tmp_path / "player.log"
    monkeypatch.setenv("PATH", str(player_dirs["ffplay"]))
    monkeypatch.setenv("PLAYER_LOG", str(log))
    return log


async def played(app, pilot) -> None:
    """Wait until the background player has finished."""
    playback = app.session.audio.playback
    assert playback is not None and playback.wait(5)
    await pilot.pause()


async def test_the_listen_key_runs_the_player_with_the_file(demo_db, fake_player):
    app = make_app(demo_db, task="c3/pause", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        assert "♪ response 2.3 s" in screen_text(app)
        await pilot.press("l")
        await played(app, pilot)
        wav = DEMO_DIR / "c3/en/responses" / PAUSE / "0.wav"
        assert fake_player.read_text().split() == ["-nodisp", "-autoexit", "-loglevel", "quiet", str(wav)]
        assert "played 1×" in screen_text(app)
        await pilot.press("n")
    assert rows(demo_db, "SELECT label, audio_plays, listened_seconds > 0 FROM annotations") == [("no", 1, 1)]


async def test_a_dialogue_plays_its_turns_in_order(demo_db, fake_player):
    app = make_app(demo_db, task="c3/multi-turn", lang="zh")
    async with app.run_test(size=SIZE) as pilot:
        assert "♪ turn 1 1.7 s  turn 2 1.3 s  turn 3 0.9 s" in screen_text(app)
        await pilot.press("l")
        await played(app, pilot)
    played_files = [line.split()[-1] for line in fake_player.read_text().splitlines()]
    assert played_files == [str(DEMO_DIR / f"c3/zh/responses/context-dependency/multi-turn/0/{t}.wav") for t in range(3)]


async def test_without_a_player_the_app_says_so_once(demo_db, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    app = make_app(demo_db, task="c3/pause", lang="en")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("l", "l")
        [message] = told(app)
        assert "no audio player on the PATH" in message and "install ffmpeg (ffplay)" in message


async def test_require_listen_refuses_a_label_before_playing_and_takes_it_after(demo_db, fake_player):
    app = make_app(demo_db, task="c3/generation-pause", lang="zh", require_listen=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("y")
        assert rows(demo_db) == [] and "listen first" in told(app)[0]
        await pilot.press("l")
        await played(app, pilot)
        await pilot.press("y")
    assert rows(demo_db, "SELECT action, label, audio_plays FROM annotations") == [("label", "是", 1)]


def test_listen_again_stops_and_counts_what_played(demo_db, templates, monkeypatch, player_dirs):
    monkeypatch.setenv("PATH", str(player_dirs["paplay"]))
    session = AnnotationSession(Store(demo_db), templates, annotator="a", task="c3/pause", lang="en")
    item_id = session.start().item.id
    assert session.listen() is True and session.playing
    assert session.listen() is False and not session.playing
    plays, seconds = session.listening(item_id)
    assert plays == 1 and 0 < seconds < 2.4
    session.close()


async def test_a_player_that_cannot_start_is_named_on_screen(demo_db, monkeypatch, player_dirs):
    monkeypatch.setenv("PATH", str(player_dirs["aplay"]))
    app = make_app(demo_db, task="c3/pause", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("l")
        assert app.session.audio.playback.wait(5)
        await pilot.pause(0.7)
        assert "aplay could not start: No such file or directory" in screen_text(app)


def test_require_listen_without_a_player_says_what_to_install(demo_db, templates, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    session = AnnotationSession(Store(demo_db), templates, annotator="a", task="c3/generation-tone", require_listen=True)
    session.start()
    with pytest.raises(SessionError, match="no audio player on the PATH: install ffmpeg"):
        session.decide("label", "是")


async def test_generation_items_put_the_audio_first(demo_db):
    app = make_app(demo_db, task="c3/generation-tone", lang="zh")
    async with app.run_test(size=SIZE):
        order = [w.id for w in app.screen.children]
        assert order.index("audio") < order.index("main")
    judged = make_app(demo_db, task="c3/tone", lang="zh")
    async with judged.run_test(size=SIZE):
        order = [w.id for w in judged.screen.children]
        assert order.index("audio") > order.index("main")


async def test_items_without_audio_hide_the_strip(demo_db):
    app = make_app(demo_db, task="superglue/boolq")
    async with app.run_test(size=SIZE):
        assert not app.screen.query_one(AudioStrip).display and "♪" not in screen_text(app)


async def test_the_copy_key_gives_an_scp_ready_path(demo_db):
    app = make_app(demo_db, task="c3/pause", lang="en")
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.press("c")
        assert app.clipboard.endswith(f":{DEMO_DIR / 'c3/en/responses' / PAUSE / '0.wav'}")
        assert told(app) == [f"copied for scp: {app.clipboard}"]


def test_audio_root_finds_the_audio_after_the_folder_moved(calibrate, c3_en, tmp_path, templates, fake_player):
    import_c3(calibrate, c3_en)
    moved = shutil.move(c3_en / "responses", tmp_path / "elsewhere")
    store = Store(calibrate.db)
    stale = AnnotationSession(store, templates, annotator="a", task="c3/pause")
    stale.start()
    with pytest.raises(SessionError, match="--audio-root"):
        stale.listen()
    stale.close()
    session = AnnotationSession(store, templates, annotator="b", task="c3/pause", audio_root=Path(moved))
    session.start()
    assert session.listen() is True and session.audio.playback.wait(5)
    assert fake_player.read_text().split()[-1] == str(Path(moved) / PAUSE / "0.wav")


# -- exports and merge -----------------------------------------------------------------------------


def test_gold_exports_say_whether_the_person_listened(demo_db, templates, fake_player, tmp_path):
    store = Store(demo_db)
    for annotator, listens in (("ana", True), ("bo", False)):
        session = AnnotationSession(store, templates, annotator=annotator, task="c3/pause", lang="en", overlap=2)
        session.start()
        if listens:
            session.listen()
            session.audio.playback.wait(5)
        session.decide("label", "yes")
    store.close()
    run = Calibrate(demo_db)
    records = [json.loads(line) for line in run("export").stdout.splitlines()]
    pause = next(r for r in records if r["task"] == "c3/pause" and r["lang"] == "en")
    assert set(pause["listened"]) == {"ana", "bo"} and pause["listened"]["bo"] == 0.0 and pause["listened"]["ana"] > 0
    boolq = next(r for r in records if r["task"] == "superglue/boolq")
    assert boolq["listened"] is None
    csv_text = run("export", "--format", "csv").stdout
    assert "listened:ana" in csv_text.splitlines()[0]


def test_export_c3_writes_nothing_about_audio(demo_db, tmp_path):
    Calibrate(demo_db)("export", "c3", "--lang", "zh", "--system", "sdm-alpha", str(tmp_path / "out"))
    written = "".join(p.read_text(encoding="utf-8") for p in (tmp_path / "out").rglob("*.json"))
    assert written and "wav" not in written and "listened" not in written and "audio" not in written


def test_merge_keeps_the_audio_and_the_listening(demo_db, tmp_path, templates):
    offline = tmp_path / "offline.db"
    shutil.copy(demo_db, offline)
    store = Store(offline)
    item_id = store.items(task="c3/pause", lang="en")[0].id
    store.annotate(item_id, "ana", "label", label="yes", audio_plays=2, listened_seconds=3.5)
    store.close()
    fresh = tmp_path / "fresh.db"
    Calibrate(fresh)("merge", str(offline))
    merged = Store(fresh)
    new_id = merged.items(task="c3/pause", lang="en")[0].id
    assert merged.item_audio(new_id) == Store(offline).item_audio(item_id)
    assert merged.listening() == {(new_id, "ana"): 3.5}


# -- the browser route -----------------------------------------------------------------------------


async def test_the_audio_route_returns_the_file_with_the_token_and_403_without(demo_db):
    from calibrate.serve import CalibrateServer, Logins

    store = Store(demo_db)
    item_id, clips = next((i, c) for i, c in store.audio_by_item().items() if c and c[0].usable)
    store.close()
    token = "s3cret-token-for-the-test"
    server = CalibrateServer([], host="127.0.0.1", port=0, logins=Logins({token: "ana"}), max_connections=2,
                             db_path=str(demo_db))
    async with TestClient(TestServer(await server._make_app())) as client:
        ok = await client.get(f"/audio/{item_id}/0", params={"token": token})
        assert ok.status == 200 and ok.headers["Content-Type"] == "audio/wav"
        assert await ok.read() == clips[0].file.read_bytes()
        client.session.cookie_jar.clear()  # the login cookie set by the first visit
        assert (await client.get(f"/audio/{item_id}/0")).status == 403
        assert (await client.get(f"/audio/{item_id}/0", params={"token": "wrong"})).status == 403
        assert (await client.get(f"/audio/{item_id}/{len(clips)}", params={"token": token})).status == 404
        assert (await client.get("/audio/x/0", params={"token": token})).status == 404
        assert (await client.get("/audio/..%2F..%2Fetc/0", params={"token": token})).status == 404
