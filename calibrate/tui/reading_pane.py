"""A scrolling pane that the annotation screen scrolls from the keyboard, whatever has focus,
with where you are (the lines on screen, of how many) written in its bottom border."""

from __future__ import annotations

from textual.containers import VerticalScroll


class ReadingPane(VerticalScroll, can_focus=False):
    """Never takes focus (so the screen's keys always work); the screen marks the pane its
    scrolling keys go to with the `reading` class."""

    DEFAULT_CSS = """
    ReadingPane { border-subtitle-align: right; }
    """

    def on_mount(self) -> None:
        self.watch(self, "scroll_y", self._show_position, init=False)
        self.watch(self, "virtual_size", self._show_position, init=False)
        self.watch(self, "size", self._show_position, init=False)

    def _show_position(self) -> None:
        self.border_subtitle = position_label(int(self.scroll_y), self.scrollable_content_region.height,
                                              self.virtual_size.height)


def position_label(top: int, visible: int, total: int) -> str:
    """"lines 1-20 of 143 ↓" (the arrow says there is more below), "" when it all fits."""
    if total <= visible or visible <= 0:
        return ""
    last = min(total, top + visible)
    more = " ↓ PgDn" if last < total else ""
    return f"lines {top + 1}–{last} of {total}{more}"
