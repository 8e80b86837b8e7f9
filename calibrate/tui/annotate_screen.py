"""The main screen: the item, the response under test, the reference, the judge's verdict and
the rendered prompt; one key to confirm, override, label, skip, flag or undo. Each decision is
committed to SQLite (through the session) before the next item is shown. When another writer
holds the database (a long import, a judge run), the write waits on a worker thread and the
status line says so; keys wait meanwhile, and the decision is confirmed only once committed."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer

from calibrate.display import safe
from calibrate.session import AnnotationSession, ItemView, SessionError
from calibrate.store import DatabaseBusy
from calibrate.tui.item_panel import ItemPanel
from calibrate.tui.prompt_panel import PromptPanel
from calibrate.tui.score_form import ScoreForm
from calibrate.tui.stats_screen import StatsScreen
from calibrate.tui.status_bar import StatusBar
from calibrate.tui.text_prompt import TextPrompt
from calibrate.tui.text_screen import TextScreen
from calibrate.tui.verdict_panel import VerdictPanel

T = TypeVar("T")


def _stop_waiting_here(seconds: float) -> None:
    """on_wait on the app's own thread: do not freeze the screen, hand the write to a worker."""
    raise DatabaseBusy


DIGIT_BINDINGS = [
    Binding(str(k), f"label_index({k - 1})", f"label {k}", show=False, id=f"annotate.label_{k}") for k in range(1, 10)
]


