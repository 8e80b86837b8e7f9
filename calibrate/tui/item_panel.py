"""The item itself, the response under test and the reference, each under a heading.
Everything from the item is shown literally (no markup) and wraps; the panel scrolls from the
keyboard (the screen sends it PageUp/PageDown/Home/End) and its border says where you are.

Long items stay readable at 80x24: the item's own text (a passage, a dialogue) is folded to its
first lines until the annotator expands it, so the response and reference are one screen
away, and a field larger than a page is shown a page at a time, so drawing an item costs the
same whatever its size."""

from __future__ import annotations

from rich.text import Text

from calibrate.display import (
    FOLD_CHARS,
    folded,
    item_sections,
    marked_span,
    page_of,
    reference_text,
    response_text,
)
from calibrate.escape import safe, safe_json
from calibrate.item_view import ItemView
from calibrate.tui.reading_pane import ReadingPane
from calibrate.tui.text_view import TextView


class ItemPanel(ReadingPane):
    DEFAULT_CSS = """
    ItemPanel > TextView { margin-bottom: 1; }
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.border_title = "item"
        self.folds = 0  # how many sections are folded now
        self.pages = 1  # pages of the longest field

    def compose(self):
        yield TextView(id="item-fields")
        yield TextView(id="item-response")
        yield TextView(id="item-reference")

    def show(self, view: ItemView | None, *, expanded: bool = False, page: int = 0) -> None:
        fields, response, reference = (self.query_one(f"#item-{n}", TextView) for n in ("fields", "response", "reference"))
        self.folds, self.pages = 0, 1
        if view is None:
            fields.show_text(Text("Nothing left in this queue. Press k to go back, H for your labels, F for your flagged items, "
                                  "/ to change the filter, t for statistics, q to quit."))
            response.show_text("")
            reference.show_text("")
            self.scroll_home(animate=False)
            return
        try:
            if view.problem:
                raise ValueError(view.problem)
            body = Text()
            for n, (title, value) in enumerate(item_sections(view.item, view.template)):
                if n:
                    body.append("\n\n")
                body.append_text(self._section(title, value, "bold underline", page, fold=not expanded,
                                               mark=marked_span(view.item, title)))
            shown = (response_text(view.item, view.template), reference_text(view.item, view.template))
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            # one bad item never stops the session: say what is wrong, show its raw fields
            body = self._section("this item cannot be labelled",
                                 f"{exc}\n\ns skips it (its lease is released), f flags it", "bold red", 0)
            body.append("\n\n")
            body.append_text(self._section("fields as stored", safe_json(view.item.fields), "bold underline", page))
            shown = ("", "")
        if view.notes:
            body.append("\n\n")
            body.append_text(self._section("notes", "\n".join(view.notes), "bold yellow", page))
        fields.show_text(body)
        response.show_text(self._section("response under test", shown[0], "bold cyan", page) if shown[0] else "")
        reference.show_text(self._section("reference", shown[1], "bold green", page) if shown[1] else "")
        self.scroll_home(animate=False)

    def _section(self, title: str, body: str, style: str, page: int, *, fold: bool = False,
                 mark: tuple[int, int] | None = None) -> Text:
        """A heading in `style` over one page of the body as plain, literal text; folded to its
        first lines if `fold`; the characters in `mark` highlighted."""
        pages, hidden = 1, 0
        if fold and len(body) > FOLD_CHARS:  # a folded field is not paged: x shows it, then ] and [ page it
            shown, _ = folded(body[: FOLD_CHARS + 1])
            hidden = len(body) - len(shown)
            self.folds += 1
        else:
            shown, pages = page_of(body, page)
            self.pages = max(self.pages, pages)
        text = Text()
        text.append(safe(title), style=style)
        if pages > 1:
            text.append(f"  page {min(page, pages - 1) + 1}/{pages} of {len(body):,} characters ( ] next, [ back)",
                        style="dim")
        text.append("\n")
        start = len(text)
        text.append(safe(shown) if shown else "(empty)")
        if mark and page == 0 and mark[1] <= len(shown) and safe(shown[: mark[1]]) == shown[: mark[1]]:
            text.stylize("bold reverse", start + mark[0], start + mark[1])
        if hidden:
            text.append(f" … {hidden:,} more characters: x shows all", style="bold magenta")
        return text
