"""The rendered judge prompt, system prompt included, in a collapsible section. The text is
filled only while the section is open, so moving between items stays fast."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Collapsible, Static
from textual.widgets.collapsible import CollapsibleTitle

from calibrate.display import PAGE_CHARS
from calibrate.escape import safe
from calibrate.item_view import ItemView
from calibrate.templates import TemplateError
from calibrate.tui.reading_pane import ReadingPane


class PromptPanel(Collapsible):
    DEFAULT_CSS = """
    PromptPanel #prompt-scroll { max-height: 40vh; }
    """

    def __init__(self, **kwargs):
        super().__init__(ReadingPane(Static(id="prompt-text", markup=False), id="prompt-scroll"),
                         title="judge prompt (p)", collapsed=True, **kwargs)
        self._view: ItemView | None = None

    def on_mount(self) -> None:
        self.query_one(CollapsibleTitle).can_focus = False  # p opens it; Enter stays "confirm"

    def show(self, view: ItemView | None) -> None:
        self._view = view
        if not self.collapsed:
            self._fill()

    def on_collapsible_expanded(self) -> None:
        self._fill()

    def _fill(self) -> None:
        text = self.query_one("#prompt-text", Static)
        try:
            prompt = self._view.prompt() if self._view else None
        except TemplateError as exc:  # the task has a judge prompt, which this item's fields cannot fill
            text.update(Text(safe(f"(the judge prompt cannot be rendered: {exc})"), style="bold red"))
            return
        if prompt is None:
            judged = self._view is not None and self._view.template.stored_prompts
            text.update(Text("(no prompt was stored with this judgment)" if judged else
                             "(this task has no judge prompt: humans decide it)", style="dim"))
            return
        body = Text()
        if prompt.system:
            body.append("system\n", style="bold")
            body.append(safe(prompt.system) + "\n\n")
        body.append("user\n", style="bold")
        body.append(safe(prompt.user[:PAGE_CHARS]))
        if len(prompt.user) > PAGE_CHARS:
            body.append(f"\n… {len(prompt.user) - PAGE_CHARS:,} more characters (calibrate render shows all)",
                        style="bold magenta")
        text.update(body)
