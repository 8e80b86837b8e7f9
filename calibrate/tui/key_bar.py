"""The line of keys at the bottom: the keys that work on the item on screen, as typed (after
any remapping), in the order the screen lists them. A plain Static redrawn only when its text
changes, so moving between items of different kinds costs nothing (Textual's Footer rebuilds
its widgets on every change of the available bindings, ~15 ms a time)."""

from __future__ import annotations

from rich.text import Text
from textual.actions import parse
from textual.keys import format_key
from textual.screen import Screen
from textual.widgets import Static

KEY_STYLE = "bold #ffa62b"


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar { height: 1; background: $panel; }
    """

    def __init__(self, **kwargs):
        super().__init__(markup=False, **kwargs)
        self._drawn: str | None = None

    def show(self, screen: Screen, labels: int) -> None:
        """Draw the shown bindings of `screen` that its check_action allows; `labels` is how
        many digit labels the item has (shown as one range, e.g. 1-3)."""
        text, seen = Text(no_wrap=True, overflow="crop"), set()
        for binding in screen.BINDINGS:
            if not binding.show or binding.id in seen:
                continue
            seen.add(binding.id)
            _, action, params = parse(binding.action)
            if not screen.check_action(action, params):
                continue
            key = format_key(self.app.keys_of(binding)[0])  # as short as Textual writes it: ⏎, /, ?
            if binding.id == "annotate.label_1":
                key = f"1-{labels}"
            text.append(f"{key} ", style=KEY_STYLE)
            text.append(f"{binding.description} ")
        if text.plain != self._drawn:
            self._drawn = text.plain
            self.update(text)
