"""A Static for text that changes with each item, redrawn only as far as it changed.

Textual lays out the whole screen whenever an auto-sized widget gets new content, and
repaints every widget whose place or size the layout touched. `TextView.show_text` skips the
same text shown again, and lays out only when the new text takes a different number of lines
than the old one at the widget's width; otherwise only the widget itself is repainted (in the
annotation app at 140x40 on 1M items, layout and repaint took 12 of the 19 ms of CPU per
decision with plain Statics, 8 of 17 with TextViews)."""

from __future__ import annotations

from rich.text import Text
from textual.content import Content
from textual.geometry import Size
from textual.reactive import Reactive
from textual.visual import visualize
from textual.widgets import Static


class TextView(Static):
    """Literal text (no markup), as `Static(markup=False)`."""

    # Textual sets a widget's virtual size after each layout that changed its size, and for a
    # Widget that asks for a second layout and repaint in the next frame; a widget that does
    # not scroll has nothing to redo (the layout that sized it has also marked it for repaint)
    virtual_size = Reactive(Size(0, 0), layout=False, repaint=False)

    def __init__(self, content: Text | str = "", **kwargs) -> None:
        super().__init__(content, markup=False, **kwargs)
        self._given = content

    @property
    def content(self) -> Text | str:
        """The text as last given (a Rich Text keeps its spans' style names); what is drawn is
        `visual`, made from it once."""
        return self._given

    @content.setter
    def content(self, content: Text | str) -> None:
        self.show_text(content)

    def show_text(self, content: Text | str) -> None:
        """Show `content`: nothing to do if it looks the same as what is shown; a repaint of
        this widget alone if it takes as many lines; else a layout as `update` does."""
        new, old = visualize(self, content, markup=False), self.visual
        self._given = content
        if isinstance(new, Content) and isinstance(old, Content):
            if new.plain == old.plain and new.spans == old.spans:
                return
            width = self.size.width
            if width and self.is_mounted and new.get_height(self.styles, width) == old.get_height(self.styles, width):
                self.update(new, layout=False)
                return
        self.update(new)
