"""A small dialog asking for one line of text (a note, a filter). Enter accepts, Escape
cancels, as a line under the field says. Given a `check`, Enter accepts only text it finds
nothing wrong with; what is wrong shows under the field, short, until the text is edited."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class TextPrompt(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel", id="prompt.cancel")]
    DEFAULT_CSS = """
    TextPrompt { align: center middle; }
    TextPrompt > Vertical { width: 80%; height: auto; border: round $accent; padding: 1 2; background: $surface; }
    TextPrompt #prompt-error { color: $error; width: 100%; }
    TextPrompt #prompt-keys { color: $text-muted; width: 100%; }
    """

    def __init__(self, title: str, placeholder: str = "", value: str = "",
                 check: Callable[[str], str | None] | None = None, enter: str = "accepts"):
        """`enter`: what Enter does, as the line under the field says ("saves the note")."""
        super().__init__()
        self.title_text, self.placeholder, self.value = title, placeholder, value
        self.check, self.enter = check, enter

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, markup=False)
            yield Input(value=self.value, placeholder=self.placeholder, id="prompt-input")
            yield Label("", id="prompt-error", markup=False)
            yield Label(f"Enter {self.enter}, Esc cancels", id="prompt-keys", markup=False)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        problem = self.check(event.value) if self.check else None
        if problem:
            self.query_one("#prompt-error", Label).update(problem)
            return
        self.dismiss(event.value)

    def on_input_changed(self, event: Input.Changed) -> None:
        self.query_one("#prompt-error", Label).update("")

    def action_cancel(self) -> None:
        self.dismiss(None)
