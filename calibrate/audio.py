"""The spoken response behind a transcript: reading `.wav` files, and playing them.

C3's responses are speech; its generation items ("say it with the pause here") can only be
decided by listening. Importers call `probe_clip` for each `.wav` beside a transcript (duration,
sample rate, checksum; or why it cannot be used) and the store keeps the result. The annotation
app asks `envelope` for a picture of the loudness and `Playback` to play the file through a
system player in the background. Only the stdlib `wave` module and numpy: no audio library.

No pitch contour: the libraries that give one (praat-parselmouth, librosa's pyin) are large
compiled or numba-based dependencies, not cheap enough to earn a place here.
"""

from __future__ import annotations

import getpass
import hashlib
import shlex
import shutil
import socket
import subprocess
import threading
import time
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from calibrate.model import AudioClip

if TYPE_CHECKING:
    import numpy as np

# System players, in the order they are tried, with the arguments that make each play one
# file and exit without a window or chatter.
PLAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ffplay", ("-nodisp", "-autoexit", "-loglevel", "quiet")),
    ("paplay", ()),
    ("aplay", ("-q",)),
    ("afplay", ()),
)
PLAYER_HINT = "install ffmpeg (ffplay), pulseaudio-utils (paplay) or alsa-utils (aplay)"


def probe_clip(part: str, root: Path, path: str) -> AudioClip:
    """The clip at root/path with its duration, sample rate and sha256, or with the reason it
    cannot be used (missing, not a readable PCM .wav)."""
    root = Path(root).resolve()
    file = root / path
    if not file.is_file():
        return AudioClip(part, root, path, problem="no such file")
    try:
        data = file.read_bytes()
        with wave.open(str(file), "rb") as wav:
            rate, frames = wav.getframerate(), wav.getnframes()
    except (OSError, wave.Error, EOFError) as exc:
        return AudioClip(part, root, path, problem=f"unreadable .wav ({exc or type(exc).__name__})")
    if rate <= 0:
        return AudioClip(part, root, path, problem="unreadable .wav (sample rate 0)")
    return AudioClip(part, root, path, round(frames / rate, 3), rate, hashlib.sha256(data).hexdigest())


def read_samples(file: Path) -> np.ndarray:
    """The file's samples as floats in [-1, 1], channels averaged."""
    import numpy as np  # only drawing needs it; importers and the store stay light

    with wave.open(str(file), "rb") as wav:
        width, channels = wav.getsampwidth(), wav.getnchannels()
        raw = wav.readframes(wav.getnframes())
    if width == 1:  # 8-bit PCM is unsigned
        samples = (np.frombuffer(raw, np.uint8).astype(np.float64) - 128) / 128
    elif width in (2, 4):
        dtype = np.int16 if width == 2 else np.int32
        samples = np.frombuffer(raw, dtype).astype(np.float64) / float(np.iinfo(dtype).max)
    elif width == 3:  # 24-bit: widen each little-endian triple to int32
        triples = np.frombuffer(raw, np.uint8).reshape(-1, 3).astype(np.int32)
        values = triples[:, 0] | (triples[:, 1] << 8) | (triples[:, 2] << 16)
        samples = np.where(values >= 1 << 23, values - (1 << 24), values) / float((1 << 23) - 1)
    else:
        raise wave.Error(f"{width}-byte samples are not supported")
    if channels > 1:
        samples = samples[: len(samples) // channels * channels].reshape(-1, channels).mean(axis=1)
    return samples


def envelope(file: Path, bins: int) -> list[float]:
    """The amplitude envelope: the root-mean-square of the samples in each of `bins` equal
    stretches of the file, scaled so the loudest stretch is 1 (all zeros for silence)."""
    import numpy as np

    samples = read_samples(file)
    if not len(samples) or bins < 1:
        return [0.0] * max(bins, 0)
    stretches = np.array_split(samples, min(bins, len(samples)))
    rms = np.array([np.sqrt(np.mean(s * s)) for s in stretches])
    top = rms.max()
    return [float(v) for v in (rms / top if top > 0 else rms)]


def find_player() -> list[str] | None:
    """The first system player on the PATH (ffplay, paplay, aplay, afplay), as the command to
    which the file is appended; None when there is none."""
    for name, args in PLAYERS:
        found = shutil.which(name)
        if found:
            return [found, *args]
    return None


def scp_path(file: Path) -> str:
    """`user@host:/absolute/path`, ready to paste after `scp ` on the annotator's own machine
    (the host name as this machine knows itself; an SSH alias may differ)."""
    return f"{getpass.getuser()}@{socket.gethostname()}:{shlex.quote(str(Path(file).resolve()))}"


AUDIO_ROUTE = "/audio/{item}/{position}"
"""Where `calibrate serve` serves one clip of one item to the browser (calibrate.audio_route)."""


def audio_url(item_id: int, position: int) -> str:
    """The audio route's URL (relative to the server) for one clip of one item."""
    return f"/audio/{item_id}/{position}"


class Playback:
    """Plays files one after another with a system player, in a background thread so the
    caller never waits; `stop` ends it. `seconds` is how long it has been playing; `error` says
    why the player could not be started, if it could not."""

    def __init__(self, command: Sequence[str], files: Sequence[Path]):
        self.command = list(command)
        self.files = [Path(f) for f in files]
        self.error: str | None = None
        self._process: subprocess.Popen | None = None
        self._stopped = threading.Event()
        self._done = threading.Event()
        self._started = time.monotonic()
        self._ended: float | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for file in self.files:
                if self._stopped.is_set():
                    break
                self._process = subprocess.Popen(
                    [*self.command, str(file)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                if self._stopped.is_set():
                    self._process.terminate()
                self._process.wait()
        except OSError as exc:
            self.error = f"{self.command[0]} could not start: {exc.strerror or exc}"
        finally:
            if self._ended is None:
                self._ended = time.monotonic()
            self._done.set()

    @property
    def playing(self) -> bool:
        return not self._done.is_set()

    @property
    def seconds(self) -> float:
        return (self._ended or time.monotonic()) - self._started

    def stop(self) -> None:
        self._stopped.set()
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
        if self._ended is None:
            self._ended = time.monotonic()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every file has played (or playback was stopped); True if it ended."""
        return self._done.wait(timeout)
