"""The item itself, the response under test and the reference, each under a heading.
Everything from the item is shown literally (no markup) and wraps; the panel scrolls."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from calibrate.display import item_sections, reference_text, response_text, safe, safe_json
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
        try:
            if view.problem:
                raise ValueError(view.problem)
            body = Text()
            for n, (title, value) in enumerate(item_sections(view.item, view.template)):
                if n:
                    body.append("\n")
                body.append_text(section(title, value, "bold underline"))
            shown = (response_text(view.item, view.template), reference_text(view.item, view.template))
        except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
            # one bad item never stops the session: say what is wrong, show its raw fields
            body = section("this item cannot be labelled", f"{exc}\n\ns skips it (its lease is released), f flags it",
                           "bold red")
            body.append_text(section("fields as stored", safe_json(view.item.fields), "bold underline"))
            shown = ("", "")
        if view.notes:
            body.append_text(section("notes", "\n".join(view.notes), "bold yellow"))
        fields.update(body)
        response.update(section("response under test", shown[0], "bold cyan") if shown[0] else "")
        reference.update(section("reference", shown[1], "bold green") if shown[1] else "")
        self.scroll_home(animate=False)
