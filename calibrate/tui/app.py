"""The calibrate annotation app: one annotator, one database, one queue."""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.app import App
from textual.binding import Binding

from calibrate.session import AnnotationSession
from calibrate.store import Store
from calibrate.templates import Template, TemplateSet
from calibrate.tui.annotate_screen import AnnotateScreen


class CalibrateApp(App):
    TITLE = "calibrate"
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
        judge: str | None = None,
        blind: bool = False,
        order: str = "in-order",
        overlap: int = 1,
        seed: int = 0,
        guidelines_file: Path | None = None,
        keymap_file: Path | None = None,
        tab: str | None = None,
    ):
        super().__init__()
        self.db_path = db_path
        self.store = Store(db_path)
        self.templates = templates or TemplateSet()
        self.options = {"annotator": annotator, "judge": judge, "blind": blind, "order": order, "overlap": overlap, "seed": seed,
                        "tab": tab}
        self.guidelines_file = guidelines_file
        self.session = self._session(task, lang)
        self._keymap = self._load_keymap(Path(keymap_file)) if keymap_file else {}

    def _session(self, task: str | None, lang: str | None) -> AnnotationSession:
        return AnnotationSession(self.store, self.templates, task=task, lang=lang, **self.options)

    @staticmethod
    def _load_keymap(path: Path) -> dict[str, str]:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in data.get("keymap", data).items()}

    def on_mount(self) -> None:
        if self._keymap:
            self.set_keymap(self._keymap)
        self.push_screen(AnnotateScreen(self.session))

    def keymap_for(self, binding: Binding) -> str:
        return self._keymap.get(binding.id or "", binding.key)

    def guidelines_for(self, template: Template) -> str:
        if self.guidelines_file and self.guidelines_file.is_file():
            return self.guidelines_file.read_text(encoding="utf-8")
        return template.guidelines or "No guidelines in the template manifest for this task."

    def refilter(self, text: str) -> None:
        """Start a new queue from a filter like 'task=c3/pause lang=zh'."""
        values = {"task": None, "lang": None}
        for token in text.split():
            key, _, value = token.partition("=")
            if key not in values or not value:
                raise ValueError(f"unknown filter {token!r}: use task=… and lang=…")
            values[key] = value
        self.session.close()
        self.session = self._session(values["task"], values["lang"])
        self.pop_screen()
        self.push_screen(AnnotateScreen(self.session))

    def on_unmount(self) -> None:
        self.session.close()
        self.store.close()
