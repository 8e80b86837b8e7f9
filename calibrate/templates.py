"""Judge prompt templates: the seed documents' prompts as data files, and their strict rendering.

Templates live in `templates/<family>/` beside a `manifest.toml` that says, per template, the
task ids it serves, its language, system prompt, required fields and verdict kind. A template
that lists no tasks serves tasks that come with imported data instead (an Inspect log's task,
labelled with its scorer's values): `TemplateSet.add_data_task` gives it the task and labels. Rendering
uses Jinja2 with StrictUndefined, no HTML escaping and whitespace kept exactly as written, so
a prompt is byte-for-byte what the seed says. A template's version is the hash of its text
and system prompt: editing a file makes a new version, and old judgments keep theirs.

A template folder may come from someone else (a shared data folder), so a template is treated
as untrusted code: it is rendered in Jinja's immutable sandbox, which refuses every attribute
starting with `_` (the way out to Python's internals: `cycler.__init__.__globals__`,
`''.__class__.__mro__`, the same through `attr` or a format string) and any change to lists and
dicts, with no globals but `range` (at most 100,000 numbers) and `dict`. A user folder's templates
that name such an attribute outright are refused when loaded (the bundled ones are read as needed),
and so are templates that read another file (`include`, `import`, `from`, `extends`: a prompt is
its one file) or none of the item's fields (every item would get the same prompt, and its
verdicts would say nothing about the judge). Sizes are bounded too: a repetition, power,
`%`-format, method or filter argument, `~` join or the whole prompt that would exceed
`MAX_TEXT` characters is refused before it is built, so a template cannot fill memory, and time
is bounded: every loop iteration, call and filter counts a step, and a render past `MAX_STEPS`
steps or `MAX_SECONDS` seconds is refused, so a template cannot hang a command or the app (and
the template is then refused at once for every other item: each would take as long).
A manifest is checked as it loads: its keys known (a misspelt one names the key meant) and at
least one template, each key's type, files that stay inside the family's folder, template ids used
once across every folder, and one template per task and language in a manifest.
"""

from __future__ import annotations

import operator
import re
import string
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import jinja2
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from calibrate.kinds import KIND_NAMES, VerdictKind, kind_for
from calibrate.model import CalibrateError, Item, digest
from calibrate.names import closest
from calibrate.resources import bundled
from calibrate.user_files import read_text_file, read_toml_file
from calibrate.validate import FIELD_TYPES, InputError, check_field_type

LANGS = ("en", "zh")
REQUEST_PARAMETERS = {"temperature": (int, float), "max_tokens": int}
"""What a manifest's [request] may set for its family (see TemplateSet.request_defaults)."""
TEMPLATES_HINT = "a task of your own needs its template folder: --templates DIR"
UNDECLARED_TYPE = "text"
"""The type of a required field the manifest's [fields] does not declare."""
MANIFEST_KEYS = ("family", "description", "default", "fields", "request", "template")
"""The keys at the top of a manifest.toml (docs/templates.md says what each means)."""
ENTRY_TEXTS = ("id", "lang", "verdict", "file", "system", "reference", "response", "guidelines")
ENTRY_LISTS = ("tasks", "required", "labels", "hidden_fields")
ENTRY_KEYS = (*ENTRY_TEXTS, *ENTRY_LISTS, "fields", "vars", "stored_prompts")
"""The keys of a manifest's [[template]] entry: texts, lists of texts, and tables or a boolean."""
OTHER_FILES = {nodes.Include: "include", nodes.Import: "import", nodes.FromImport: "from", nodes.Extends: "extends"}
"""The tags that read another template file, by their syntax node."""


class TemplateError(CalibrateError, ValueError):
    """A template that cannot render (missing field) or a manifest that does not make sense."""


class _OutOfBudget(SecurityError):
    """Raised inside a render past MAX_STEPS or MAX_SECONDS (see `_step`)."""


MAX_TEXT = 32 * 1024 * 1024
"""The longest text (or list) a template may build, the whole prompt included: far beyond any
judge's context, far below what would exhaust memory."""

MAX_STEPS = 10_000_000
"""The most loop iterations, calls and filters one render may run."""
MAX_SECONDS = 5.0
"""The longest one render may run (checked every `_CLOCK_EVERY` steps)."""
_CLOCK_EVERY = 4096
_budget = threading.local()  # the render running in this thread: its steps and deadline


