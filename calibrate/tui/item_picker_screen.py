"""A list of items over the annotation screen, to pick one and look at it again (Enter): the
annotator's flagged items (F) and their labels from any session, latest first (H)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from calibrate.escape import safe


class ItemPickerScreen(ModalScreen[int | None]):
    """`rows` (item id, what the list shows of it) under `title`; dismissed with the picked
    item's id, or None."""

    BINDINGS = [Binding("escape,q,F,H", "close", "close", id="picker.close")]
    DEFAULT_CSS = """
    ItemPickerScreen { align: center middle; }
    ItemPickerScreen > Vertical { width: 90%; height: 80%; border: round $accent; padding: 0 1; background: $surface; }
    ItemPickerScreen Label { width: 1fr; }  /* the title wraps where the dialog is narrow */
    ItemPickerScreen OptionList { height: 1fr; }
    """

    def __init__(self, title: str, rows: list[tuple[int, str]]):
        super().__init__()
        self.title_text, self.rows = title, rows

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, markup=False)
            yield OptionList(*(Option(safe(f"#{item_id}  {text}"), id=str(item_id)) for item_id, text in self.rows))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))

    def action_close(self) -> None:
        self.dismiss(None)
