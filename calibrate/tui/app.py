"""The calibrate annotation app: one annotator, one database, one queue."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections import Counter
from pathlib import Path

from textual.app import App
from textual.binding import Binding
from textual.driver import Driver

from calibrate.model import LEFT_WAIT
from calibrate.names import closest, listing
from calibrate.session import AnnotationSession
from calibrate.store import DatabaseBusy, DatabaseFault, Store, UnknownFilter, stop_waiting
from calibrate.templates import Template, TemplateSet
from calibrate.tui.annotate_screen import AnnotateScreen
from calibrate.tui.item_picker_screen import ItemPickerScreen
from calibrate.tui.keys import key_problem, typed_key, typed_keys
from calibrate.tui.score_form import ScoreForm
from calibrate.tui.stats_screen import StatsScreen
from calibrate.tui.text_prompt import TextPrompt
from calibrate.tui.text_screen import TextScreen
from calibrate.user_files import UserFileError, read_keymap, read_text_file

SCREENS = (AnnotateScreen, ItemPickerScreen, ScoreForm, StatsScreen, TextPrompt, TextScreen)


def binding_keys(keymap: dict[str, str], binding: Binding) -> list[str]:
    """The key names of a binding, after `keymap`'s remapping."""
    return [k.strip() for k in keymap.get(binding.id or "", binding.key).split(",") if k.strip()]


def checked_keymap(path: Path | str, keymap: dict[str, str] | None = None) -> dict[str, str]:
    """The keymap file at `path` (`read_keymap`, unless `keymap` is what the caller read from
    it), or UserFileError naming it and everything `keymap_problems` finds in it."""
    keymap = read_keymap(path) if keymap is None else keymap
    if problems := keymap_problems(keymap):
        raise UserFileError(f"{path}: " + "; ".join(problems))
    return keymap


def keymap_problems(keymap: dict[str, str]) -> list[str]:
    """What a keymap gets wrong: binding ids no screen has, keys Textual would never see, and a
    key that would do two things on one screen (the one it is remapped to would win silently),
    unless the screen never lets the two work at once (its NEVER_TOGETHER sets)."""
    screens = {screen: [b for b in screen.BINDINGS if isinstance(b, Binding) and b.id] for screen in SCREENS}
    known = {b.id for bindings in screens.values() for b in bindings}
    problems = [f"unknown binding id {name!r} (? in the app lists them)" for name in keymap if name not in known]
    problems += [found for keys in keymap.values() for key in keys.split(",") if (found := key_problem(key.strip()))]
    for screen, bindings in screens.items():
        apart = getattr(screen, "NEVER_TOGETHER", ())
        owners: dict[str, list[str]] = {}
        for binding in bindings:
            for key in binding_keys(keymap, binding):
                for other in owners.setdefault(key, []):
                    if not any(binding.id in one and other in two for one in apart for two in apart if one is not two):
                        problems.append(f"{typed_key(key)} would be both {other} and {binding.id}")
                owners[key].append(binding.id)
    return problems


