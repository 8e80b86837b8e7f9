"""The item's audio across the screen: a line such as `♪ response 3.2 s` and the loudness
envelope beneath it (the clips of a dialogue side by side, each as wide as it is long), so
the annotator sees at a glance where the speech and the pauses are. Hidden for items without
audio; names the file and the reason when the audio is missing."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Sparkline

from calibrate.audio import envelope
from calibrate.item_view import ItemView
from calibrate.session import AnnotationSession
from calibrate.tui.text_view import TextView

BINS = 320  # envelope points for all clips together; the Sparkline buckets them to its width


@lru_cache(maxsize=64)
def _envelope(file: Path, checksum: str | None, bins: int) -> tuple[float, ...]:
    return tuple(envelope(file, bins))


def clip_envelopes(view: ItemView) -> list[float]:
    """The playable clips' envelopes joined, each with a share of BINS proportional to its
    duration (an unreadable file gives a flat line rather than an error on screen)."""
    clips = view.playable
    total = sum(c.duration or 0.0 for c in clips) or 1.0
    points: list[float] = []
    for clip in clips:
        bins = max(1, round(BINS * (clip.duration or 0.0) / total))
        try:
            points += _envelope(clip.file, clip.checksum, bins)
        except (OSError, EOFError, ValueError):
            points += [0.0] * bins
    return points


def audio_line(view: ItemView, plays: int, seconds: float, playing: bool, error: str | None = None) -> Text:
    """`♪ response 3.2 s` (or the parts of a dialogue), what listening so far, and the keys."""
    line = Text()
    line.append("▶ " if playing else "♪ ", style="bold magenta")
    clips = view.playable
    if clips:
        parts = "  ".join(f"{c.part} {c.duration or 0:.1f} s" for c in clips)
        line.append(parts, style="bold")
        rate = clips[0].sample_rate
        line.append(f"  {rate / 1000:g} kHz" if rate else "", style="dim")
    missing = [c for c in view.audio if not c.usable]
    for n, clip in enumerate(missing):
        gap = "  " if clips or n else ""
        line.append(f"{gap}no audio for {clip.part}: {clip.path} ({clip.problem})", style="yellow")
    if clips:
        heard = f"played {plays}× · {seconds:.1f} s" if plays else "not played yet"
        line.append(f"  {heard}  ", style="dim")
        line.append("l", style="bold")
        line.append(" stop" if playing else " listen", style="dim")
        line.append("  c", style="bold")
        line.append(" copy scp path", style="dim")
    if error:
        line.append(f"  {error}", style="bold red")
    return line


class AudioStrip(Vertical):
    DEFAULT_CSS = """
    AudioStrip { height: auto; padding: 0 1; background: $boost; }
    AudioStrip.-hidden { display: none; }
    AudioStrip > Static { height: auto; }
    AudioStrip > Sparkline { height: 2; }
    AudioStrip > Sparkline.-hidden { display: none; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._view: ItemView | None = None
        self._session: AnnotationSession | None = None
        self._shown_playing = False

    def compose(self) -> ComposeResult:
        yield TextView(id="audio-line")
        yield Sparkline([], id="audio-envelope")

    def on_mount(self) -> None:
        self.set_interval(0.5, self._tick)

    def show(self, view: ItemView | None, session: AnnotationSession) -> None:
        self._view, self._session = view, session
        self.set_class(view is None or not view.audio, "-hidden")
        if view is None or not view.audio:
            return
        self._refresh_line()
        sparkline = self.query_one(Sparkline)
        sparkline.set_class(not view.playable, "-hidden")
        if view.playable:
            sparkline.data = clip_envelopes(view)

    def _tick(self) -> None:
        """While audio plays (and once when it ends), keep the line true."""
        if self._session is not None and (self._session.playing or self._shown_playing):
            self._refresh_line()

    def _refresh_line(self) -> None:
        view, session = self._view, self._session
        if view is None or session is None or not view.audio:
            return
        self._shown_playing = session.playing
        plays, seconds = session.listening(view.item.id)
        line = audio_line(view, plays, seconds, self._shown_playing, session.player_error)
        self.query_one("#audio-line", TextView).show_text(line)
