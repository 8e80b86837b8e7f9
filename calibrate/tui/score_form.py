"""The rubric score form: enter or accept the two scores (score_answer, score_reasoning),
0.0-100.0. It opens filled with the judge's scores, so Enter twice accepts them. An error
under the fields goes as soon as the scores are fixed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from calibrate.kinds import LabelError, VerdictKind
from calibrate.verdicts import SCORE_KEYS


class ScoreForm(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel", id="scores.cancel")]
    DEFAULT_CSS = """
    ScoreForm { align: center middle; }
    ScoreForm > Vertical { width: 72; max-width: 100%; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    ScoreForm #score-error { color: $error; }
    """

    def __init__(self, kind: VerdictKind, judge_scores: str | None):
        super().__init__()
        self.kind = kind
        self.initial = kind.scores(judge_scores) or {}

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Your scores, 0.0-100.0: Enter moves on, Enter on the last saves", markup=False)
            for key in SCORE_KEYS:
                yield Label(key)
                value = self.initial.get(key)
                yield Input(value="" if value is None else f"{float(value):.1f}", id=f"score-{key}", type="number")
            yield Label("", id="score-error")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        inputs = [self.query_one(f"#score-{k}", Input) for k in SCORE_KEYS]
        if event.input is inputs[0]:
            inputs[1].focus()
            return
        try:
            label = self.kind.score_label({k: i.value for k, i in zip(SCORE_KEYS, inputs, strict=True)})
        except LabelError as exc:
            self.query_one("#score-error", Label).update(str(exc))
            return
        self.dismiss(label)

    def on_input_changed(self, event: Input.Changed) -> None:
        """An error shown stays only while the scores are still wrong (and says what is wrong now)."""
        error = self.query_one("#score-error", Label)
        if not str(error.content):
            return
        try:
            self.kind.score_label({k: self.query_one(f"#score-{k}", Input).value for k in SCORE_KEYS})
        except LabelError as exc:
            error.update(str(exc))
        else:
            error.update("")

    def action_cancel(self) -> None:
        self.dismiss(None)
