"""The lines above the item: the active filter, where you are (task, language, item), how far
along (labels only: skips and flags are not labels), what happened to your last decision (the
blind-mode reveal), and, while another writer holds the database, that a decision waits."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from calibrate.escape import safe
from calibrate.session import AnnotationSession, ItemView


class StatusBar(Static):
    _text = Text()

    def waiting(self, seconds: float | None) -> None:
        """Say that a write waits for another writer to release the database (None: done)."""
        text = self._text.copy()
        if seconds is not None:
            text.append(f"\n saving… waiting {seconds:.0f} s for the database (another writer holds it); "
                        "your decision is not saved yet", style="bold yellow")
        self.update(text)

    def show(self, view: ItemView | None, session: AnnotationSession) -> None:
        progress, last = session.progress(), session.last_decision
        text = Text()
        text.append(safe(f" {session.filter_text() or 'all items'} "), style="bold reverse")
        if view is not None:
            item = view.item
            if not session.task:
                text.append(f" {safe(item.task)}", style="bold")
            if not session.lang:
                text.append(f" {safe(item.lang)}", style="bold")
            text.append(f" #{item.id} ", style="bold")
            text.append(safe(f"({item.source_id})"), style="dim")
        else:
            text.append(" queue finished ", style="bold")
        text.append(f"  labelled {progress.labelled}/{progress.total}")
        if progress.per_hour is not None:
            text.append(f" · {progress.per_hour:.0f}/h")
        if session.blind:
            text.append("  BLIND", style="bold magenta")
        if view is not None and view.current_label is not None:
            text.append(f"  yours: {safe(view.current_label)}", style="bold cyan")
        if last is not None:
            text.append("\n")
            text.append(f" last: #{last.item_id} {last.action}")
            if last.label is not None:
                text.append(f" → {safe(last.label)}")
            if last.judge_verdict is not None and last.action not in ("skip", "flag"):
                mark, style = ("✓ agrees", "green") if last.agrees else ("✗ differs", "red")
                text.append(f"   judge said {safe(last.judge_verdict)} ", style="dim")
                text.append(mark, style=f"bold {style}")
        if view is None:
            text.append(f"\n {session.finished_summary()}. k goes back.")
        self._text = text
        self.update(text)
