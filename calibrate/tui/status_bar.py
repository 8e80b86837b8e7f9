"""The lines above the item: the active filter, where you are (task, language, item), how far
along (labels only: skips and flags are not labels), and what happened to your last decision
(the blind-mode reveal)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from calibrate.display import literal
from calibrate.session import AnnotationSession, ItemView


class StatusBar(Static):
    def show(self, view: ItemView | None, session: AnnotationSession) -> None:
        progress, last = session.progress(), session.last_decision
        text = Text()
        text.append(literal(f" {session.filter_text() or 'all items'} "), style="bold reverse")
        if view is not None:
            item = view.item
            if not session.task:
                text.append(f" {item.task}", style="bold")
            if not session.lang:
                text.append(f" {item.lang}", style="bold")
            text.append(f" #{item.id} ", style="bold")
            text.append(literal(f"({item.source_id})"), style="dim")
        else:
            text.append(" queue finished ", style="bold")
        text.append(f"  labelled {progress.labelled}/{progress.total}")
        if progress.per_hour is not None:
            text.append(f" · {progress.per_hour:.0f}/h")
        if session.blind:
            text.append("  BLIND", style="bold magenta")
        if view is not None and view.current_label is not None:
            text.append(f"  yours: {view.current_label}", style="bold cyan")
        if last is not None:
            text.append("\n")
            text.append(f" last: #{last.item_id} {last.action}")
            if last.label is not None:
                text.append(f" → {last.label}")
            if last.judge_verdict is not None and last.action not in ("skip", "flag"):
                mark, style = ("✓ agrees", "green") if last.agrees else ("✗ differs", "red")
                text.append(f"   judge said {last.judge_verdict} ", style="dim")
                text.append(mark, style=f"bold {style}")
        if view is None:
            text.append(f"\n {session.finished_summary()}. k goes back.")
        self.update(text)
