"""The lines above the item: the active filter, where you are (task, language, item), who is
labelling and how far along (labels only: skips and flags are not labels), what happened to
your last decision (the blind-mode reveal), why the item came out of the queue's order if it
did, what works instead of a key that does nothing on the item, and, while another writer holds
the database, that a decision waits. The first line always fits on one line: where the terminal
is narrow the annotator's name goes, then the item's source id loses its middle, then the rate
per hour goes. The last decision gives the judge's verdict a line of its own where both do not
fit in one; no line wraps. Labels read as words (a rubric label as its two scores, not JSON)."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text

from calibrate.escape import safe
from calibrate.fit import end_cut, middle_cut
from calibrate.item_view import Decision, ItemView
from calibrate.session import AnnotationSession
from calibrate.templates import TemplateError
from calibrate.tui.text_view import TextView

SOURCE_FLOOR = 12  # a source id shortened to fit keeps at least this many cells (else it is left out)
SCOPE_FLOOR = 6  # a filter cut to fit keeps at least this many cells


class StatusBar(TextView):
    _text = Text()
    _shown: tuple[ItemView | None, AnnotationSession] | None = None
    _wait: str | None = None  # the line saying that a write waits, while one does
    _hint: str | None = None  # what works instead of the key just pressed, until the next item is drawn

    def waiting(self, seconds: float | None, pending: str = "") -> None:
        """Say that a write waits for another writer to release the database, and what is
        `pending` meanwhile (seconds None: done). The line stays through every redraw until then."""
        self._wait = None if seconds is None else f"waiting {seconds:.0f} s for another writer: {pending}"
        self.show_text(self._with_hint_and_wait(self._text))

    def hint(self, line: str | None) -> None:
        """Say in one line what works on the item instead of a key that does nothing on it (None:
        no more: a key that works was pressed); the line goes when an item is drawn again."""
        if line != self._hint:
            self._hint = line
            self.show_text(self._with_hint_and_wait(self._text))

    def _with_hint_and_wait(self, text: Text) -> Text:
        if self._wait is None and self._hint is None:
            return text
        text = text.copy()
        if self._hint is not None:
            text.append("\n")
            text.append_text(self._fitted(Text(f" {safe(self._hint)}", style="yellow")))
        if self._wait is not None:
            text.append(f"\n {self._wait}", style="bold yellow")
        return text

    def _fitted(self, line: Text) -> Text:
        """`line` cut to the bar's width, with an ellipsis: it never wraps to the next line."""
        line.truncate(self.size.width or self.app.size.width, overflow="ellipsis")
        return line

    def on_resize(self) -> None:
        self.show_again()

    def show_again(self) -> None:
        """Draw the item last shown again, with the session's counts as they are now (and the
        hint, if any: the line it adds resizes the bar)."""
        if self._shown is not None:
            self._draw(*self._shown)

    def show(self, view: ItemView | None, session: AnnotationSession) -> None:
        self._hint = None
        self._draw(view, session)

    def _draw(self, view: ItemView | None, session: AnnotationSession) -> None:
        self._shown = (view, session)
        progress, last = session.progress(), session.last_decision
        text = self._first_line(view, session, progress)
        if last is not None:
            text.append("\n")
            text.append_text(self._last_lines(session, view, last))
        note = session.queue_note(view.item.id) if view is not None else None
        if note:
            text.append(f"\n {note}", style="yellow")
        if view is None:
            text.append(f"\n {session.finished_summary()}. k goes back.")
        self._text = text
        self.show_text(self._with_hint_and_wait(text))

    def _last_lines(self, session: AnnotationSession, view: ItemView | None, last: Decision) -> Text:
        """Your last decision, and what the judge said of that item: in one line where it fits,
        else the judge's part on a line of its own, under the item's number."""
        words = _words_for(session, view, last.item_id)
        yours = Text(f" last: #{last.item_id} {last.action}")
        if last.label is not None:
            yours.append(f" → {safe(words(last.label))}")
        if last.judge_verdict is None or last.action in ("skip", "flag"):
            return self._fitted(yours)
        mark, style = ("✓ agrees", "green") if last.agrees else ("✗ differs", "red")
        judge = Text.assemble((f"judge said {safe(words(last.judge_verdict))} ", "dim"), (mark, f"bold {style}"))
        width = self.size.width or self.app.size.width
        if cell_len(yours.plain) + 3 + cell_len(judge.plain) <= width:
            return Text.assemble(yours, "   ", judge)
        return Text.assemble(self._fitted(yours), "\n", self._fitted(Text.assemble(" " * len(" last: "), judge)))

    def _first_line(self, view: ItemView | None, session: AnnotationSession, progress) -> Text:
        """Filter, item, who labels, progress and your label in one line of the bar's width. Where
        it is too narrow the name of who labels goes first, then the source id gives way
        (shortened in its middle, then left out), then the pace, then the filter (cut at its
        end): your label and the progress always show."""
        width = self.size.width or self.app.size.width
        item = Text()
        if view is not None:
            if not session.task:
                item.append(f" {safe(view.item.task)}", style="bold")
            if not session.lang:
                item.append(f" {safe(view.item.lang)}", style="bold")
            item.append(f" #{view.item.id} ", style="bold")
        else:
            item.append(" queue finished ", style="bold")
        labelled = f"labelled {progress.labelled}/{progress.total}"
        tail = Text(f"  {labelled}")
        rate = f" · {progress.per_hour:.0f}/h" if progress.per_hour is not None else ""
        marks = Text()
        if session.blind:
            marks.append("  BLIND", style="bold magenta")
        if view is not None and view.current_label is not None:
            yours = view.kind.words(view.current_label) if view.is_scores else view.current_label
            marks.append(f"  yours: {safe(yours)}", style="bold cyan")
        scope = safe(f" {session.filter_text() or 'all items'} ")
        source = safe(f"({view.item.source_id})") if view is not None else ""
        room = width - sum(cell_len(part) for part in (scope, item.plain, tail.plain, marks.plain))
        name = f"{safe(session.annotator)} "  # who labels ("  ana labelled 3/62"), where it fits whole beside the rest
        if cell_len(name) + cell_len(source) + cell_len(rate) <= room:
            tail, room = Text(f"  {name}{labelled}"), room - cell_len(name)
        if cell_len(source) + cell_len(rate) > room:
            rate = ""
        source = middle_cut(source, room) if room >= min(SOURCE_FLOOR, cell_len(source)) else ""
        if room < 0:  # the filter gives way to the item, the progress and your label
            scope = end_cut(scope, max(cell_len(scope) + room, SCOPE_FLOOR))
        tail.append(rate)
        line = Text.assemble((scope, "bold reverse"), item, (source, "dim"), tail, marks, no_wrap=True,
                             overflow="ellipsis")
        line.truncate(width, overflow="ellipsis")
        return line


def _words_for(session: AnnotationSession, view: ItemView | None, item_id: int):
    """How the labels of item `item_id` read in the bar: scores as their kind's words (not
    JSON), other labels as stored."""
    if view is not None and view.item.id == item_id:
        kind = view.kind
    else:
        item = session.store.item(item_id)
        try:
            kind = session.templates.for_task(item.task, item.lang).kind
        except (TemplateError, AttributeError):
            return str
    return kind.words if kind.scored else str