class AnnotateScreen(Screen):
    BINDINGS = [
        Binding("enter,space", "confirm", "confirm", id="annotate.confirm"),
        Binding("y", "label_yes", "yes", id="annotate.yes"),
        Binding("n", "label_no", "no", id="annotate.no"),
        *DIGIT_BINDINGS,
        Binding("e", "scores", "scores", id="annotate.scores"),
        Binding("o", "override", "override", id="annotate.override"),
        Binding("s", "skip", "skip", id="annotate.skip"),
        Binding("f", "flag", "flag", id="annotate.flag"),
        Binding("u", "undo", "undo", id="annotate.undo"),
        Binding("a", "note", "note", id="annotate.note"),
        Binding("left,j", "previous", "prev", id="annotate.previous"),
        Binding("right,k", "next", "next", id="annotate.next"),
        Binding("p", "toggle_prompt", "prompt", show=False, id="annotate.prompt"),
        Binding("slash", "filter", "filter", id="annotate.filter"),
        Binding("t", "stats", "stats", id="annotate.stats"),
        Binding("g", "guidelines", "guide", id="annotate.guidelines"),
        Binding("question_mark", "help", "help", id="annotate.help"),
        Binding("q", "quit_app", "quit", id="annotate.quit"),
    ]

    def __init__(self, session: AnnotationSession):
        super().__init__()
        self.session = session
        self.view: ItemView | None = None
        self.revealed: set[int] = set()
        self.saving = False

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Horizontal(id="main"):
            yield ItemPanel(id="item")
            yield VerdictPanel(id="verdict")
        yield PromptPanel(id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.write(self.session.start, self.show)

    # -- writing: at once when the database is free, else on a worker thread that waits --------

    def write(self, work: Callable[[], T], done: Callable[[T], None]) -> None:
        """Run `work` (which writes) and hand its result to `done`. If another writer holds the
        database, nothing is written here: a worker thread waits for it, the status line shows
        the wait, and `done` runs once the write is committed."""
        if self.saving:
            self.notify("still waiting to save the previous action", severity="warning")
            return
        store = self.session.store
        store.on_wait = _stop_waiting_here
        busy = False
        try:
            result = work()
        except DatabaseBusy:
            busy = True
        except SessionError as exc:
            self.notify(safe(str(exc)), severity="warning", timeout=4, markup=False)
            return
        finally:
            store.on_wait = None
        if busy:
            self.saving = True
            self.query_one(StatusBar).waiting(0.0)
            self._write_waiting(work, done)
            return
        done(result)

    @work(thread=True, exclusive=True, group="write")
    def _write_waiting(self, work: Callable[[], T], done: Callable[[T], None]) -> None:
        store = self.session.store
        store.on_wait = lambda seconds: self.app.call_from_thread(self.query_one(StatusBar).waiting, seconds)
        try:
            result = work()
        except SessionError as exc:
            message = safe(str(exc))
            self.app.call_from_thread(self._written, lambda _: self.notify(message, severity="warning", markup=False), None)
        else:
            self.app.call_from_thread(self._written, done, result)
        finally:
            store.on_wait = None

    def _written(self, done: Callable, result) -> None:
        self.saving = False
        done(result)
        self.query_one(StatusBar).waiting(None)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """While a write waits for the database every key waits too (nothing is lost: the
        decision already made is saved first)."""
        return not self.saving

    # -- drawing -----------------------------------------------------------------------------

    def show(self, view: ItemView | None) -> None:
        self.view = view
        hidden = self.session.blind and view is not None and view.item.id not in self.revealed and view.current_label is None
        self.query_one(StatusBar).show(view, self.session.progress(), self.session.last_decision, self.session.blind)
        self.query_one(ItemPanel).show(view)
        self.query_one(VerdictPanel).show(view, hidden)
        self.query_one(PromptPanel).show(view)

    def decide(self, action: str, label: str | None = None) -> None:
        def save():
            decision = self.session.decide(action, label)
            self.revealed.add(decision.item_id)
            return self.session.forward()

        self.write(save, self.show)

    # -- actions -----------------------------------------------------------------------------

    def action_confirm(self) -> None:
        if self.view is not None and self.view.is_scores and self.session.blind:
            self.action_scores()
            return
        self.decide("confirm")

    def _binary(self, index: int) -> None:
        if self.view is None:
            return
        if not self.view.is_yes_no:
            hint = "e for the score form" if self.view.is_scores else "digits: " + ", ".join(
                f"{k} {c}" for k, c in enumerate(self.view.choices, 1))
            self.notify(f"y/n are for yes/no tasks; here use {hint}", severity="warning")
            return
        self.decide("label", self.view.choices[index])

    def action_label_yes(self) -> None:
        self._binary(0)

    def action_label_no(self) -> None:
        self._binary(1)

    def action_label_index(self, index: int) -> None:
        if self.view is None:
            return
        if index >= len(self.view.choices):
            choices = ", ".join(f"{k} {c}" for k, c in enumerate(self.view.choices, 1))
            self.notify(f"labels here: {choices}" if choices else "this task takes scores: press e", severity="warning")
            return
        self.decide("label", self.view.choices[index])

    def action_scores(self) -> None:
        if self.view is None or not self.view.is_scores:
            self.notify("the score form is for rubric tasks", severity="warning")
            return
        start = None if self.session.blind else self.view.verdict

        def done(scores: str | None) -> None:
            if scores is not None:
                self.decide("label", scores)

        self.app.push_screen(ScoreForm(self.view.kind, start), done)

    def action_override(self) -> None:
        self.decide("override")

    def action_skip(self) -> None:
        self.decide("skip")

    def action_flag(self) -> None:
        self.decide("flag")

    def action_undo(self) -> None:
        def undone(view: ItemView | None) -> None:
            if view is None:
                self.notify("nothing to undo", severity="information")
                return
            self.notify(f"undone: item #{view.item.id} is back (the reversal is recorded)")
            self.show(view)

        self.write(self.session.undo, undone)

    def action_note(self) -> None:
        if self.view is None:
            return

        def done(text: str | None) -> None:
            if text:
                self.write(lambda: self.session.note(text), lambda _: (self.show(self.session.current()),
                                                                       self.notify("note saved")))

        self.app.push_screen(TextPrompt(f"Note on item #{self.view.item.id}", "what should others know?"), done)

    def action_previous(self) -> None:
        self.show(self.session.back())

    def action_next(self) -> None:
        self.write(self.session.forward, self.show)

    def action_toggle_prompt(self) -> None:
        panel = self.query_one(PromptPanel)
        panel.collapsed = not panel.collapsed

    def action_filter(self) -> None:
        current = " ".join(f"{k}={v}" for k, v in (("task", self.session.task), ("lang", self.session.lang)) if v)

        def done(text: str | None) -> None:
            if text is None:
                return
            try:
                self.app.refilter(text)
            except ValueError as exc:
                self.notify(safe(str(exc)), severity="error", markup=False)

        self.app.push_screen(TextPrompt("Filter: task=… lang=… (empty for all)", "task=c3/pause lang=zh", current), done)

    def action_stats(self) -> None:
        self.app.push_screen(StatsScreen(self.session.store.path, self.session.templates, self.session.judge))

    def action_guidelines(self) -> None:
        if self.view is None:
            return
        template = self.view.template
        text = self.app.guidelines_for(template)
        choices = ", ".join(f"{k} {c}" for k, c in enumerate(self.view.choices, 1)) or "scores (e)"
        self.app.push_screen(TextScreen(f"Guidelines: {self.view.item.task} ({self.view.item.lang})",
                                        Text(safe(f"{text}\n\nlabels: {choices}"))))

    def action_help(self) -> None:
        lines = Text()
        for binding in self.BINDINGS:
            keys = self.app.keymap_for(binding)
            lines.append(f"{keys:<16}", style="bold")
            lines.append(f"{binding.description:<10} ({binding.id})\n")
        lines.append("\nEnter confirms the judge's verdict; y/n or digits give your own label (also in blind mode); "
                     "o flips a yes/no verdict; e opens the score form on rubric items. Every decision is saved "
                     "at once; u appends a reversal. Remap keys in a TOML file named by $CALIBRATE_KEYMAP, "
                     'e.g. "annotate.next" = "right,l".')
        self.app.push_screen(TextScreen("Keys", lines))

    def action_quit_app(self) -> None:
        self.app.exit()