def _step() -> None:
    """Count one step of the current render; refuse it past MAX_STEPS or MAX_SECONDS."""
    _budget.steps += 1
    if _budget.steps % _CLOCK_EVERY == 0:
        if _budget.steps > MAX_STEPS:
            raise _OutOfBudget(f"the template ran more than {MAX_STEPS:,} loop iterations and calls")
        if time.monotonic() > _budget.deadline:
            raise _OutOfBudget(f"the template ran longer than {MAX_SECONDS:g} seconds")


_PERCENT_WIDTH = re.compile(r"%[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?")


def _too_long(size: int, what: str) -> None:
    if size > MAX_TEXT:
        raise SecurityError(f"{what} would be {size:,} long; a template may build at most {MAX_TEXT:,}")


def _sized(value, what: str):
    if isinstance(value, str | list | tuple | dict):
        _too_long(len(value), what)
    return value


def _check_widths(fmt: str) -> None:
    """Refuse a %-format or str.format string whose field widths or precisions are huge."""
    for width, precision in _PERCENT_WIDTH.findall(fmt):
        for number in (width, precision):
            if number == "*":
                raise SecurityError("a %-format width taken from the arguments (*) is not allowed in a template")
            if number:
                _too_long(int(number), "a %-format width")
    try:
        fields = list(string.Formatter().parse(fmt))
    except ValueError:
        return  # not a str.format string: formatting it raises its own error
    for _, _, spec, _ in fields:
        for number in re.findall(r"\d+", spec or ""):
            _too_long(int(number), "a format width")


def _check_arguments(name: str, target, args: tuple, kwargs: dict) -> None:
    """Before a method or filter `name` runs on `target`: refuse arguments that would build a
    huge text (a width, a count, a replacement or a join beyond MAX_TEXT)."""
    values = [*args, *kwargs.values()]
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            _too_long(abs(value), f"{name.removeprefix('safe_')}'s argument")
    if name == "replace" and isinstance(target, str) and len(args) >= 2 and all(isinstance(a, str) for a in args[:2]):
        old, new = args[:2]
        count = len(target) + 1 if old == "" else target.count(old)
        _too_long(len(target) + count * (len(new) - len(old)), "the replaced text")
    elif name == "join":
        sequence, separator = (args[0], target) if isinstance(target, str) and args else (target, args[0] if args else "")
        if isinstance(sequence, list | tuple) and isinstance(separator, str):
            _too_long(sum(len(str(v)) for v in sequence) + len(separator) * max(len(sequence) - 1, 0), "the joined text")
    elif name == "indent" and isinstance(target, str):
        width = args[0] if args else kwargs.get("width", 4)
        if isinstance(width, str):
            _too_long(len(target) + len(width) * (target.count("\n") + 1), "the indented text")
    elif name in ("format", "format_map") and isinstance(target, str):
        _check_widths(target)


def _guarded_filter(name: str, function: Callable) -> Callable:
    def guarded(*args, **kwargs):
        _step()
        value_at = 1 if getattr(function, "jinja_pass_arg", None) else 0  # context/environment comes first
        target = args[value_at] if len(args) > value_at else None
        _check_arguments(name, target, args[value_at + 1:], kwargs)
        return _sized(function(*args, **kwargs), f"the result of the {name} filter")

    if hasattr(function, "jinja_pass_arg"):  # Jinja passes the context or environment first
        guarded.jinja_pass_arg = function.jinja_pass_arg
    return guarded


