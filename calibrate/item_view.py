"""What the annotation screen shows of an item (`ItemView`: the item, its template, the judge's
verdict and repeats, the label in force, notes, audio) and what a session hands back after a
decision or when asked for progress: the views an `AnnotationSession` gives its user interface,
apart from the session that works out which item comes next."""

from __future__ import annotations

from dataclasses import dataclass, field

from calibrate.kinds import VerdictKind
from calibrate.model import AudioClip, Item, Judgment
from calibrate.templates import RenderedPrompt, Template


class SessionError(ValueError):
    """A decision that cannot be made (no verdict to confirm, a label outside the set...)."""


class NoPlayerError(SessionError):
    """No system audio player on the PATH."""


@dataclass
class ItemView:
    """What the annotation screen shows for one item."""

    item: Item
    template: Template
    judgment: Judgment | None
    choices: tuple[str, ...]
    current_label: str | None
    notes: list[str]
    audio: list[AudioClip] = field(default_factory=list)
    problem: str | None = None  # why this item cannot be labelled (no template, fields of the wrong type)
    repeats: list[tuple[str, str | None]] = field(default_factory=list)  # (status, verdict) of each sample, with repeats

    @property
    def playable(self) -> list[AudioClip]:
        """The audio clips that can be played, in order."""
        return [clip for clip in self.audio if clip.usable]

    @property
    def audio_first(self) -> bool:
        """Items no judge decides (C3's generation: the template has no prompt) are decided by
        listening, so their audio comes first."""
        return bool(self.audio) and not self.template.has_prompt

    @property
    def kind(self) -> VerdictKind:
        return self.template.kind

    @property
    def is_scores(self) -> bool:
        return self.kind.scored

    @property
    def is_binary(self) -> bool:
        return self.kind.is_binary

    @property
    def is_yes_no(self) -> bool:
        """A task whose two labels read as yes / no, so y and n make sense."""
        return self.kind.reads_yes_no

    @property
    def verdict(self) -> str | None:
        return self.judgment.verdict if self.judgment and self.judgment.status == "verdict" else None

    def prompt(self) -> RenderedPrompt | None:
        """The prompt the judge saw: the stored one, else rendered from the template now
        (TemplateError, as `calibrate render` says it, if the template cannot render the item)."""
        if self.judgment and self.judgment.prompt:
            return RenderedPrompt(self.template, self.judgment.system_prompt, self.judgment.prompt)
        if not self.template.has_prompt:
            return None
        return self.template.render(self.item.task, self.item.fields)


@dataclass
class Decision:
    item_id: int
    action: str
    label: str | None
    judge_verdict: str | None
    uid: str = ""  # of the annotation row that recorded it

    @property
    def agrees(self) -> bool | None:
        if self.label is None or self.judge_verdict is None:
            return None
        return self.label == self.judge_verdict


@dataclass
class Progress:
    labelled: int
    total: int
    per_hour: float | None
