"""The rubric score form: enter or accept the two scores (score_answer, score_reasoning),
0.0-100.0. It opens filled with the judge's scores, so Enter twice accepts them. A score is
read as typed: a decimal comma (`4,5`, or a Chinese input method's `４，５` / `４．５`) is a
decimal point, and anything that is still no number is refused with the text typed, never
dropped as it is typed. An error under the fields goes as soon as the scores are fixed."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from calibrate.kinds import LabelError, VerdictKind
from calibrate.verdicts import FULL_WIDTH_DIGITS, SCORE_KEYS

_DECIMAL_POINTS = FULL_WIDTH_DIGITS | str.maketrans(",，．", "...")


def _typed_score(text: str) -> str:
    """A score as typed, with its decimal comma or full-width characters read as the number
    they write (`4,5` is 4.5); text that still writes no number is left as typed, for the error."""
    number = text.strip().translate(_DECIMAL_POINTS)
    try:
        float(number)
    except ValueError:
        return text
    return number


class ScoreField(Input):
    """A score's field that takes the keys of a burst in the order they were typed. Input's own
    Backspace and Enter are bindings, resolved once the key has gone up to the app, after the
    digits typed later and in whichever field has the focus by then; here they act as each key
    comes. Keys that reach the field after its Enter moved the focus on (typed before the move)
    go on to the next field."""

    handed_to: Input | None = None  # the field the focus moved to, while keys typed before the move still come

    def _on_focus(self, event: events.Focus) -> None:
        self.handed_to = None
        super()._on_focus(event)

    async def _on_key(self, event: events.Key) -> None:
        if self.handed_to is None and event.key not in ("backspace", "enter"):
            await super()._on_key(event)
            return
        event.stop()
        event.prevent_default()
        if self.handed_to is not None:
            self.handed_to.post_message(events.Key(event.key, event.character))
        elif event.key == "backspace":
            self.action_delete_left()
        else:
            self.screen.entered(self)


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
                yield ScoreField(value="" if value is None else f"{float(value):.1f}", id=f"score-{key}")
            yield Label("", id="score-error")

    def entered(self, field: ScoreField) -> None:
        """Enter in `field`: on the first, move to the second at once; on the second, save."""
        inputs = [self.query_one(f"#score-{k}", Input) for k in SCORE_KEYS]
        if field is inputs[0]:
            field.handed_to = inputs[1]
            self.set_focus(inputs[1])
            return
        try:
            label = self._label()
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
            self._label()
        except LabelError as exc:
            error.update(str(exc))
        else:
            error.update("")

    def _label(self) -> str:
        """The stored form of the scores in the fields, or LabelError saying what is wrong."""
        return self.kind.score_label({k: _typed_score(self.query_one(f"#score-{k}", Input).value) for k in SCORE_KEYS})

    def action_cancel(self) -> None:
        self.dismiss(None)