def _power(base, exponent):
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        _too_long(exponent * max(abs(base).bit_length(), 1) // 3, "a power's digits")
    return operator.pow(base, exponent)


class _CodeGenerator(CodeGenerator):
    """Jinja's code generator, with `~` joined through the environment's checked `concat` and
    every loop's iterable through its counting `steps`."""

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        counted = nodes.Call(nodes.EnvironmentAttribute("steps"), [node.iter], [], None, None, lineno=node.lineno)
        super().visit_For(nodes.For(node.target, counted, node.body, node.else_, node.test, node.recursive,
                                    lineno=node.lineno), frame)

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja's immutable sandbox, with bounded sizes (see the module's docstring)."""

    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self) -> None:
        super().__init__(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True,
                         trim_blocks=False, lstrip_blocks=False)
        self.globals = {"range": self.globals["range"], "dict": dict}
        self.filters = {name: _guarded_filter(name, f) for name, f in self.filters.items()}

    @staticmethod
    def concat(parts: Iterable) -> str:
        """Join the pieces of `~` and of the prompt itself, refusing past MAX_TEXT."""
        out, size = [], 0
        for part in parts:
            text = str(part)
            size += len(text)
            _too_long(size, "the text")
            out.append(text)
        return "".join(out)

    @staticmethod
    def steps(iterable: Iterable) -> Iterable:
        """A loop's items, each counted as a step of the render."""
        for value in iterable:
            _step()
            yield value

    def call_binop(self, context, operator_name: str, left, right):
        if operator_name == "*":
            for sequence, times in ((left, right), (right, left)):
                if isinstance(sequence, str | list | tuple) and isinstance(times, int):
                    _too_long(len(sequence) * times, "a repetition")
        elif operator_name == "**":
            return _power(left, right)
        elif operator_name == "%" and isinstance(left, str):
            _check_widths(left)
        return _sized(self.binop_table[operator_name](left, right), f"the result of {operator_name}")

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's own signature)
        _step()
        if isinstance(__obj, LoopContext) and args:  # `loop(children)` in a recursive loop: counted as the loop is
            args = (__self.steps(args[0]), *args[1:])
        method = getattr(__obj, "__wrapped__", __obj)  # str.format comes wrapped by the sandbox
        _check_arguments(getattr(method, "__name__", ""), getattr(method, "__self__", None), args, kwargs)
        return _sized(super().call(__context, __obj, *args, **kwargs), "a call's result")


_ENV = _Sandbox()


