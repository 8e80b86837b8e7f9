"""The line of keys at the bottom: the keys that work on the item on screen, as typed (after
any remapping), in the order the screen lists them, each digit with the label it gives
(`1 entailment 2 contradiction 3 neutral`), and y and n with the item's own words for yes and no
(`y 是 n 否` on a Chinese item). When the line is wider than the terminal, the keys
the screen names in KEY_BAR_DROPS leave it first (they are on the ? page), and digits whose
labels still do not fit are shown as one range (`1-3 label`). A plain Static redrawn only when
its text changes, so moving between items of different kinds costs nothing (Textual's Footer
rebuilds its widgets on every change of the available bindings, ~15 ms a time)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.actions import parse
from textual.keys import format_key
from textual.screen import Screen
from textual.widgets import Static

KEY_STYLE = "bold #ffa62b"
DIGITS = "annotate.label_"
YES_NO = ("label_yes", "label_no")  # the actions giving a yes/no item's first and second label


class KeyBar(Static):
    DEFAULT_CSS = """
    KeyBar { height: 1; background: $panel; }
    """

    def __init__(self, **kwargs):
        super().__init__(markup=False, **kwargs)
        self._drawn: str | None = None
        self._shown: tuple[Screen, tuple[str, ...]] | None = None

    def show(self, screen: Screen, choices: Sequence[str]) -> None:
        """Draw the shown bindings of `screen` that its check_action allows; `choices` are the
        item's labels, given by the digit keys in order."""
        self._shown = (screen, tuple(choices))
        entries = self._entries(screen, choices)
        width = self.size.width or self.app.size.width
        drops = list(getattr(screen, "KEY_BAR_DROPS", ()))
        while _width(entries) > width and drops:
            drop = drops.pop(0)
            entries = [e for e in entries if e[0] != drop]
        if _width(entries) > width and choices:
            entries = self._entries(screen, choices, as_range=True)
            entries = [e for e in entries if e[0] not in getattr(screen, "KEY_BAR_DROPS", ())]
        text = Text(no_wrap=True, overflow="ellipsis")
        for _, key, description in entries:
            text.append(f"{key} ", style=KEY_STYLE)
            text.append(f"{description} ")
        if text.plain != self._drawn:
            self._drawn = text.plain
            self.update(text, layout=False)  # one line, as wide as the screen: its size never changes

    def on_resize(self) -> None:
        if self._shown is not None:
            self.show(*self._shown)

    def _entries(self, screen: Screen, choices: Sequence[str], as_range: bool = False) -> list[tuple[str, str, str]]:
        """(binding id, key as typed, what it does) per key shown."""
        entries, seen = [], set()
        for binding in screen.BINDINGS:
            if binding.id in seen or not (binding.show or binding.id.startswith(DIGITS)):
                continue
            seen.add(binding.id)
            _, action, params = parse(binding.action)
            if not screen.check_action(action, params):
                continue
            key = format_key(self.app.keys_of(binding)[0])  # as short as Textual writes it: ⏎, /, ?
            if binding.id.startswith(DIGITS):
                index = int(binding.id.removeprefix(DIGITS)) - 1
                if as_range or list(choices) == [str(k) for k in range(1, len(choices) + 1)]:
                    if index == 0:
                        entries.append((binding.id, f"1-{len(choices)}", binding.description))
                    continue
                entries.append((binding.id, key, choices[index]))
                continue
            if action in YES_NO and len(choices) == 2:  # the item's own words: y 是, n 否 on a Chinese item
                entries.append((binding.id, key, choices[YES_NO.index(action)]))
                continue
            entries.append((binding.id, key, binding.description))
        return entries


def _width(entries: list[tuple[str, str, str]]) -> int:
    """Cells the entries take, "key description" separated by one space."""
    return sum(cell_len(key) + cell_len(description) + 2 for _, key, description in entries) - 1
