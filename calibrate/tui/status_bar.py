"""The line above the item: where you are (task, language, item), how far along, and what
happened to your last decision (the blind-mode reveal)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from calibrate.display import safe
from calibrate.session import Decision, ItemView, Progress


class StatusBar(Static):
    _text = Text()

    def waiting(self, seconds: float | None) -> None:
        """Say that a write waits for another writer to release the database (None: done)."""
        text = self._text.copy()
        if seconds is not None:
            text.append(f"\n saving… waiting {seconds:.0f} s for the database (another writer holds it); "
                        "your decision is not saved yet", style="bold yellow")
        self.update(text)

    def show(self, view: ItemView | None, progress: Progress, last: Decision | None, blind: bool) -> None:
        text = Text()
        if view is not None:
            item = view.item
            text.append(f" {safe(item.task)} ", style="bold reverse")
            text.append(f" {safe(item.lang)} ", style="bold")
            text.append(f"item #{item.id} ", style="bold")
            text.append(safe(f"({item.source_id})"), style="dim")
        else:
            text.append(" queue finished ", style="bold reverse")
        text.append(f"   labelled {progress.decided}/{progress.total}")
        if progress.per_hour is not None:
            text.append(f" · {progress.per_hour:.0f} items/h")
        if blind:
            text.append("   BLIND", style="bold magenta")
        if view is not None and view.current_label is not None:
            text.append(f"   your label: {safe(view.current_label)}", style="bold cyan")
        if last is not None:
            text.append("\n")
            text.append(f" last: #{last.item_id} {last.action}")
            if last.label is not None:
                text.append(f" → {safe(last.label)}")
            if last.judge_verdict is not None and last.action not in ("skip", "flag"):
                agrees = last.agrees
                mark, style = ("✓ agrees", "green") if agrees else ("✗ differs", "red")
                text.append(f"   judge said {safe(last.judge_verdict)} ", style="dim")
                text.append(mark, style=f"bold {style}")
        self._text = text
        self.update(text)
