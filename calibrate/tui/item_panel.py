"""The item itself, the response under test and the reference, each under a heading.
Everything from the item is shown literally (no markup) and wraps; the panel scrolls."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from calibrate.display import item_sections, reference_text, response_text, safe
from calibrate.session import ItemView


def section(title: str, body: str, style: str = "bold") -> Text:
    """A heading in `style` over the body as plain, literal text."""
    text = Text()
    text.append(f"{safe(title)}\n", style=style)
    text.append(safe(body) if body else "(empty)")
    text.append("\n")
    return text


class ItemPanel(VerticalScroll):
    DEFAULT_CSS = """
    ItemPanel > Static { margin-bottom: 1; }
    """

    def compose(self):
        yield Static(id="item-fields", markup=False)
        yield Static(id="item-response", markup=False)
        yield Static(id="item-reference", markup=False)

    def show(self, view: ItemView | None) -> None:
        fields, response, reference = (self.query_one(f"#item-{n}", Static) for n in ("fields", "response", "reference"))
        if view is None:
            fields.update(Text("Nothing left in this queue. Press / to change the filter, t for statistics, q to quit."))
            response.update("")
            reference.update("")
            return
        body = Text()
        for n, (title, value) in enumerate(item_sections(view.item, view.template)):
            if n:
                body.append("\n")
            body.append_text(section(title, value, "bold underline"))
        if view.notes:
            body.append_text(section("notes", "\n".join(view.notes), "bold yellow"))
        fields.update(body)
        response.update(section("response under test", response_text(view.item, view.template), "bold cyan"))
        reference.update(section("reference", reference_text(view.item, view.template), "bold green"))
        self.scroll_home(animate=False)