class CalibrateApp(App):
    TITLE = "calibrate"
    # Ctrl-C quits as q does (every decision is saved already), where Textual would only say to
    # press Ctrl-Q, which terminals over SSH often take for flow control; also in a dialog (a
    # priority binding: the note's field would take it for copy, and what is typed next for the note)
    BINDINGS = [Binding("ctrl+c", "quit", "quit", show=False, priority=True)]
    CSS_PATH = "calibrate.tcss"
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self,
        db_path: str,
        *,
        annotator: str,
        templates: TemplateSet | None = None,
        task: str | None = None,
        lang: str | None = None,
        system: str | None = None,
        judge: str | None = None,
        blind: bool = False,
        order: str = "in-order",
        overlap: int = 1,
        seed: int = 0,
        guidelines_file: Path | None = None,
        keymap_file: Path | None = None,
        keymap: dict[str, str] | None = None,
        require_listen: bool = False,
        audio_root: Path | None = None,
        tab: str | None = None,
        session: AnnotationSession | None = None,
    ):
        """`session`: the session of these options, where the caller has made it already
        (`calibrate annotate` does, before importing Textual, so that its first reads go on
        during the import); its store is the app's. `keymap`: what `keymap_file` holds, where the
        caller has read it already (`calibrate annotate` does, to refuse it before the app)."""
        super().__init__()
        self.db_path = db_path
        self.store = session.store if session is not None else Store(db_path)
        self.templates = templates or TemplateSet()
        self.options = {"annotator": annotator, "judge": judge, "blind": blind, "order": order, "overlap": overlap, "seed": seed,
                        "require_listen": require_listen, "audio_root": audio_root, "tab": tab}
        self.guidelines_file = guidelines_file
        self.session = session if session is not None else self._session(task, lang, system)
        self.saved_before: Counter[str] = Counter()  # what this run saved in queues left by a filter change
        self.fault: DatabaseFault | None = None  # the damage that ended the app (`end_on`)
        self.held_back = False  # whether the held items could not be given back as the app ended (another writer)
        self.lost: str | None = None  # what waited for another writer as the app ended, and was not saved
        self._keymap = checked_keymap(keymap_file, keymap) if keymap_file else {}

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for where the app runs, in a terminal one whose output may go away
        (`TerminalDriver`: a closed terminal ends the app instead of leaving it waiting)."""
        chosen = super().get_driver_class()
        if sys.platform == "win32":  # (Textual's Linux driver, and termios, are not there)
            return chosen
        from textual.drivers.linux_driver import LinuxDriver

        from calibrate.tui.terminal_driver import TerminalDriver

        return TerminalDriver if chosen is LinuxDriver else chosen

    def _session(self, task: str | None, lang: str | None, system: str | None) -> AnnotationSession:
        return AnnotationSession(self.store, self.templates, task=task, lang=lang, system=system, **self.options)

    @property
    def saved(self) -> Counter[str]:
        """What this run saved, across filter changes: labels, changed labels, skips, flags, undos, notes."""
        return self.saved_before + self.session.saved

    def on_mount(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # no such signal, or not the main thread
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.leave)
        if self._keymap:
            self.set_keymap(self._keymap)
        self.push_screen(AnnotateScreen(self.session))

    def leave(self) -> None:
        """The person left: the terminal closed (a dropped SSH connection, a killed pane) or the
        browser tab (`calibrate serve`, through `TabDriver`). Leave as q does, giving the held
        items back to the other annotators at once instead of when their leases expire. A
        decision that waits for another writer is saved first, as after q, if that writer is done
        within LEFT_WAIT seconds (in a terminal no one is left to be told it was not; serve, told
        what waits (`unsaved`), waits as long for a tab's app and names it in its log if it was not)."""
        screen = next((s for s in self.screen_stack if isinstance(s, AnnotateScreen)), None)
        if screen is None or not screen.saving:
            self.exit()
            return
        screen.action_quit_app()
        self.set_timer(LEFT_WAIT, self.exit)

    def unsaved(self, what: str | None) -> None:
        """Say what the person did that waits for another writer (None: nothing now) to whoever
        waits for it: `calibrate serve`, through a browser tab's driver (`TabDriver.unsaved`),
        which then gives a closed tab's app the time to save it. A terminal has no one to tell."""
        tell = getattr(self._driver, "unsaved", None)
        if tell is not None:
            tell(what)

    def end_on(self, fault: DatabaseFault) -> None:
        """End the app on a damaged database file: every later decision would fail too. The
        command that ran the app then says so (the fault's message) and exits 1."""
        self.fault = fault
        self.exit(return_code=1)

    def _handle_exception(self, error: Exception) -> None:
        """A damaged database met by a read outside the saving path (going back, the flagged
        list, the statistics) ends the app as one met by a save does (`end_on`), without
        Textual's traceback; any other error goes to Textual."""
        if isinstance(error, DatabaseFault) and error.damaged:
            self.end_on(error)
        else:
            super()._handle_exception(error)

    def keys_of(self, binding: Binding) -> list[str]:
        """The key names of a binding, after any remapping."""
        return binding_keys(self._keymap, binding)

    def keymap_for(self, binding: Binding) -> str:
        """The keys of a binding as the user types them, after any remapping."""
        return typed_keys(",".join(self.keys_of(binding)))

    def guidelines_for(self, template: Template) -> str:
        if self.guidelines_file and self.guidelines_file.is_file():
            try:
                return read_text_file(self.guidelines_file)
            except UserFileError as exc:  # changed since the command checked it
                return str(exc)
        return template.guidelines or "No guidelines in the template manifest for this task."

    def filter_problem(self, text: str) -> str | None:
        """What is wrong with a filter like 'task=c3/pause lang=zh system=model-a', in a line
        (the closest known value where one was misspelt), or None."""
        try:
            values = _filter_values(text)
        except ValueError as exc:
            return str(exc)
        for what, key in (("task", "task"), ("language", "lang"), ("system", "system")):
            value = values[key]
            try:
                self.store.check_filter(**{key: value})
            except UnknownFilter:
                known = self.store.known(what)
                match = closest(value, known)
                if match:
                    return f"unknown {what} {value!r}: did you mean {match}?"
                return f"unknown {what} {value!r}; here: {listing(known, FILTER_VALUES_SHOWN)}"
        return None

    def refilter(self, text: str) -> None:
        """Start a new queue from a filter like 'task=c3/pause lang=zh system=model-a'; ValueError
        (the current queue untouched) for a filter that is malformed or matches nothing."""
        problem = self.filter_problem(text)
        if problem:
            raise ValueError(problem)
        values = _filter_values(text)
        self.session.close()
        self.saved_before += self.session.saved
        earlier, self.session = self.session, self._session(values["task"], values["lang"], values["system"])
        self.session.follows(earlier)
        self.pop_screen()
        self.push_screen(AnnotateScreen(self.session))

    def on_unmount(self) -> None:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
        self.store.on_wait = stop_waiting  # leaving (q pressed twice, Ctrl-C, a closed terminal) waits for no writer
        try:
            self.session.close()
        except DatabaseBusy:
            self.held_back = True
        finally:
            self.store.on_wait = None
            self.store.close()


FILTER_VALUES_SHOWN = 4  # a filter error names the closest value and a few valid ones, in one line


def _filter_values(text: str) -> dict[str, str | None]:
    """task, lang and system of a filter ('task=c3/pause lang=zh'); ValueError if malformed."""
    values: dict[str, str | None] = {"task": None, "lang": None, "system": None}
    for token in text.split():
        key, _, value = token.partition("=")
        if key not in values or not value:
            raise ValueError(f"unknown filter {token!r}: use task=…, lang=… and system=…")
        values[key] = value
    return values