def _checked_tree(source: str, where: str) -> nodes.Template:
    """A template's syntax tree, refusing syntax errors, a tag reading another file (there is
    none to read: the sandbox has no loader) and any attribute or key starting with `_` (Python's
    internals) named outright; the sandbox refuses the rest when rendering."""
    try:
        tree = _ENV.parse(source)
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"{where}: line {exc.lineno}: {exc.message}") from None
    node = next(tree.find_all(tuple(OTHER_FILES)), None)
    if node is not None:
        raise TemplateError(f"{where}: line {node.lineno}: refused: a template may not use "
                            f"{{% {OTHER_FILES[type(node)]} %}} (a prompt is its one file; it reads no other)")
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        name = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if isinstance(name, str) and name.startswith("_"):
            raise TemplateError(f"{where}: line {node.lineno}: refused: a template may not use {name!r} "
                                "(attributes starting with _ reach Python's internals)")
    return tree


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
    source: str = ""  # the manifest
    text_file: str = ""  # the prompt's file (`text`), named by errors in it
    stored_prompts: bool = False  # judgments bring the prompt they were judged with (an Inspect grader's messages)

    @property
    def kind(self) -> VerdictKind:
        """What this template's verdicts (and the human labels beside them) mean."""
        return kind_for(self.verdict, self.labels)

    @property
    def has_prompt(self) -> bool:
        return self.text is not None

    @property
    def judged(self) -> bool:
        """A judge decides this task's items: with a prompt rendered here, or with one stored
        with each judgment. People decide the other tasks (C3's generation phenomena)."""
        return self.has_prompt or self.stored_prompts

    def shows_response(self, task: str) -> bool:
        """The prompt for an item of `task` shows the item's response (the field `response`
        names, unless the task's `vars` give it as a constant), so a judge asked with it judges
        that response; one asked without it answers the item's task itself (SuperGLUE's prompts
        are the task's)."""
        return self.has_prompt and self.response in self._fields_read(self._names_read, task)

    @cached_property
    def _names_read(self) -> frozenset[str]:
        """The names the prompt uses without setting them (see `_fields_read`)."""
        return frozenset(meta.find_undeclared_variables(self.syntax))

    def _fields_read(self, names: Iterable[str], task: str) -> set[str]:
        """The item fields a prompt using the undeclared `names` (`meta.find_undeclared_variables`:
        Jinja leaves out the names the sandbox defines itself, its globals `range` and `dict`,
        `loop`, `caller` and `self`) reads for an item of `task`: those names less the constants
        that task's `vars` give."""
        return set(names) - set(self.vars.get(task, {}))

    @cached_property
    def version(self) -> str:
        """Content hash of the prompt and system prompt: the template's version."""
        return digest(self.text or "", self.system or "")[:12]

    @property
    def named(self) -> str:
        """How errors name the template: its id and the file they are in."""
        where = self.text_file or self.source
        return f"template {self.id}" + (f" ({where})" if where else "")

    @cached_property
    def syntax(self) -> nodes.Template:
        """The template's checked syntax tree (see `_checked_tree`), read when it is loaded,
        refusing a prompt that reads none of the item's fields for any task it serves: every item
        would get the same prompt, so its verdicts would say nothing about the judge."""
        tree = _checked_tree(self.text or "", self.named)
        names = meta.find_undeclared_variables(tree)
        if self.has_prompt and not any(self._fields_read(names, task) for task in self.tasks or ("",)):
            required = f" (it requires {', '.join(self.required)})" if self.required else ""
            raise TemplateError(f"{self.named}: refused: the prompt reads none of the item's fields{required}, so "
                                "every item would get the same prompt; show the item with {{ field }}")
        return tree

    @cached_property
    def _compiled(self) -> jinja2.Template:
        return _ENV.from_string(self.syntax)

    def __getstate__(self) -> dict:
        """Pickled (for another process) without its parsed and compiled forms, rebuilt when first used."""
        return {k: v for k, v in self.__dict__.items() if k not in ("syntax", "_compiled")}

    def render(self, task: str, fields: dict) -> RenderedPrompt:
        """Render the user prompt for an item of `task` with these fields, within the time and
        size bounds of the sandbox."""
        if self.text is None:
            raise TemplateError(f"{self.named}: task {task} has no judge prompt; humans decide it")
        missing = [name for name in self.required if name not in fields]
        if missing:
            raise TemplateError(f"{self.named}: missing field {missing[0]!r}")
        if "out_of_budget" in vars(self):  # it ran past its budget on an item: every other one would take as long
            raise TemplateError(vars(self)["out_of_budget"])
        context = {**fields, **self.vars.get(task, {})}
        compiled = self._compiled
        _budget.steps, _budget.deadline = 0, time.monotonic() + MAX_SECONDS
        try:
            user = compiled.render(context)
            _too_long(len(user) + len(self.system or ""), "the whole prompt, system prompt included,")
        except _OutOfBudget as exc:
            vars(self)["out_of_budget"] = f"{self.named}: refused: {exc}"  # as a cached_property is kept
            raise TemplateError(vars(self)["out_of_budget"]) from None
        except SecurityError as exc:
            raise TemplateError(f"{self.named}: refused: {exc}") from None
        except jinja2.UndefinedError as exc:
            raise TemplateError(f"{self.named}: missing field ({exc.message})") from None
        except OverflowError as exc:  # the sandbox's range() limit, or a float power
            raise TemplateError(f"{self.named}: refused: {exc}") from None
        except RecursionError:
            raise TemplateError(f"{self.named}: the template recurses without end (a macro that calls itself?)") from None
        except Exception as exc:  # a template is the user's code: whatever it raises is its own error
            raise TemplateError(f"{self.named}: fields do not fit the template ({type(exc).__name__}: {exc})") from None
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
        self._requests: dict[str, dict] = {}  # family -> request parameters its prompts are sent with
        self._manifests: set[Path] = set()  # the manifests loaded, resolved
        self.add_folder(bundled("templates"), check=False)
        for folder in folders or ():
            self.add_folder(Path(folder))

    def add_folder(self, folder: Path, check: bool = True) -> None:
        """Load a folder's manifests; `check`: refuse at once a template that cannot be used
        (its syntax, Python's internals), not only when it is rendered. A manifest already
        loaded (the same folder named twice) is not loaded again."""
        manifests = sorted(folder.glob("*/manifest.toml")) + sorted(folder.glob("manifest.toml"))
        if not manifests:
            raise TemplateError(f"{folder}: no manifest.toml found (expected <family>/manifest.toml)")
        for manifest in manifests:
            if manifest.resolve() not in self._manifests:
                self._manifests.add(manifest.resolve())
                self._load_manifest(manifest, check)

    def _load_manifest(self, path: Path, check: bool) -> None:
        data = read_toml_file(path, TemplateError)
        _refuse_unknown_keys(data, MANIFEST_KEYS, path, ENTRY_KEYS, "in a [[template]] entry")
        family = _typed(data, "family", str, path) or path.parent.name
        is_default = _typed(data, "default", bool, path, True)
        request = data.get("request", {})
        if not isinstance(request, dict) or set(request) - set(REQUEST_PARAMETERS) or not all(
                isinstance(request[k], REQUEST_PARAMETERS[k]) and not isinstance(request[k], bool) for k in request):
            raise TemplateError(f"{path}: [request] takes {', '.join(REQUEST_PARAMETERS)} (numbers)")
        self._requests[family] = request
        family_types = _typed(data, "fields", dict, path, {})
        served: dict[tuple[str, str], str] = {}  # (task, lang) -> the id of this manifest's template for it
        entries = _typed(data, "template", list, path, [], of=dict)
        if not entries:
            raise TemplateError(f"{path}: defines no template; a manifest needs at least one [[template]] entry")
        for n, entry in enumerate(entries, 1):
            where = f"{path} template #{n}"
            _refuse_unknown_keys(entry, ENTRY_KEYS, where, MANIFEST_KEYS, "at the top of the manifest")
            for key in ("id", "lang", "tasks", "verdict"):
                if key not in entry:
                    raise TemplateError(f"{where}: missing {key!r}")
            texts = {key: _typed(entry, key, str, where) for key in ENTRY_TEXTS}
            lists = {key: tuple(_typed(entry, key, list, where, [])) for key in ENTRY_LISTS}
            if texts["verdict"] not in KIND_NAMES:
                raise TemplateError(f"{where}: unknown verdict kind {texts['verdict']!r}; verdict kinds: "
                                    f"{', '.join(KIND_NAMES)} (label_set takes `labels`)")
            if texts["lang"] not in LANGS:
                raise TemplateError(f"{where}: unknown language {texts['lang']!r}")
            declared_types = {**family_types, **_typed(entry, "fields", dict, where, {})}
            for name, declared in declared_types.items():
                if not isinstance(declared, str) or any(t not in FIELD_TYPES for t in declared.split(" or ")):
                    raise TemplateError(f"{where}: field {name!r} has type {declared!r}; use {', '.join(FIELD_TYPES)}")
            task_vars = _typed(entry, "vars", dict, where, {})
            for task, values in task_vars.items():
                if not isinstance(values, dict):
                    raise TemplateError(f"{where}: vars.{task} must be a table, not {values!r}")
            text_file = _inside(path.parent, texts["file"], "file", where)
            template = Template(
                id=texts["id"],
                family=family,
                lang=texts["lang"],
                tasks=lists["tasks"],
                required=lists["required"],
                verdict=texts["verdict"],
                labels=lists["labels"],
                reference=texts["reference"],
                response=texts["response"] or "response",
                guidelines=texts["guidelines"] or "",
                hidden_fields=lists["hidden_fields"],
                vars=task_vars,
                field_types={**dict.fromkeys(lists["required"], UNDECLARED_TYPE), **declared_types},
                text=read_text_file(text_file, TemplateError) if text_file else None,
                system=read_system_prompt(_inside(path.parent, texts["system"], "system", where), where),
                source=str(path),
                text_file=str(text_file or ""),
                stored_prompts=_typed(entry, "stored_prompts", bool, where, False),
            )
            if template.id in self.templates:
                other = self.templates[template.id].source
                raise TemplateError(f"{where}: template id {template.id!r} is already the id of a template in "
                                    f"{'this manifest' if other == str(path) else other}; give each template its own id")
            for task in template.tasks:
                if (task, template.lang) in served:
                    raise TemplateError(f"{where}: task {task} in {template.lang} is already served by template "
                                        f"{served[(task, template.lang)]} of this manifest; one template per task and language")
                served[(task, template.lang)] = template.id
            if check:
                template.syntax  # noqa: B018 (a template that cannot be used is refused now, not per item)
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

    def for_item(self, item: Item) -> tuple[Template, str | None]:
        """The item's template, or a stand-in without labels and the reason the item cannot be
        labelled (no template serves its task, a field of the wrong type): the annotation app
        shows a bad item and lets it be skipped, it never stops the session."""
        try:
            template = self.for_task(item.task, item.lang)
            for name, declared in template.field_types.items():
                if name in item.fields:
                    check_field_type(name, item.fields[name], declared)
            return template, None
        except (TemplateError, InputError) as exc:
            stand_in = Template(id="(none)", family="", lang=item.lang, tasks=(item.task,), required=(), verdict="label_set")
            return stand_in, str(exc)

    def families(self) -> list[str]:
        """The template families loaded (the names `--variant` takes), sorted."""
        return sorted(self._requests)

    def request_defaults(self, family: str) -> dict:
        """The request parameters a family's prompts are sent with unless the user says
        otherwise (its manifest's [request]: temperature, max_tokens)."""
        if family not in self._requests:
            raise TemplateError(f"unknown template family {family!r}; known: {', '.join(self.families())}")
        return dict(self._requests[family])

    def people_decide(self, task: str, lang: str) -> bool:
        """A task people decide: its template has no judge prompt (C3's generation phenomena),
        so a judgment on it is no evidence about a judge."""
        try:
            return not self.for_task(task, lang).judged
        except TemplateError:
            return False

    def add_data_task(self, task: str, lang: str, family: str, labels: Iterable[str]) -> Template:
        """Serve `task` in `lang` with `family`'s template for that language that lists no tasks,
        labelled with `labels`: a task whose id and label set come with imported data (an
        Inspect log's task and its scorer's values). A template folder naming the task keeps it."""
        base = next((t for t in self.templates.values() if t.family == family and t.lang == lang and not t.tasks), None)
        if base is None:
            raise TemplateError(f"no {family} template for language {lang!r} serves tasks that come with data")
        template = replace(base, id=f"{base.id}:{task}", tasks=(task,), labels=tuple(labels))
        self.templates[template.id] = template
        served = self._default.get((task, lang))
        if served is None or self.templates[served].family == family:
            self._default[(task, lang)] = template.id
        return template

    def add_data_tasks(self, rows: Iterable[tuple[str, str, str, tuple[str, ...]]]) -> None:
        """`add_data_task` for each (task, lang, family, labels), as the store keeps them."""
        for task, lang, family, labels in rows:
            self.add_data_task(task, lang, family, labels)

    def knows(self, task: str, lang: str) -> bool:
        return (task, lang) in self._default

    def tasks(self) -> list[tuple[str, str]]:
        return sorted(self._default)


