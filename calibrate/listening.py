"""How an annotation session plays its items' audio and counts it: one playback at a time (a
system player in the background, or the browser under `calibrate serve`), how many times each
item's audio was started and for how many seconds it played, which a label then records
(`AnnotationSession.decide`)."""

from __future__ import annotations

from calibrate.audio import PLAYER_HINT, Playback, audio_url, find_player
from calibrate.item_view import ItemView, NoPlayerError, SessionError


class Listening:
    def __init__(self) -> None:
        self._plays: dict[int, int] = {}
        self._listened: dict[int, float] = {}
        self.playback: Playback | None = None
        self._item: int | None = None  # the item playing
        self._seconds = 0.0  # its clips' total duration: playing longer counts as this

    @property
    def playing(self) -> bool:
        return self.playback is not None and self.playback.playing

    @property
    def player_error(self) -> str | None:
        """Why the latest playback could not start, if it could not."""
        return self.playback.error if self.playback is not None else None

    def toggle(self, view: ItemView) -> bool:
        """Play the audio of the item `view` shows in the background (True), or stop it if it is
        playing (False). Raises SessionError when a clip is missing, NoPlayerError without a player."""
        if self.playing and self._item == view.item.id:
            self.stop()
            return False
        clips = view.playable
        if not clips:
            clip = view.audio[0]
            raise SessionError(f"no audio for this item: {clip.file}: {clip.problem}")
        missing = next((clip for clip in clips if not clip.file.is_file()), None)
        if missing is not None:
            raise SessionError(f"{missing.file}: no such file (the audio folder moved? use --audio-root DIR)")
        command = find_player()
        if command is None:
            raise NoPlayerError(f"no audio player on the PATH (ffplay, paplay, aplay, afplay): {PLAYER_HINT}; "
                                "or press c to copy an scp path and play the file on your side")
        self.stop()
        self.playback = Playback(command, [clip.file for clip in clips])
        self._item = view.item.id
        self._seconds = sum(clip.duration or 0.0 for clip in clips)
        self._plays[view.item.id] = self._plays.get(view.item.id, 0) + 1
        return True

    def in_browser(self, view: ItemView) -> list[str]:
        """The URLs of the playable clips of the item `view` shows, for the browser to play where
        the person sits. Opening them counts as one play of their whole length (the browser does
        not report back how long it played)."""
        item_id = view.item.id
        self._plays[item_id] = self._plays.get(item_id, 0) + 1
        self._listened[item_id] = self._listened.get(item_id, 0.0) + sum(c.duration or 0.0 for c in view.playable)
        return [audio_url(item_id, position) for position, clip in enumerate(view.audio) if clip.usable]

    def stop(self) -> None:
        """Stop the audio, if playing, and count how long it played."""
        if self.playback is None:
            return
        self.playback.stop()
        self._listened[self._item] = self.of(self._item)[1]
        self.playback = None

    def of(self, item_id: int) -> tuple[int, float]:
        """How many times this item's audio was started, and for how many seconds it played (a
        play counts at most the clips' duration)."""
        seconds = self._listened.get(item_id, 0.0)
        if self.playback is not None and self._item == item_id:
            seconds += min(self.playback.seconds, self._seconds)
        return self._plays.get(item_id, 0), seconds
