"""Judge prompt templates: the seed documents' prompts as data files, and their strict rendering.

Templates live in `templates/<family>/` beside a `manifest.toml` that says, per template, the
task ids it serves, its language, system prompt, required fields and verdict kind. Rendering
uses Jinja2 with StrictUndefined, no HTML escaping and whitespace kept exactly as written, so
a prompt is byte-for-byte what the seed says. A template's version is the hash of its text
and system prompt: editing a file makes a new version, and old judgments keep theirs.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import jinja2

from calibrate.kinds import KIND_NAMES, VerdictKind, kind_for
from calibrate.model import CalibrateError, digest
from calibrate.resources import bundled
from calibrate.validate import FIELD_TYPES

LANGS = ("en", "zh")
TEMPLATES_HINT = "a task of your own needs its template folder: --templates DIR"
UNDECLARED_TYPE = "text"
"""The type of a required field the manifest's [fields] does not declare."""


class TemplateError(CalibrateError, ValueError):
    """A template that cannot render (missing field) or a manifest that does not make sense."""


_ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=True,
    trim_blocks=False,
    lstrip_blocks=False,
)


@dataclass(frozen=True)
class Template:
    """One judge prompt: the manifest entry and its files."""

    id: str
    family: str
    lang: str
    tasks: tuple[str, ...]
    required: tuple[str, ...]
    verdict: str
    labels: tuple[str, ...] = ()
    reference: str | None = None
    response: str = "response"
    guidelines: str = ""
    hidden_fields: tuple[str, ...] = ()
    vars: dict = field(default_factory=dict, hash=False, compare=False)
    field_types: dict = field(default_factory=dict, hash=False, compare=False)  # field -> "text" | "list of text" | "object" | "a or b"
    text: str | None = None
    system: str | None = None
    source: str = ""

    @property
    def kind(self) -> VerdictKind:
        """What this template's verdicts (and the human labels beside them) mean."""
        return kind_for(self.verdict, self.labels)

    @property
    def has_prompt(self) -> bool:
        return self.text is not None

    @cached_property
    def version(self) -> str:
        """Content hash of the prompt and system prompt: the template's version."""
        return digest(self.text or "", self.system or "")[:12]

    @cached_property
    def _compiled(self) -> jinja2.Template:
        return _ENV.from_string(self.text or "")

    def render(self, task: str, fields: dict) -> RenderedPrompt:
        """Render the user prompt for an item of `task` with these fields."""
        if self.text is None:
            raise TemplateError(f"template {self.id}: task {task} has no judge prompt; humans decide it")
        missing = [name for name in self.required if name not in fields]
        if missing:
            raise TemplateError(f"template {self.id}: missing field {missing[0]!r}")
        context = {**fields, **self.vars.get(task, {})}
        try:
            user = self._compiled.render(context)
        except jinja2.UndefinedError as exc:
            raise TemplateError(f"template {self.id}: missing field ({exc.message})") from exc
        except (TypeError, IndexError) as exc:
            raise TemplateError(f"template {self.id}: fields do not fit the template ({exc})") from exc
        return RenderedPrompt(self, self.system, user)


@dataclass(frozen=True)
class RenderedPrompt:
    template: Template
    system: str | None
    user: str

    def messages(self) -> list[dict]:
        out = [{"role": "system", "content": self.system}] if self.system else []
        return [*out, {"role": "user", "content": self.user}]

    def as_text(self) -> str:
        if self.system:
            return f"[system]\n{self.system}\n\n[user]\n{self.user}"
        return self.user


class TemplateSet:
    """Every template from the bundled folder and any user folders (the `templates` setting);
    later folders win the default choice for a (task, language)."""

    def __init__(self, folders: Iterable[Path] = ()):
        self.templates: dict[str, Template] = {}
        self._default: dict[tuple[str, str], str] = {}
        for folder in [bundled("templates"), *(folders or ())]:
            self.add_folder(Path(folder))

    def add_folder(self, folder: Path) -> None:
        manifests = sorted(folder.glob("*/manifest.toml")) + sorted(folder.glob("manifest.toml"))
        if not manifests:
            raise TemplateError(f"{folder}: no manifest.toml found (expected <family>/manifest.toml)")
        for manifest in manifests:
            self._load_manifest(manifest)

    def _load_manifest(self, path: Path) -> None:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise TemplateError(f"{path}: {exc}") from exc
        family = data.get("family") or path.parent.name
        is_default = data.get("default", True)
        family_types = data.get("fields", {})
        for n, entry in enumerate(data.get("template", []), 1):
            where = f"{path} template #{n}"
            for key in ("id", "lang", "tasks", "verdict"):
                if key not in entry:
                    raise TemplateError(f"{where}: missing {key!r}")
            if entry["verdict"] not in KIND_NAMES:
                raise TemplateError(f"{where}: unknown verdict kind {entry['verdict']!r}; verdict kinds: "
                                    f"{', '.join(KIND_NAMES)} (label_set takes `labels`)")
            if entry["lang"] not in LANGS:
                raise TemplateError(f"{where}: unknown language {entry['lang']!r}")
            declared_types = {**family_types, **entry.get("fields", {})}
            for name, declared in declared_types.items():
                if not isinstance(declared, str) or any(t not in FIELD_TYPES for t in declared.split(" or ")):
                    raise TemplateError(f"{where}: field {name!r} has type {declared!r}; use {', '.join(FIELD_TYPES)}")
            field_types = {**dict.fromkeys(entry.get("required", ()), UNDECLARED_TYPE), **declared_types}
            template = Template(
                id=entry["id"],
                family=family,
                lang=entry["lang"],
                tasks=tuple(entry["tasks"]),
                required=tuple(entry.get("required", ())),
                verdict=entry["verdict"],
                labels=tuple(entry.get("labels", ())),
                reference=entry.get("reference"),
                response=entry.get("response", "response"),
                guidelines=entry.get("guidelines", ""),
                hidden_fields=tuple(entry.get("hidden_fields", ())),
                vars=entry.get("vars", {}),
                field_types=field_types,
                text=_read(path.parent, entry.get("file"), where),
                system=_read(path.parent, entry.get("system"), where),
                source=str(path),
            )
            self.templates[template.id] = template
            if is_default:
                for task in template.tasks:
                    self._default[(task, template.lang)] = template.id

    def get(self, template_id: str) -> Template:
        try:
            return self.templates[template_id]
        except KeyError:
            raise TemplateError(f"unknown template {template_id!r}; see `calibrate templates list`") from None

    def for_task(self, task: str, lang: str, family: str | None = None) -> Template:
        """The template that serves (task, lang): the default one, or the one of `family`."""
        if lang not in LANGS:
            raise TemplateError(f"unknown language {lang!r}: use {' or '.join(LANGS)}")
        if family:
            for template in self.templates.values():
                if template.family == family and template.lang == lang and task in template.tasks:
                    return template
            raise TemplateError(f"no {family} template serves task {task} in {lang}")
        template_id = self._default.get((task, lang))
        if template_id is None:
            raise TemplateError(f"unknown task {task!r} for language {lang!r}: no template serves it ({TEMPLATES_HINT})")
        return self.templates[template_id]

    def knows(self, task: str, lang: str) -> bool:
        return (task, lang) in self._default

    def tasks(self) -> list[tuple[str, str]]:
        return sorted(self._default)


def _read(folder: Path, name: str | None, where: str) -> str | None:
    if not name:
        return None
    path = folder / name
    if not path.is_file():
        raise TemplateError(f"{where}: file {path} does not exist")
    return path.read_text(encoding="utf-8")