_TYPE_NAMES = {str: "text", bool: "boolean (true or false)", dict: "table"}


def _refuse_unknown_keys(table: dict, known: tuple[str, ...], where, other_level: tuple[str, ...],
                        belongs: str) -> None:
    """Refuse a key of `table` (a manifest, or its template entry `where`) that is not `known`:
    a key of the `other_level` (the entry's, or the manifest's) is said to belong `belongs`,
    another is offered the known key closest to it. A misspelt key would otherwise be ignored."""
    for key in table:
        if key not in known:
            match = None if key in other_level else closest(key, list(known))
            hint = f" (did you mean {match}?)" if match else f" (it belongs {belongs})" if key in other_level else ""
            raise TemplateError(f"{where}: unknown key {key!r}{hint}; known keys here: {', '.join(known)}")


def _typed(table: dict, key: str, kind: type, where, default=None, of: type = str):
    """`table[key]` (or `default` if absent), refusing a value of another type than `kind` (a
    list: of `of`s), naming `where` (the manifest, or its template entry)."""
    value = table.get(key, default)
    if value is default:
        return value
    if not isinstance(value, kind) or (kind is list and not all(isinstance(v, of) for v in value)):
        name = f"list of {_TYPE_NAMES[of]}s" if kind is list else _TYPE_NAMES[kind]
        raise TemplateError(f"{where}: {key} must be a {name}, not {value!r}")
    return value


def _inside(folder: Path, name: str | None, key: str, where: str) -> Path | None:
    """The file a manifest's `key` names, refused unless it exists inside the family's `folder`
    once resolved (symbolic links included): a shared folder may not read the user's other files."""
    if not name:
        return None
    path = folder / name
    if not path.resolve().is_relative_to(folder.resolve()):
        raise TemplateError(f"{where}: {key} {name!r} is outside the family's folder {folder}; "
                            "a manifest may only name files inside it")
    if not path.is_file():
        raise TemplateError(f"{where}: file {path} does not exist")
    return path


def read_system_prompt(path: Path | None, where: str, error: type[CalibrateError] = TemplateError) -> str | None:
    """The system prompt in `path`, named by `where` (a manifest's template entry, `judge
    --system-prompt`), refused past MAX_TEXT characters as the whole prompt is."""
    if path is None:
        return None
    text = read_text_file(path, error)
    if len(text) > MAX_TEXT:
        raise error(f"{where}: the system prompt {path} is {len(text):,} characters long; "
                    f"a whole prompt may be at most {MAX_TEXT:,}")
    return text
