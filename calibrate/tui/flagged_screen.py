"""The items the annotator flagged, to pick one and look at it again (Enter), over the
annotation screen."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from calibrate.escape import safe
from calibrate.model import Item


class FlaggedScreen(ModalScreen[int | None]):
    BINDINGS = [Binding("escape,q,F", "close", "close", id="flagged.close")]
    DEFAULT_CSS = """
    FlaggedScreen { align: center middle; }
    FlaggedScreen > Vertical { width: 90%; height: 80%; border: round $accent; padding: 0 1; background: $surface; }
    FlaggedScreen Label { width: 1fr; }  /* the title wraps where the dialog is narrow */
    FlaggedScreen OptionList { height: 1fr; }
    """

    def __init__(self, items: list[Item]):
        super().__init__()
        self.items = items

    def compose(self) -> ComposeResult:
        with Vertical():
            title = (f"Your flagged items not labelled since ({len(self.items)}): Enter shows one, Esc closes"
                     if self.items else "No item you flagged in this queue waits for you (f flags one; one you "
                                        "label leaves this list, its flag stays in the export). Esc closes")
            yield Label(title, markup=False)
            yield OptionList(*(Option(safe(f"#{i.id}  {i.task} {i.lang}  ({i.source_id})"), id=str(i.id))
                               for i in self.items))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(int(event.option.id))

    def action_close(self) -> None:
        self.dismiss(None)
