"""A scrollable page of text (help, guidelines) over the annotation screen; any of Escape,
q or ? closes it."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from calibrate.escape import safe


class TextScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark,g", "close", "close", id="page.close")]
    DEFAULT_CSS = """
    TextScreen { align: center middle; }
    TextScreen > VerticalScroll { width: 90%; height: 85%; border: round $accent; padding: 1 2; background: $surface; }
    """

    def __init__(self, title: str, body: Text | str):
        super().__init__()
        self.page_title, self.body = title, body

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(safe(self.page_title), style="bold underline"), markup=False)
            yield Static(self.body if isinstance(self.body, Text) else Text(safe(self.body)), markup=False)

    def action_close(self) -> None:
        self.dismiss(None)
