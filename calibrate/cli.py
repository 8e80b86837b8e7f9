"""The `calibrate` command: every stage of the flow (import, render, judge, annotate, measure,
export) as a scriptable subcommand over one SQLite file."""

from __future__ import annotations

import errno
import functools
import io
import json
import os
import signal
import sqlite3
import sys
import threading
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from calibrate.cells import BY_CHOICES, by_callback
from calibrate.configurations import (
    KEEP_BOTH,
    beside_words,
    other_configurations,
    replaced_words,
    replacing_words,
    runs_beside,
)
from calibrate.escape import for_terminal, safe, safe_json
from calibrate.formats import ImportFailed, ImportReport, Record, import_records, new_version_advice
from calibrate.formats.c3 import C3_RESULT_ANNOTATOR
from calibrate.model import (
    ASKED_AGAIN,
    CalibrateError,
    VerdictChange,
    check_system,
    counted,
    now_iso,
)
from calibrate.names import AnnotatorNameError, annotator_name, closest, listing, unknown_value
from calibrate.redact import redact_url
from calibrate.reliability_cells import DEFAULT_RISK, DEFAULT_TARGET
from calibrate.settings import CONFIG_NAME, SETTINGS, Settings, trust_settings_file
from calibrate.store import Store, UnknownFilter, past_file_size_limit
from calibrate.templates import LANGS, TEMPLATES_HINT, TemplateSet, read_system_prompt
from calibrate.user_files import UserFileError, read_keymap, read_text_file, replaced_whole


def width_given(stream) -> bool:
    """Whether output to `stream` has a width to fit: a terminal's, or $COLUMNS. Prose is folded
    to it; piped without $COLUMNS (a log, grep), a line stays one line. Tables always fit the
    width (80 columns when none is given)."""
    return os.environ.get("COLUMNS", "").isdigit() or stream.isatty()


console = Console(soft_wrap=not width_given(sys.stdout))
err_console = Console(stderr=True, soft_wrap=not width_given(sys.stderr))


READS, WRITES, CREATES = "reads", "writes", "creates"
"""What a command does with the database, as it declares (`database=` on the command):
READS opens it read-only, WRITES writes into one that must exist, CREATES writes and creates
the file when there is none (imports, the demo, merge). A command that reads or writes and
finds no database says so and creates nothing; no command gives calibrate's tables to a file
that is not a calibrate database."""


COMMITTED_READS = 5  # how often `Context.committed_imports` reads again what Ctrl-C pressed again interrupts


class Context:
    """What every command shares: the settings, and the database and templates they name,
    opened when first used and closed when the command ends."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.db_path = str(settings.get("db"))
        self.access: str | None = None  # the running command's declaration
        self._store: Store | None = None
        self._templates: TemplateSet | None = None
        # the database file this command created is complete and now people's: a later failure keeps it (`keep_file`)
        self.file_kept = False
        # an import command's (`run_import`): an import run it finished stands, whatever interrupts it after that
        self.imports_stand = False

    def add_flags(self, **flags) -> None:
        """The global options given after the subcommand (`calibrate status --db x.db`): the
        same settings as before it. --templates folders add up; two different --db values are
        a usage error."""
        db = flags.get("db")
        given, source = self.settings.lookup("db")
        if db and source == "command line" and str(given) != db:
            raise click.UsageError(f"--db given twice ({given} and {db}): give it once")
        before = self.settings.lookup("templates")
        folders = (*(before[0] if before[1] == "command line" else ()), *flags.get("templates", ()))
        self.settings = self.settings.with_flags(db=db, templates=folders)
        self.db_path = str(self.settings.get("db"))
        self._templates = None

    @property
    def store(self) -> Store:
        """The database, opened as the running command declared (see READS, WRITES, CREATES)."""
        return self._store or self.open_store()

    def open_store(self) -> Store:
        if self.access is None:
            raise RuntimeError("a command that opens the database must declare database=READS, WRITES or CREATES")
        self.close()
        self._check_file()
        if self.access == READS:
            self._store = Store(self.db_path, read_only=True, on_upgrade=_say_upgrading)
        else:
            self._store = Store(self.db_path, on_upgrade=_say_upgrading)
            self._store.on_wait = _say_waiting
            self._store.on_import_wait = _say_waiting_for_import
            self._store.on_clean_up_wait = _say_waiting_to_clean_up
        return self._store

    def _check_file(self) -> None:
        """Refuse, creating nothing, a missing database where the command needs one (the store
        itself refuses, writing nothing, a file that is not a calibrate database of a version
        this calibrate knows)."""
        path = Path(self.db_path)
        if self.db_path != ":memory:" and self.access != CREATES and not path.is_file():
            Store(self.db_path, read_only=True).close()  # raises the store's DatabaseMissing: nothing is created

    @property
    def template_dirs(self) -> list[str]:
        """The extra template folders (read when needed: a folder's untrusted settings file that
        names some stops only the commands that use templates)."""
        return self.settings.get("templates")

    @property
    def templates(self) -> TemplateSet:
        """The template folders' templates, and the tasks the database's imports brought with
        them (Inspect logs' tasks and labels)."""
        if self._templates is None:
            self._templates = TemplateSet(map(Path, self.template_dirs))
            if self._store is not None:
                self._templates.add_data_tasks(self._store.data_tasks())
            elif Path(self.db_path).is_file():
                try:  # a file that is no calibrate database: the command that opens it says so
                    reader = Store(self.db_path, read_only=True, on_upgrade=_say_upgrading)
                except (CalibrateError, sqlite3.DatabaseError):
                    return self._templates
                try:
                    self._templates.add_data_tasks(reader.data_tasks())
                finally:
                    reader.close()
        return self._templates

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def close_at_exit(self) -> None:
        """`close` once the command is over: a Ctrl-C meanwhile is let go (the command's work is
        done, and SQLite's checkpoint as the file closes is best left whole) rather than ending a
        command that did its work in "Aborted!"."""
        held = threading.current_thread() is threading.main_thread()
        before = signal.signal(signal.SIGINT, signal.SIG_IGN) if held else None
        try:
            self.close()
        finally:
            if held:
                signal.signal(signal.SIGINT, before)

    def saved_anything(self) -> bool:
        """Whether this command committed a write to its database."""
        return self._store is not None and self._store.commits > 0

    def committed_imports(self) -> list[int]:
        """The import runs an import command (`imports_stand`) finished, as the database records
        them: committed, so an interrupt after one leaves it in place, however close to its commit."""
        if not self.imports_stand or self._store is None:
            return []
        for _ in range(COMMITTED_READS):
            try:
                self._store.end_interrupted_transaction()  # (the command's blocks are all left by now)
                return self._store.imports_begun_here(finished=True)
            except KeyboardInterrupt:  # Ctrl-C again (pressed twice) while this is read: read again
                continue
            except (CalibrateError, sqlite3.Error):  # the database failing too: the first error says more
                return []
        return []

    def keep_file(self) -> None:
        """From here on the file this command created is kept whatever happens: its own work is
        done, and what follows saves people's work in it (the demo's annotation app)."""
        self.file_kept = True

    def remove_database(self, *, keep_empty: bool = False) -> None:
        """Remove the database file this command created (and SQLite's files beside it); with
        `keep_empty`, the file was an empty one before: it is emptied again, not removed."""
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            path = Path(self.db_path + suffix)
            if not suffix and keep_empty:
                path.write_bytes(b"")
            elif path.exists():  # (unlinking a missing file in a read-only folder fails too)
                path.unlink()


def _say_upgrading(path: str, migrations: list[str]) -> None:
    """A database from an older calibrate is upgraded before the command reads it: say so (on
    a million items that takes about a minute, once)."""
    err_console.print(f"upgrading {path} to this calibrate's schema ({', '.join(migrations)}): once; "
                      "on a large database this takes a while…", style="dim")


def _say_waiting(seconds: float) -> None:
    """Another writer holds the database: say so when a wait starts (the first call of each wait
    comes at 0 s), then keep waiting."""
    if seconds < 0.1:
        err_console.print("waiting for the database (another writer holds it)…", style="dim")


def _say_waiting_to_clean_up(run: int, seconds: float) -> None:
    """Another writer holds the database while an import's leftovers are removed (an import
    stopped or failed, or `import abandon`): say what waits, and that stopping leaves it to the next."""
    if seconds < 0.1:
        err_console.print(f"waiting for the database (another writer holds it) to remove what import run {run} "
                          "wrote; Ctrl-C leaves that to the next import…", style="dim")


def _say_waiting_for_import(run: dict) -> None:
    """Another import is running (one runs at a time), or one died: say what this import waits for."""
    if run["state"] == "dead":
        err_console.print(safe_text(f"removing what import run {run['id']} left unfinished "
                                    f"({_describe_import_run(run)}; its process is gone)…", style="dim"))
        return
    err_console.print(safe_text(
        f"waiting for import run {run['id']} to finish ({_describe_import_run(run)}); if that process is gone: "
        f"calibrate import abandon {run['id']}", style="dim"))


def _describe_import_run(run: dict) -> str:
    return f"{run['source']}; pid {run['pid']} on {run['host']}, started {run['started_at']}"


pass_ctx = click.make_pass_decorator(Context)


DB_HELP = "The SQLite file [default: calibrate.db; or $CALIBRATE_DB, or db in calibrate.toml]."
TEMPLATES_HELP = "An extra template folder (same manifest format); may be repeated [or $CALIBRATE_TEMPLATES]."


def global_options(*, on_subcommand: bool) -> list[click.Option]:
    """--db and --templates. The top-level group passes them to `cli`; every command and
    group below it takes them too (before or after the subcommand's name mean the same), and
    hands them to the shared Context as they are parsed (eagerly, so option checks that read
    the templates see them)."""
    extra = {"expose_value": False, "is_eager": True, "callback": _global_flag} if on_subcommand else {}
    return [
        click.Option(["--db", "db_path"], help=DB_HELP, **extra),
        click.Option(["--templates", "template_dirs"], multiple=True, type=click.Path(exists=True, file_okay=False),
                     help=TEMPLATES_HELP, **extra),
    ]


def _global_flag(ctx: click.Context, param: click.Parameter, value) -> None:
    shared = ctx.find_object(Context)
    if shared is not None and value:
        shared.add_flags(**{"db" if param.name == "db_path" else "templates": value})


class DeclaresDatabase:
    """A command or group that declares what it does with the database: `database=READS`,
    WRITES or CREATES, or None for one that never opens it. A command that reads or writes
    opens the database before it runs, so a missing one is refused before anything happens
    (a group that runs without a subcommand opens it on first use). A command that creates
    the database and fails removes the file it created (or empties again the empty file it
    was given: `: > x.db`), unless all that failed was writing to a
    closed pipe after it saved something, or the command had handed the file over to people
    (`Context.keep_file`: a closed terminal in the demo's app keeps their labels). Every command takes the global
    options (global_options)."""

    def __init__(self, *args, database: str | None, **kwargs):
        super().__init__(*args, **kwargs)
        if database not in (None, READS, WRITES, CREATES):
            raise ValueError(f"database={database!r}: use READS, WRITES, CREATES or None")
        self.database = database
        if not any(param.name == "db_path" for param in self.params):  # the top-level group has its own
            self.params += global_options(on_subcommand=True)

    def invoke(self, ctx: click.Context):
        shared = ctx.find_object(Context)
        if shared is None or self.database is None:
            return super().invoke(ctx)
        shared.access = self.database
        if self.database in (READS, WRITES) and not isinstance(self, click.Group):
            shared.open_store()
        path = Path(shared.db_path)
        # a file this command makes a database of: none yet, or an empty one (`: > x.db`), left empty on failure
        empty = self.database == CREATES and path.is_file() and path.stat().st_size == 0
        new_file = self.database == CREATES and shared.db_path != ":memory:" and (empty or not path.exists())
        try:
            with signals_end_it() if new_file else nullcontext():
                return super().invoke(ctx)
        except BaseException as exc:
            # a closed pipe after the command saved its work (`import … | head -1`) keeps the file: only the
            # telling failed; any other failure leaves the file as it was: none, or empty
            # (rich ends the process with SystemExit(1) when its stream's pipe is closed, the BrokenPipeError its context)
            pipe = isinstance(exc, BrokenPipeError) or isinstance(exc.__context__, BrokenPipeError)
            # an interrupt (Ctrl-C; SIGTERM or SIGHUP, `signals_end_it`) after an import committed ends only its telling
            interrupted = isinstance(exc, KeyboardInterrupt) or (
                type(exc) is SystemExit and exc.code not in (0, None) and not pipe)
            committed = shared.committed_imports() if interrupted else []
            kept = shared.file_kept or bool(committed) or (pipe and shared.saved_anything())
            if new_file and not kept and not (isinstance(exc, click.exceptions.Exit) and exc.exit_code == 0):
                shared.remove_database(keep_empty=empty)
            if committed:
                said = (f"interrupted after import run {listing([str(run) for run in committed])} was committed: what "
                        f"it imported is in {shared.db_path} (calibrate status shows it); only what the command had "
                        "still to say or check was cut short")
                if isinstance(exc, KeyboardInterrupt):
                    raise click.ClickException(said) from None
                with suppress(OSError):  # a closed terminal (SIGHUP): the exit status still says it
                    err_console.print(safe_text(f"Error: {said}"))
            raise


@contextmanager
def signals_end_it():
    """While it is open, a closed terminal (SIGHUP: a dropped SSH connection, a closed window)
    or a request to stop (SIGTERM: `kill`, `timeout`, `docker stop`, a job scheduler) ends the
    command as a failure would (SystemExit, status 128 + the signal's number), so that a command
    that created its database removes it (`DeclaresDatabase`): the signals' default action kills
    the process on the spot, leaving a file with the schema and part of the data (an import
    stopped halfway, the demo closed while it loads). Where a handler cannot be set (not the
    main thread, a signal the platform lacks) that signal keeps its default."""
    def ended(signum, frame):
        raise SystemExit(128 + signum)

    before = {}
    for name in ("SIGHUP", "SIGTERM"):
        try:
            number = getattr(signal, name)
            before[number] = signal.signal(number, ended)
        except (AttributeError, ValueError, OSError):
            continue
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, handler)


class CalibrateCommand(DeclaresDatabase, click.Command):
    """A calibrate command: it must declare `database=` (see DeclaresDatabase)."""


class CalibrateGroup(DeclaresDatabase, click.Group):
    """A calibrate command group: its commands declare their database access (see
    DeclaresDatabase). At the top it turns the domain's user-facing errors (a bad import, a
    template problem) and the file system's (an output folder that does not exist, no
    permission, a full disk) into a clean `Error: …` message and exit status 1, for every
    command."""

    command_class = CalibrateCommand
    group_class = type  # subgroups are CalibrateGroups too

    def __init__(self, *args, database: str | None = None, **kwargs):
        super().__init__(*args, database=database, **kwargs)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Refuse an argument that is not valid text (bytes that are not UTF-8 reach Python as
        lone surrogates), before anything stores or prints it."""
        for position, arg in enumerate(args, 1):
            try:
                arg.encode("utf-8")
            except UnicodeEncodeError:
                shown = arg.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
                raise click.UsageError(f"argument {position} ({safe(shown)}) is not UTF-8 text", ctx) from None
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            try:
                return super().invoke(ctx)
            except CalibrateError as exc:
                raise click.ClickException(str(exc)) from None
            except BrokenPipeError:  # the reader of standard output left (`| head`): click exits quietly
                raise
            except OSError as exc:
                where = f"{exc.filename}: " if exc.filename else ""
                reason = exc.errno == errno.EFBIG and past_file_size_limit() or exc.strerror or exc
                raise click.ClickException(f"{where}{reason}") from None
        except click.ClickException as exc:
            exc.message = safe(exc.message)
            fitted = fit_error(exc.format_message())
            exc.format_message = lambda: fitted  # shown as "Error: …" within the terminal's width
            raise


def fit_error(message: str) -> str:
    """An error message folded at spaces to the width stderr is given (width_given), after the
    "Error: " click puts before it; paths and other long words are never broken."""
    import textwrap

    if err_console.soft_wrap:
        return message
    width = err_console.width
    lines = []
    for paragraph in message.split("\n"):
        indent = " " * len("Error: ") if not lines else ""
        folded = textwrap.wrap(paragraph, width, initial_indent=indent, break_long_words=False,
                               break_on_hyphens=False) or [""]
        lines += [folded[0][len(indent):], *folded[1:]]
    return "\n".join(lines)


@click.group(cls=CalibrateGroup, context_settings={"help_option_names": ["-h", "--help"]},
             params=global_options(on_subcommand=False))
@click.version_option(package_name="calibrate")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, template_dirs: tuple[str, ...]) -> None:
    """Can this LLM judge be trusted? Import items, run judges, label, measure agreement.

    --db and --templates go before or after the command. Settings come from flags, then
    environment variables, then ./calibrate.toml, then the user config file: `calibrate
    config` shows which."""
    ctx.obj = Context(Settings({"db": db_path, "templates": template_dirs}))
    ctx.call_on_close(ctx.obj.close_at_exit)


def main() -> None:
    cli(prog_name="calibrate")


# -- helpers -----------------------------------------------------------------------------------


def option_error(option: str, message: str) -> click.BadParameter:
    """A usage error (exit 2) about the value of `option` of the running command."""
    return click.BadParameter(message, ctx=click.get_current_context(silent=True), param_hint=f"'{option}'")


def _each_once(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    """A repeated option's values (--judge of `scores` and `export c3`), refused where one is
    given twice: the command would quietly take it once, and the user may have meant another."""
    twice = [value for k, value in enumerate(values) if value in values[:k]]
    if twice:
        raise click.BadParameter(f"{listing(list(dict.fromkeys(twice)))} given twice: name each once",
                                 ctx=ctx, param=param)
    return values


def _checked_lang(ctx: click.Context, param: click.Parameter, lang: str | None) -> str | None:
    if lang is not None and lang not in LANGS:
        raise click.BadParameter(unknown_value("language", lang, list(LANGS), "languages"), ctx=ctx, param=param)
    return lang


def lang_option(help_text: str = "Only this language.", required: bool = False, default: str | None = None):
    """--lang, checked as an option value (en or zh). A default is given only where there is one:
    click takes `default=None` for a value given, so a required --lang left out would not be
    refused."""
    defaulted = {"default": default, "show_default": True} if default is not None else {}
    return click.option("--lang", required=required, metavar="en|zh", callback=_checked_lang, help=help_text,
                        **defaulted)


def check_template_task(ctx: Context, task: str, lang: str) -> None:
    """A task an import names must have a template in its language (bundled or --templates)."""
    served = ctx.templates.tasks()
    if (task, lang) in served:
        return
    elsewhere = sorted(language for name, language in served if name == task)
    if elsewhere:
        raise option_error("--task", f"task {task} has no template in {lang} (it has in {', '.join(elsewhere)})")
    in_lang = sorted(name for name, language in served if language == lang)
    raise option_error("--task", f"{unknown_value('task', task, in_lang, f'tasks in {lang}')}; {TEMPLATES_HINT}")


def check_filters(ctx: Context, *, task: str | None = None, lang: str | None = None, system: str | None = None,
                  judge: str | None = None, gold_from: str | None = None, annotator: str | None = None,
                  families: tuple[tuple[str, str], ...] = ()) -> None:
    """Filters that select nothing in the database, refused before anything is done. A value
    nothing knows (a misspelt task, language, system, judge, --gold-from annotator, or a --family
    name that is no judge or system) is a usage error naming the closest match and the valid
    values; a valid task or language this database holds no item of is an error saying what it
    holds."""
    if system == "" and "" not in ctx.store.systems():
        raise click.ClickException(f"no items without a system in {ctx.db_path}; it has {listing(ctx.store.known('system'))}")
    template_tasks = {name for name, _ in ctx.templates.tasks()}
    for what, option, value in (("task", "--task", task), ("language", "--lang", lang), ("system", "--system", system),
                                ("judge", "--judge", judge), ("annotator", "--gold-from", gold_from),
                                ("annotator", "--annotator", annotator)):
        if not value:
            continue
        try:
            ctx.store.check_filter(**{"lang" if what == "language" else what: value})
        except UnknownFilter:
            here = ctx.store.known(what)
            if what == "language" or value in template_tasks and what == "task":
                raise click.ClickException(f"no items of {what} {value!r} in {ctx.db_path}; it has {listing(here)}") from None
            if what == "task":
                raise option_error(option, unknown_value(what, value, sorted({*here, *template_tasks}), "known tasks")) from None
            raise option_error(option, unknown_value(what, value, here, f"{ctx.db_path} has")) from None
    for name, _ in families:
        if not _names_judge_or_system(ctx.store, name):
            names = sorted({*ctx.store.known("judge"), *ctx.store.known("system")} - {""})
            raise option_error("--family", unknown_value("judge or system", name, names, f"{ctx.db_path} has"))


def _names_judge_or_system(store: Store, name: str) -> bool:
    for what in ("judge", "system"):
        try:
            store.check_filter(**{what: name})
            return True
        except UnknownFilter:
            pass
    return False


def check_queue_filters(ctx: Context, *, task: str | None, lang: str | None, system: str | None,
                        judge: str | None) -> None:
    """`check_filters`, and the filters together selecting some item: an annotation queue or a
    judge run that would hold nothing is refused before it starts, naming the filters."""
    check_filters(ctx, task=task, lang=lang, system=system, judge=judge)
    if not ctx.store.count_items(task=task, lang=lang, system=system, at_most=1):
        given = filters_given(task=task, lang=lang, system=system)
        raise click.ClickException(f"no items in {ctx.db_path} match {given}" if given else
                                   f"no items in {ctx.db_path}: import items first (calibrate import …)")


def checked_annotator(name: str | None) -> str:
    """--annotator as labels are kept under (`names.annotator_name`), or a usage error."""
    try:
        return annotator_name(name, "--annotator")
    except AnnotatorNameError as exc:
        raise click.UsageError(str(exc)) from None


def filters_given(**values: str | None) -> str:
    """The filters a user gave, as typed ("--task 'c3/pause' --lang 'zh'"; "" for none)."""
    return " ".join(f"--{name} {value!r}" for name, value in values.items() if value is not None)


@contextmanager
def progress_bar(total: int, description: str, unit: str = "bytes"):
    """A progress bar over bytes read, or over a count of `unit` (files, items), on stderr only
    when it is a terminal; yields the function that advances it."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    counter = DownloadColumn() if unit == "bytes" else TextColumn(f"{{task.completed}}/{{task.total}} {unit}")
    columns = (TextColumn("{task.description}"), BarColumn(), counter, TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task(description, total=total or None)
        yield lambda n: bar.advance(task, n)


def safe_text(text, style: str = "") -> Text:
    """Text from data for the console: terminal-safe (escape.safe) and never read as markup."""
    return Text(safe(text), style=style)


def print_table(title: str, columns: list[str], rows: list[list], as_json: bool) -> None:
    """Rows as JSON, or as a table fitted to the console (calibrate.fit): short values keep
    their width, free text folds, previews end in "…"; a table that cannot fit is printed as
    one block of "column  value" lines per row instead (never with columns squeezed away)."""
    if as_json:
        click.echo(safe_json([dict(zip(columns, row, strict=True)) for row in rows]))
        return
    from calibrate.fit import Columns, fit_table

    how = Columns(texts=tuple(c for c in columns if c in FREE_TEXT), previews={c: PREVIEW_WIDTH for c in PREVIEWS},
                  names=tuple(c for c in columns if c in NAMES))
    console.print(fit_table(columns, [[safe(v) for v in row] for row in rows], console.width, how, title=safe(title)))


FREE_TEXT = {"task", "tasks", "source_id", "required fields", "value", "from", "to"}
PREVIEWS = {"fields", "reference"}  # one line each; `items --json` gives them whole
PREVIEW_WIDTH = 24
NAMES = {"system", "id", "judge", "server"}  # shortened in the middle where the table needs it (distinct ones stay distinct)


AUDIO_PROBLEMS_SHOWN = 20  # a text-only response tree would otherwise print a line per item


def emit(result, fmt: str, out: Path | None, what: str, table, renderers: dict, *, width: int) -> None:
    """The one way `report`, `scores` and `trust` write what they found: `table(result, console)`
    draws the terminal table (as it is drawn there, or at `width` columns into `out`);
    `renderers[fmt](result)` gives every other format as text, printed or written to `out`."""
    if fmt == "table" and out is None:
        table(result, console)
        return
    if fmt == "table":
        buffer = Console(file=io.StringIO(), width=width, soft_wrap=False)
        table(result, buffer)
        text = buffer.file.getvalue()
    else:
        text = renderers[fmt](result)
    if out:
        with replaced_whole(out) as part:
            part.write_text(text, encoding="utf-8")
        console.print(safe_text(f"wrote {fmt} {what} to {out}"))
    else:
        click.echo(for_terminal(text), nl=False)


def by_option(default: str, more_help: str = ""):
    """--by, parsed and checked by the one callback of calibrate.cells (every command takes
    every value of BY_CHOICES)."""
    return click.option("--by", default=default, show_default=True, callback=by_callback,
                        help=f"Cut cells by any of {', '.join(BY_CHOICES)} (comma-separated){more_help}.")


def out_file_callback(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """Refuse an output file whose folder does not exist before any work is done (not after it).
    The file is then written through `user_files.replaced_whole`: whole, or left as it was."""
    if value is not None and not value.parent.is_dir():
        what = "is a file, not a folder" if value.parent.exists() else "does not exist"
        raise click.BadParameter(f"{value.parent} {what}: create the folder first, or write elsewhere", ctx, param)
    return value


OUT_FILE = click.Path(dir_okay=False, path_type=Path)  # with out_file_callback
out_option = click.option("--out", type=OUT_FILE, callback=out_file_callback,
                          help="Write to a file instead of the terminal.")


def run_import(ctx: Context, records, skip_bad: bool, update: bool = False, system: str = "",
               data_tasks=(), conflict_advice=new_version_advice, labels_put_back_said: bool = True,
               refusal=None) -> ImportReport:
    """Store the records and print what happened; `system` says whose items they are (and how
    the name was chosen), at the end of the summary; `data_tasks` are the tasks the records bring
    (Inspect logs); `conflict_advice` is the format's advice on changed content (`ConflictAdvice`);
    `labels_put_back_said` False where the caller says itself what its labels changed (C3 result
    files, whose decisions are files', not a person's); `refusal` as `import_records` takes it. The run
    is recorded as its command and the paths it reads."""
    command = click.get_current_context()
    source = " ".join(["calibrate", *command.command_path.split()[1:],
                       *(str(v) for v in command.params.values() if isinstance(v, Path))])
    ctx.imports_stand = True
    report = import_records(ctx.store, records, ctx.templates, skip_bad=skip_bad, update=update, source=source,
                            data_tasks=data_tasks, conflict_advice=conflict_advice, refusal=refusal)
    for bad in report.skipped:
        err_console.print(safe_text(f"skipped {bad}", style="yellow"))
    for missing in report.without_audio[:AUDIO_PROBLEMS_SHOWN]:
        err_console.print(safe_text(f"no audio: {missing} (item imported without it)", style="yellow"))
    if len(report.without_audio) > AUDIO_PROBLEMS_SHOWN:
        err_console.print(Text(f"no audio: … and {len(report.without_audio) - AUDIO_PROBLEMS_SHOWN} more", style="yellow"))
    counts = report.counts
    console.print(
        f"{counted(report.records, 'record')}: {counted(counts.items_added, 'item')} added, "
        + (f"{counted(counts.versions_added, 'new version')}, " if counts.versions_added else "")
        + f"{counts.items_existing} already present, {counted(counts.judgments_added, 'judgment')} added, "
        + (f"{counted(counts.labels_added, 'label')} added, " if counts.labels_added else "")
        + (f"{counted(counts.labels_older, 'older label')} not in force, " if counts.labels_older else "")
        + (f"{more_notes(counts.notes_added)}, " if counts.notes_added else "")
        + (f"{counted(counts.labels_reworded, 'generation decision')} in its result file's new words, "
           if counts.labels_reworded else "")
        + f"{len(report.skipped)} skipped"
        + (f" ({counted(left, 'item')} not imported)" if (left := sum(b.items for b in report.skipped)) != len(report.skipped)
           else "")
        + (f", {len(report.without_audio)} without audio" if report.without_audio else "")
        + (f"; system {system}" if system else "")
    )
    say_import_changes(report)
    say_labels_out_of_order(counts.labels_put_back if labels_put_back_said else 0, counts.labels_older)
    return report


CHANGES_SHOWN = 5  # the first few items an import's note names


def say_import_changes(report: ImportReport) -> None:
    """What an import changed beyond what it added, on stderr: records whose judgment is an
    error (the judge's call failed elsewhere), verdicts in force it changed, judgments it added
    older than the verdict in force (not put in force), and labels left on the versions of items
    that --update replaced."""
    for (judge, why), where in report.errors.items():
        one = len(where) == 1
        kept = report.out_of_force[judge, "failed"]
        err_console.print(safe_text(
            f"{counted(len(where), 'record')} of {judge} {'holds' if one else 'hold'} no verdict ({why}): stored as "
            f"{'an error, not a verdict' if one else 'errors, not verdicts'} ({listing(where, CHANGES_SHOWN)})"
            + (f"; {'it' if one else f'{kept} of them'} left the verdict of {judge} in force there (a failed call "
               "never replaces a verdict)" if kept else "")
            + f". Ask {judge} again for {'it' if one else 'them'} and import the output: a verdict replaces an error",
            style="yellow"))
    for judge in dict.fromkeys(name for name, _ in report.outputs):
        parsed, unparsed = report.outputs[judge, "verdict"], report.outputs[judge, "unparsed"]
        if unparsed > parsed:  # most of a judge's outputs did not parse: the field or the template is not the one meant
            reasons = "; ".join(f"{n} × {why}" for (name, why), n in report.unparsed.most_common() if name == judge)
            said = (f"none of the {counted(unparsed, 'output')} of {judge} parsed as a verdict" if not parsed else
                    f"{unparsed} of the {parsed + unparsed} outputs of {judge} did not parse as a verdict")
            err_console.print(safe_text(
                f"warning: {said} ({reasons}): see them with calibrate items --status unparsed; is the judge output "
                "field the one meant, and does the task's template read its answers?", style="yellow"))
    say_verdicts_changed(report.changed, "this import")
    for (judge, why), n in report.out_of_force.items():
        if why == "older":
            err_console.print(safe_text(
                f"{n} of the judgments of {judge} added {'is' if n == 1 else 'are'} older than its verdict in force on "
                f"the item (the time the judge made {'it' if n == 1 else 'them'}: an older eval's log?): kept in the "
                "history, not put in force", style="yellow"))
    say_left_behind(report.left_behind)


def say_verdicts_changed(changed: list[VerdictChange], by: str) -> None:
    """On stderr: the verdicts in force an import or a merge (`by`) changed, how many and the
    first few, `old -> new`."""
    if not changed:
        return
    shown = [f"{c.judge} on {c.source_id}: {c.before} -> {c.after}" for c in changed]
    err_console.print(safe_text(
        f"{counted(len(shown), 'verdict')} in force changed by {by} ({listing(shown, CHANGES_SHOWN)}): "
        "a judge's newest judgment of an item is the one in force, a failed call only over a failed call",
        style="yellow"))


def say_left_behind(left_behind: list[tuple[str, str]], whose: str = "") -> None:
    """On stderr: labels (source id, annotator) that stay with versions of items --update
    replaced, so no longer count; `whose` says where they came from."""
    if not left_behind:
        return
    one = len(left_behind) == 1
    shown = [f"{who} on {source}" for source, who in left_behind]
    err_console.print(safe_text(
        f"{counted(len(shown), 'label')}{whose} {'stays' if one else 'stay'} with the "
        f"{'version' if one else 'versions'} --update replaced and no longer "
        f"{'counts' if one else 'count'} ({listing(shown, CHANGES_SHOWN)}): label the new "
        f"{'version' if one else 'versions'} (calibrate annotate)", style="yellow"))


def say_labels_out_of_order(put_back: int, older: int) -> None:
    """On stderr: imported labels that put back a person's earlier label over their newer
    decision (a file without times), and labels older than the person's decision in force (a
    file with times: kept in the history only)."""
    if put_back:
        err_console.print(safe_text(
            f"{counted(put_back, 'label')} put back a label the person had given the item before, over a "
            "newer decision of theirs (is the file older than those decisions?): the newer ones stay in the history, "
            "no longer in force", style="yellow"))
    if older:
        err_console.print(safe_text(
            f"{counted(older, 'label')} older than the person's decision in force on the item (its time says so: is "
            "the file older than those decisions?): kept in the history, the newer decision stays in force",
            style="yellow"))


def named_system(system: str | None, default: str, how: str) -> tuple[str, str]:
    """The system an import stores its items under, and how the summary names it: as given,
    or the default with where it came from (and the flag to change it)."""
    if system is not None:
        return system, system
    return default, f"{default} ({how}; --system names another)"


def parse_field_map(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r}: use ITEM_FIELD=LINE_FIELD", param_hint="--map")
        target, source = pair.split("=", 1)
        out[target.strip()] = source.strip()
    return out


def parse_families(ctx: click.Context, param: click.Parameter, pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """--family NAME=FAMILY (repeated) as (name, family) pairs."""
    out = []
    for pair in pairs:
        name, _, family = pair.partition("=")
        if not name.strip() or not family.strip():
            raise click.BadParameter(f"{pair!r}: use NAME=FAMILY (a judge or system name and its model family)",
                                     param_hint="--family")
        out.append((name.strip(), family.strip()))
    return tuple(out)


skip_bad_option = click.option("--skip-bad", is_flag=True, help="Skip bad lines (reported as file:line) instead of importing nothing.")
update_option = click.option(
    "--update", is_flag=True,
    help="Record changed content under a known (task, lang, system, source id) as a new version "
         "(earlier labels stay with their version) instead of refusing it.",
)


def _system_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    try:
        return None if value is None else check_system(value)
    except CalibrateError as exc:
        raise click.BadParameter(str(exc).removeprefix("--system: "), ctx=ctx, param=param) from None


def system_option(default_text: str, help_text: str = "The system under test (the model whose responses these are)"):
    """--system NAME, checked (not empty, not only spaces), its default stated in --help."""
    return click.option("--system", callback=_system_name, help=f"{help_text} [default: {default_text}].")


def system_filter_option(command):
    return click.option("--system", help="Only this system under test ('' for items without one).")(command)


# -- import ------------------------------------------------------------------------------------


@cli.group(name="import")
def import_group() -> None:
    """Import items (and judgments run elsewhere); list or abandon unfinished import runs."""


@import_group.command(name="jsonl", database=CREATES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", required=True, help="Task id, e.g. c3/heterograph or superglue/boolq.")
@lang_option("Language: en or zh.", required=True)
@click.option("--id-field", default="id", show_default=True, help="The line field holding the source id.")
@click.option("--map", "field_map", multiple=True, metavar="ITEM_FIELD=LINE_FIELD", help="Rename a field; may be repeated.")
@click.option("--reference-field", help="The line field holding the reference answer or gold label.")
@click.option("--judge-output", help="The line field holding a judge's raw output, run elsewhere (missing, null, "
                                     "empty or only whitespace: stored as a failed call, an error, never a verdict; a field no line "
                                     "has is refused).")
@click.option("--judge-name", help="Name of that judge (required with --judge-output).")
@click.option("--audio-field", help="The line field holding the path of the response's .wav (relative to FILE's folder).")
@system_option("none, for gold-only data")
@click.option("--system-field", help="The line field naming each line's system under test (instead of --system).")
@skip_bad_option
@update_option
@pass_ctx
def import_jsonl(ctx, file, task, lang, id_field, field_map, reference_field, judge_output, judge_name, audio_field,
                 system, system_field, skip_bad, update):
    """Import one item per JSON line."""
    from calibrate.formats.jsonl import jsonl_records

    if judge_output and not judge_name:
        raise click.UsageError("--judge-output needs --judge-name")
    if system is not None and system_field:
        raise click.UsageError("give --system or --system-field, not both")
    check_template_task(ctx, task, lang)
    size = file.stat().st_size if file.is_file() else 0
    with progress_bar(size, f"importing {file.name}") as advance:
        records = jsonl_records(
            file, task=task, lang=lang, id_field=id_field, field_map=parse_field_map(field_map),
            reference_field=reference_field, judge_output=judge_output, judge_name=judge_name, audio_field=audio_field,
            system=system or "", system_field=system_field, progress=advance,
        )
        run_import(ctx, records, skip_bad, update, system or "")


@import_group.command(name="c3", database=CREATES)
@click.option("--reference", "reference_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="C3's text root for the language (C3/english/text or C3/chinese/text).")
@click.option("--responses", "responses_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The spoken dialogue model's response tree (the .txt files).")
@click.option("--audio", "audio_dir", type=click.Path(file_okay=False, path_type=Path),
              help="A tree of the responses' .wav files, at the same relative paths as the .txt files "
                   "[default: beside the .txt files].")
@lang_option("Language: en or zh.", required=True)
@system_option("the --responses folder's name or, in C3's layout (MODEL/english/txt), that of the folder above "
               "txt/ and english/ or chinese/",
               "The spoken dialogue model that wrote the responses")
@skip_bad_option
@update_option
@pass_ctx
def import_c3(ctx, reference_dir, responses_dir, audio_dir, lang, system, skip_bad, update):
    """Import the C3 reference tree paired with a response tree.

    Responses are read as C3's evaluate.py reads them (CRLF line endings become LF). That
    script counts every file of a response folder as a response, so keep the .wav files in a
    tree of their own for it and name that tree with --audio."""
    from calibrate.formats.c3 import default_system
    from calibrate.formats.c3_tree import c3_audio_root, c3_conflict_advice, c3_parts, c3_records

    system, shown = named_system(system, *default_system(responses_dir, "responses"))
    parts = c3_parts(reference_dir, lang)
    audio_root = c3_audio_root(responses_dir, audio_dir) if responses_dir.is_dir() else None
    notes: list[str] = []
    with progress_bar(len(parts), "importing C3", unit="files") as advance:
        report = run_import(ctx, c3_records(reference_dir, responses_dir, lang, advance, system, audio_root,
                                            with_audio=audio_root is not None, notes=notes), skip_bad, update, shown,
                            conflict_advice=c3_conflict_advice)
    for note in notes:
        err_console.print(safe_text(note, style="yellow"))
    if audio_root is None:
        err_console.print(safe_text(f"no .wav files under {audio_dir or responses_dir}: {counted(report.records, 'item')} imported "
                                    "without audio (text only; --audio names a tree of .wav files)", style="yellow"))


@import_group.command(name="c3-results", database=CREATES)
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@lang_option("Language: en or zh.", required=True)
@click.option("--judge-name", required=True, help="Name for the judge that wrote these results.")
@click.option("--annotator", default=C3_RESULT_ANNOTATOR, show_default=True,
              help="Who the people's verdicts filled into generation records are stored as.")
@system_option("the one system with C3 items in this language, if there is exactly one; else the results "
               "folder's name or, in C3's layout (MODEL/JUDGE/english), that of the folder above english/ or "
               "chinese/ and a folder named after the judge; required where that system has no C3 items and others "
               "have",
               "The spoken dialogue model whose answers were judged")
@skip_bad_option
@update_option
@pass_ctx
def import_c3_results(ctx, results_dir, lang, judge_name, annotator, system, skip_bad, update):
    """Import the C3 script's result files: check_answer becomes a judgment.

    Records are matched to the items of the C3 tree by content (C3's script skips duplicates,
    so a record's position says nothing); items not imported yet are created from the records
    (content, reference, answer). A filled check_answer of a generation record is a person's
    label (--annotator); an empty one waits for a person."""
    from calibrate.formats.c3 import (
        c3_file_decisions,
        c3_passed_over,
        c3_result_parts,
        c3_result_records,
        c3_systems,
        default_system,
    )

    known = c3_systems(ctx.store, lang)
    parts = c3_result_parts(results_dir, lang)  # a missing folder is said before any question of its system
    named, how = default_system(results_dir, "results", judge_name)
    if system is None and len(known) == 1:
        system, shown = named_system(None, known[0], f"the one system with C3 {lang} items")
    elif system is None and known and named not in known:
        raise click.UsageError(
            f"--system is required: {results_dir} would be system {named} ({how}), which has no C3 {lang} items "
            f"here while {listing(known)} have: its records would make new items beside theirs instead of judging "
            "them (name the system whose answers these are; a new name makes its items from the records)")
    else:
        system, shown = named_system(system, named, how)
    # the cells where the records will make this system's items though other systems have the tree's
    beside = {part.task: others for part in parts if not part.multi_turn
              and not ctx.store.count_items(task=part.task, lang=lang, system=system, at_most=1)
              and (others := [s for s in ctx.store.systems(task=part.task, lang=lang) if s != system])}
    decided = {part.task for part in parts if part.people_decide}

    def decisions() -> dict[int, tuple[str, str]]:
        """The people's decisions in force on this system's generation items: item id -> (source id, label)."""
        return {row["item_id"]: (row["source_id"], row["label"]) for row in ctx.store.current_labels(
            annotator, lang=lang, system=system) if row["task"] in decided}

    def own_decisions() -> dict[int, tuple[str, str]]:
        """This judge's own decisions on them, as its result files held them: item id -> (source id, label)."""
        return {item_id: (found.source_id, found.label) for task in decided
                for item_id, found in c3_file_decisions(ctx.store, task, lang, system).get(judge_name, {}).items()}

    before, own_before = decisions() if decided else {}, own_decisions()
    notes: list[str] = []
    with progress_bar(len(parts), "importing C3 results", unit="files") as advance:
        report = run_import(ctx, c3_result_records(results_dir, lang, judge_name, ctx.templates, advance, system,
                                                   annotator, notes), skip_bad, update, shown,
                            labels_put_back_said=False)  # the generation decisions it changed are said below
    for note in notes:
        err_console.print(safe_text(note, style="yellow"))
    made = {task: n for task in beside if (n := ctx.store.count_items(task=task, lang=lang, system=system))}
    if made:
        others = sorted({s for task in made for s in beside[task]})
        err_console.print(safe_text(
            f"{counted(sum(made.values()), 'item')} of system {system} made from the result records ({listing(list(made), 5)}, "
            f"{lang}): this database holds those tasks' items under {listing(others)}, not under {system} (if those are "
            "the answers judged here, import into a fresh database with their --system)", style="yellow"))
    changed = sorted(source for item, (source, label) in decisions().items() if item in before and before[item][1] != label)
    if changed:
        err_console.print(safe_text(
            f"{counted(len(changed), 'generation decision')} of {annotator} changed by these files "
            f"({listing(changed, CHANGES_SHOWN)}): theirs "
            "now stand. calibrate keeps one decision per item; where judges' result folders hold different decisions, "
            "C3's process_results.py counts each judge's own", style="yellow"))
    redecided = sorted(source for item, (source, label) in own_decisions().items()
                       if item in own_before and own_before[item][1] != label and source not in changed)
    if redecided:
        err_console.print(safe_text(
            f"{counted(len(redecided), 'generation decision')} of {judge_name}'s result files changed since they were "
            f"imported before ({listing(redecided, CHANGES_SHOWN)}), to the label in force of {annotator}: "
            f"C3's figures for {judge_name} count the new ones", style="yellow"))
    passed = c3_passed_over(ctx.store, lang=lang, system=system)
    # per result file, the items C3's evaluate.py writes no record for (so none is expected there): what each repeats
    expected = {str(results_dir / f"{part.responses}.json"): {
        ctx.store.item(item_id).source_id: f"{where.repeats}'s {'first turn' if part.multi_turn else 'notation'}"
        for item_id, where in passed.items() if where.task == part.task} for part in parts}
    for path, cell, source_ids in report.unmatched:
        repeating = expected.get(path, {})
        if missing := [source for source in source_ids if source not in repeating]:
            err_console.print(safe_text(f"not judged by C3 (no record in {path}): {counted(len(missing), f'{cell} item')}: "
                                        f"{listing(missing, 10)}", style="yellow"))
        if skipped := [source for source in source_ids if source in repeating]:
            err_console.print(safe_text(
                f"C3's evaluate.py passes over {counted(len(skipped), f'{cell} item')} (no record in {path}, as that "
                f"script writes none for an item repeating an earlier one): "
                f"{listing([f'{source} repeats {repeating[source]}' for source in skipped], 10)}"))
    if counted_nowhere := sorted(ctx.store.verdicts_in_force_of((item_id, judge_name) for item_id in passed)):
        shown_ids = [ctx.store.item(item_id).source_id for item_id, _ in counted_nowhere[:CHANGES_SHOWN]]
        err_console.print(safe_text(
            f"{counted(len(counted_nowhere), 'record')} of {judge_name} judge items that C3's evaluate.py passes over "
            f"(repeating an earlier item's notation or first turn: {listing(shown_ids, CHANGES_SHOWN)}"
            f"{', …' if len(counted_nowhere) > CHANGES_SHOWN else ''}): stored, but no calibrate figure counts them, "
            "while C3's process_results.py run on these files would", style="yellow"))
    for part in (p for p in parts if p.people_decide):
        waiting = sum(1 for _ in ctx.store.iter_items(task=part.task, lang=lang, system=system, status="unlabelled"))
        if waiting:
            console.print(safe_text(f"{counted(waiting, f'{part.task} ({lang}) item')} {'waits' if waiting == 1 else 'wait'} "
                                    "for a person's label "
                                    f"(calibrate annotate --task {part.task} --lang {lang})"))


def _superglue_task(ctx: click.Context, param: click.Parameter, name: str) -> str:
    """`import superglue --task`, checked as an option value: a usage error naming the tasks."""
    from calibrate.formats.superglue import SUPERGLUE_TASKS, task_id

    try:
        task_id(name)
    except ImportFailed:
        raise click.BadParameter(unknown_value("SuperGLUE task", name, list(SUPERGLUE_TASKS), "the tasks"),
                                 ctx=ctx, param=param) from None
    return name


@import_group.command(name="superglue", database=CREATES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", "task_name", required=True, callback=_superglue_task,
              help="boolq, copa, cb, rte, wic, wsc, multirc, record, axb or axg.")
@click.option("--predictions", type=click.Path(dir_okay=False, path_type=Path),
              help='JSONL of {"idx": ..., "response": "..."}: the answers of the model under test (MultiRC\'s idx '
                   '{"paragraph", "question", "answer"}; ReCoRD\'s the query idx, or {"passage", "query"}).')
@system_option("the name of the folder holding --predictions (required where that folder is the working "
               "folder, FILE's folder or a task's); none without --predictions",
               "The model whose --predictions these are")
@skip_bad_option
@update_option
@pass_ctx
def import_superglue(ctx, file, task_name, predictions, system, skip_bad, update):
    """Import a SuperGLUE task's published JSONL."""
    from calibrate.formats.superglue import (
        default_system,
        superglue_conflict_advice,
        superglue_records,
        task_id,
    )

    if system is not None and not predictions:
        raise option_error("--system", "it names the model whose --predictions these are: give --predictions too "
                                       "(without them the items are stored gold-only, without a system)")
    shown = system or ""
    if system is None and predictions:
        default = default_system(predictions, file)
        if default is None:
            raise click.UsageError(f"--system is required: the folder of {predictions} does not say whose answers "
                                   "these are (name the model with --system, or keep each model's predictions in a "
                                   "folder named after it)")
        system, shown = named_system(None, default, "the predictions' folder")
    size = file.stat().st_size if file.is_file() else 0
    unanswered = 0

    def noting_unanswered(records):
        """The records, counting the items the predictions do not answer (stored gold-only, without a system)."""
        nonlocal unanswered
        for record in records:
            unanswered += bool(predictions) and isinstance(record, Record) and record.item is not None \
                and not record.item.system
            yield record

    def none_answered(report: ImportReport) -> str | None:
        """Why nothing is imported where no item the predictions answer is (their lines bad)."""
        if predictions and not report.systems[system]:
            return (f"no item that {predictions} answers is among the records of {file} read as items (the lines "
                    f"holding them are bad), so system {system} would have no {task_id(task_name)} item")
        return None

    with progress_bar(size, f"importing {file.name}") as advance:
        run_import(ctx, noting_unanswered(superglue_records(file, task_name, predictions, advance, system or "")), skip_bad,
                   update, shown, conflict_advice=superglue_conflict_advice, refusal=none_answered)

    if unanswered:
        err_console.print(safe_text(f"{counted(unanswered, 'item')} of {file} had no prediction in {predictions}: stored "
                                    "gold-only, without a system (not scored for it)", style="yellow"))


@import_group.command(name="rubric", database=CREATES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--judge-output", help="The line field holding a judge's raw output, run elsewhere (missing, null, "
                                     "empty or only whitespace: stored as a failed call, an error, never a verdict; a field no line "
                                     "has is refused).")
@click.option("--judge-name", help="Name of that judge (required with --judge-output).")
@system_option("none")
@skip_bad_option
@update_option
@pass_ctx
def import_rubric(ctx, file, judge_output, judge_name, system, skip_bad, update):
    """Import reference-scoring rubric records (question, content, answer, llm_answer, llm_reasoning)."""
    from calibrate.formats.rubric import rubric_records

    if judge_output and not judge_name:
        raise click.UsageError("--judge-output needs --judge-name")
    size = file.stat().st_size if file.is_file() else 0
    with progress_bar(size, f"importing {file.name}") as advance:
        records = rubric_records(file, judge_output=judge_output, judge_name=judge_name, system=system or "", progress=advance)
        run_import(ctx, records, skip_bad, update, system or "")


@import_group.command(name="inspect", database=CREATES)
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@lang_option("The language of the samples.", default="en")
@system_option("the log's evaluated model", "The model whose outputs were scored")
@click.option("--scorer", help="The scorer whose scores to import [default: the log's only scorer].")
@skip_bad_option
@update_option
@pass_ctx
def import_inspect(ctx, logs, lang, system, scorer, skip_bad, update):
    """Import Inspect AI logs (.eval or .json): a sample's scores become judgments.

    One item per sample and epoch (input, target, the solver's output) in task inspect/<task>;
    a model-graded score is a judgment of the grader model with the grader's exact messages as
    its prompt; the score's value (C/I, True/False, a number from 0 to 1, text) is the verdict,
    and people label in the same values. In a reviewed log (score edits, as `export inspect`
    writes them) the scorer's original score is the judgment and each edit a label of its author,
    with their notes. Each eval's grading is a judgment of its own; the newest eval's, by the
    time the eval was created (UTC where the log gives no zone), is in force whatever order the
    logs come in. A log whose eval time lies more than 5 minutes ahead of this machine's clock is
    refused, and nothing of the logs named with it is imported."""
    from itertools import chain

    from calibrate.formats.inspect import FAMILY, inspect_records, merged_labels, open_log

    opened = [open_log(path, scorer) for path in logs]
    for log in opened:
        if (ahead := log.ahead_of_clock()) is not None:
            raise ImportFailed(ahead)
    stored = {(task, task_lang): labels for task, task_lang, _, labels in ctx.store.data_tasks()}
    tasks: dict[str, tuple[str, ...]] = {}
    for log in opened:
        tasks[log.task] = merged_labels(log.task, lang, tasks.get(log.task) or stored.get((log.task, lang)), log.labels)
        if (incomplete := log.incomplete()) is not None:
            err_console.print(safe_text(f"{log.path}: {incomplete}", style="yellow"))
        if not log.model_graded:
            err_console.print(safe_text(f"{log.path}: scorer {log.scorer} is not model-graded (its scores keep no grader "
                                        f"messages): its values are imported as judgments of '{log.scorer}' without a "
                                        "prompt", style="yellow"))
    data_tasks = [(task, lang, FAMILY, labels) for task, labels in tasks.items()]
    ctx.templates.add_data_tasks(data_tasks)
    records = chain.from_iterable(inspect_records(log, lang=lang, system=system) for log in opened)
    models = list(dict.fromkeys(log.model for log in opened))
    _, shown = named_system(system, ", ".join(models), "the log's evaluated model" if len(models) == 1
                            else "each log's evaluated model")
    run_import(ctx, records, skip_bad, update, shown, data_tasks=data_tasks)


@import_group.command(name="runs", database=READS)
@click.option("--all", "show_all", is_flag=True, help="Finished runs too.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def import_runs_command(ctx, show_all, as_json):
    """List unfinished import runs: running, or dead (removed by the next import or `import abandon`)."""
    runs = ctx.store.import_runs(unfinished=not show_all)
    if not runs and not as_json:
        console.print("no import is running or left unfinished")
        return
    columns = ["id", "state", "source", "host", "pid", "started_at", "finished_at", "heartbeat_age"]
    rows = [[run["id"], run["state"], run["source"], run["host"], run["pid"], run["started_at"], run["finished_at"],
             None if run["heartbeat_age"] is None else round(run["heartbeat_age"], 1)] for run in runs]
    print_table("import runs", columns, rows, as_json)


@import_group.command(name="abandon", database=WRITES)
@click.argument("run", type=int)
@click.option("--force", is_flag=True, help="Abandon a run that still looks alive: only when its process is gone.")
@pass_ctx
def import_abandon_command(ctx, run, force):
    """Remove an unfinished import run and everything it wrote (none of it was ever shown).

    A dead run is removed by the next import anyway: a run is dead once its heartbeat is a
    minute old, or at once when its process is gone from this machine."""
    found = next((r for r in ctx.store.import_runs() if r["id"] == run), None)
    if found is None:
        raise click.ClickException(f"no import run {run} in {ctx.db_path} (calibrate import runs lists them)")
    if found["state"] == "finished":
        raise click.ClickException(f"import run {run} finished at {found['finished_at']}: its items are imported, "
                                   "nothing to abandon")
    if found["state"] == "running" and not force:
        raise click.ClickException(
            f"import run {run} is running ({_describe_import_run(found)}; heartbeat {found['heartbeat_age']:.0f} s ago): "
            "stop that import, or pass --force if its process is gone")
    removed = ctx.store.abandon_import(run)
    console.print(safe_text(f"abandoned import run {run} ({found['source']}): {counted(removed, 'item')} removed"))


# -- look around -------------------------------------------------------------------------------

STATUSES = ["judged", "unjudged", "unparsed", "error", "labelled", "unlabelled", "flagged"]


@cli.command(name="items", database=READS)
@click.option("--task", help="Only this task.")
@lang_option()
@click.option("--status", type=click.Choice(STATUSES),
              help="judged: a judge's verdict in force on the item is a verdict or an unparsed output (a failed "
                   "call, an error, is no verdict); unjudged: none is; unparsed, error: a verdict in force is one.")
@system_filter_option
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True, help="Show at most this many items.")
@click.option("--offset", type=click.IntRange(0), default=0, show_default=True, help="Skip this many items first.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def items_command(ctx, task, lang, status, system, limit, offset, as_json):
    """List items, filtered by task, language, system and status."""
    rows = []
    check_filters(ctx, task=task, lang=lang, system=system)
    found = list(ctx.store.iter_items(task=task, lang=lang, status=status, system=system, limit=limit + 1,
                                      offset=offset))  # one more than shown: whether more match
    for item in found[:limit]:
        if as_json:
            rows.append([item.id, item.task, item.lang, item.system, item.source_id, item.reference, item.fields])
        else:  # the terminal gets a one-line preview of the fields; --json has the item whole
            rows.append([item.id, item.task, item.lang, item.system, item.source_id,
                         json.dumps(item.fields, ensure_ascii=False)[:200]])
    if not rows:
        given = filters_given(task=task, lang=lang, system=system, status=status)
        matching = ctx.store.count_items(task=task, lang=lang, system=system) if status is None else 0
        raise click.ClickException(f"no items in {ctx.db_path}" + (f" match {given}" if given else "")
                                   + (f" at --offset {offset}: {matching} match" if matching else "")
                                   + ("" if given or matching else ": import items first (calibrate import …)"))
    columns = ["id", "task", "lang", "system", "source_id", "reference", "fields"]
    print_table("items", columns if as_json else [c for c in columns if c != "reference"], rows, as_json)
    if len(found) > limit:
        err_console.print(f"items {offset + 1}–{offset + limit} shown; more match: --offset {offset + limit} shows the "
                          "next ones, --limit N more at once", style="yellow")


@cli.command(name="status", database=READS)
@system_filter_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--runs", is_flag=True, help="Every judge run (requests, retries, failures by cause) instead of the cells.")
@pass_ctx
def status_command(ctx, system=None, as_json=False, runs=False):
    """Items, judged, unparsed, errors, labelled per cell (task × language × system); the last judge runs.

    An item is judged when a judge's verdict in force on it is a verdict or an unparsed output
    (counted under unparsed too); one whose only verdicts failed (errors) is not judged."""
    if runs:
        _print_judge_runs(ctx.store.judge_runs(), as_json)
        return
    check_filters(ctx, system=system)
    counts = ctx.store.status_counts(system=system)
    if not counts:
        raise click.ClickException(f"no items in {ctx.db_path}: import items first (calibrate import …)")
    columns = ["system", "task", "lang", "items", "judged", "unparsed", "errors", "labelled"]
    if as_json:
        print_table("status", columns, [[c[k] for k in columns] for c in counts], as_json)
        return
    for name in dict.fromkeys(c["system"] for c in counts):  # a table per system keeps 80 columns readable
        rows = [[c[k] for k in columns[1:]] for c in counts if c["system"] == name]
        print_table(f"status of {ctx.db_path} · system {name or '(none)'}", columns[1:], rows, False)
    if any(c["errors"] for c in counts):
        console.print(JUDGED_MEANS, style="dim")
    recent = ctx.store.judge_runs(limit=JUDGE_RUNS_SHOWN)
    if recent:
        _print_judge_runs(recent, False, title=f"the last {counted(len(recent), 'judge run')} (more: status --runs)", full=False)


JUDGE_RUNS_SHOWN = 5
JUDGED_MEANS = ("judged counts the items with a judge's verdict or unparsed output in force; a failed judgment "
                "(errors) is no verdict, so an item with only failed ones is not judged")


def _print_judge_runs(runs: list[dict], as_json: bool, title: str = "judge runs", full: bool = True) -> None:
    """Judge runs: what each asked and stored, and what its requests cost (retries, timeouts,
    429s); `full` adds when, where, errors, truncations, requests, concurrency and why a run stopped."""
    if as_json:
        columns = list(runs[0]) if runs else []
        print_table(title, columns, [[run[c] for c in columns] for run in runs], True)
        return
    if not runs:
        console.print("no judge runs recorded yet (calibrate judge records each run)")
        return
    columns = ["run", "judge", "server", "outcome", "stored", "retries", "timeouts", "429s"]
    if full:
        columns[1:1] = ["started"]
        columns += ["errors", "truncated", "requests", "concurrency"]
    rows = []
    for run in runs:
        lowest = run["concurrency_lowest"]
        values = {
            "run": run["id"], "started": run["started_at"][:16].replace("T", " "), "judge": run["judge_name"],
            "server": run["server"] or "(offline)", "outcome": run["outcome"] or "running or died",  # None: another machine's run
            "stored": f"{run['stored']}/{run['samples']}", "retries": run["retries"],
            "timeouts": run["failures"].get("timed out", 0), "429s": run["failures"].get("HTTP 429", 0),
            "errors": run["errors"], "truncated": run["truncated"], "requests": run["requests"],
            "concurrency": run["concurrency"] if lowest in (None, run["concurrency"]) else f"{run['concurrency']}→{lowest}",
        }
        rows.append([values[c] for c in columns])
    print_table(title, columns, rows, False)
    for run in runs if full else ():
        if run["message"]:
            console.print(safe_text(f"run {run['id']} {run['outcome']}: {run['message']}", style="yellow"))


# -- templates -----------------------------------------------------------------------------------


@cli.group(name="templates")
def templates_group() -> None:
    """List and show judge prompt templates."""


@templates_group.command(name="list", database=None)
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def templates_list(ctx, as_json):
    """List every template with its tasks, language, verdict kind and version."""
    rows = [
        [t.id, t.lang, " ".join(t.tasks), t.verdict, t.version if t.has_prompt else "(no prompt)", ", ".join(t.required)]
        for t in ctx.templates.templates.values()
    ]
    print_table("templates", ["id", "lang", "tasks", "verdict", "version", "required fields"], rows, as_json)


@templates_group.command(name="show", database=None)
@click.argument("template_id")
@pass_ctx
def templates_show(ctx, template_id):
    """Print one template: its manifest entry, system prompt and prompt text."""
    if template_id not in ctx.templates.templates:
        match = closest(template_id, list(ctx.templates.templates))
        raise click.BadParameter(f"unknown template {template_id!r}" + (f" (did you mean {match}?)" if match else "")
                                 + "; calibrate templates list lists them", ctx=click.get_current_context(),
                                 param_hint="'TEMPLATE_ID'")
    t = ctx.templates.get(template_id)
    click.echo(safe(f"id: {t.id}\nfamily: {t.family}\nlang: {t.lang}\ntasks: {', '.join(t.tasks)}"))
    click.echo(safe(f"verdict: {t.verdict}{' ' + '/'.join(t.labels) if t.labels else ''}\nrequired: {', '.join(t.required)}"))
    click.echo(safe(f"version: {t.version}\nsource: {t.source}\n"))
    if t.system:
        click.echo(safe(f"--- system ---\n{t.system}\n"))
    click.echo(safe(f"--- prompt ---\n{t.text}") if t.has_prompt else "(no judge prompt: humans decide this task)")


@cli.command(name="render", database=READS)
@click.argument("item_id", type=int)
@click.option("--variant", help="Template family to render with (e.g. c3-official) instead of the judged prompt.")
@click.option("--judge", help="The prompt this judge was given (default: the latest judgment's).")
@pass_ctx
def render_command(ctx, item_id, variant, judge):
    """Print the judge prompt (system and user) for one item.

    The prompt the item's latest judgment was made with, naming its template; with no judgment
    yet (or with --variant), the template's prompt rendered now. The first line (on stderr)
    says which."""
    from calibrate.judgments import render_for
    from calibrate.templates import RenderedPrompt

    item = ctx.store.item(item_id)
    if item is None:
        raise click.ClickException(f"no item {item_id} in {ctx.db_path}")
    check_filters(ctx, judge=judge)
    judged = None if variant else next((j for j in ctx.store.judgments_for_item(item_id, judge) if j.prompt), None)
    if judged is None and not ctx.templates.for_task(item.task, item.lang).has_prompt:
        click.echo(safe(f"item {item_id} ({item.task}, {item.lang}) has no judge prompt in any family: people decide "
                        "it (calibrate annotate)."))
        click.echo(safe_json(item.fields))
        return
    template = ctx.templates.for_task(item.task, item.lang, variant)
    if judged is not None:
        err_console.print(safe_text(f"the prompt judge {judged.judge_name} was given (template {judged.template_id or '?'}, "
                                    f"judgment #{judged.id})", style="dim"))
        click.echo(safe(RenderedPrompt(template, judged.system_prompt, judged.prompt).as_text()))
        return
    if not template.has_prompt:
        why = ("its judgments bring their own prompt, and none of them has one (a scorer that sends none)"
               if template.stored_prompts else "humans decide it")
        click.echo(safe(f"item {item_id} ({item.task}, {item.lang}) has no judge prompt: {why}."))
        click.echo(safe_json(item.fields))
        return
    how = "the --variant" if variant else "no judgment yet: the default"
    err_console.print(safe_text(f"{how} template {template.id}, rendered now", style="dim"))
    click.echo(safe(render_for(ctx.templates, item, variant).as_text()))


@cli.command(name="parse", database=WRITES)
@click.option("--judge", help="Only this judge's judgments.")
@pass_ctx
def parse_command(ctx, judge):
    """Re-parse stored judge outputs; report what changed.

    For after a parser change: raw outputs are never rewritten, only the verdicts."""
    from calibrate.judgments import reparse

    check_filters(ctx, judge=judge)
    if not ctx.store.known("judge"):
        raise click.ClickException(f"no judgments in {ctx.db_path} to parse: run calibrate judge, or import "
                                   "judgments run elsewhere (--judge-output)")
    changes = reparse(ctx.store, ctx.templates, judge)
    if not changes:
        console.print("no verdict changed")
        return
    rows = [[frm, to, n] for (frm, to), n in sorted(changes.items(), key=lambda kv: -kv[1])]
    print_table("verdict changes", ["from", "to", "count"], rows, False)


@cli.group(name="config", invoke_without_command=True, database=None)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def config_command(click_ctx, as_json):
    """Each effective setting and where it came from; `config trust` trusts ./calibrate.toml."""
    if click_ctx.invoked_subcommand is not None:
        return
    rows = click_ctx.find_object(Context).settings.rows()
    if as_json:
        print_table("settings", ["setting", "value", "from"], [list(r) for r in rows], as_json)
        return
    console.print("settings: a flag wins, then the environment, then ./calibrate.toml, then the user config", style="dim")
    for name, value, source in rows:
        console.print(Text.assemble((f"{name} = ", "bold"), value or "(none)", (f"   from {source}", "dim")))


@config_command.command(name="trust", database=None)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=CONFIG_NAME)
def config_trust(file):
    """Let a folder's settings file (default ./calibrate.toml) set templates, base_url and
    api_key_env, as its bytes are now: read it first, it decides prompts and where the key goes."""
    trusted = trust_settings_file(file)
    sensitive = [f"{name} = {redact_url(str(value)) if name == 'base_url' else value}"
                 for name, value in trusted.data.items() if SETTINGS[name].needs_trust]
    console.print(safe_text(f"trusted {file.resolve()} (sha256 {trusted.sha256[:12]}) until it changes"
                            + (": " + "; ".join(sensitive) if sensitive else "")))


# -- demo --------------------------------------------------------------------------------------


@cli.command(name="demo", database=CREATES)
@click.option("--no-tui", is_flag=True, help="Import and print the status table without opening the app.")
@click.pass_context
def demo_command(click_ctx, no_tui):
    """Import the bundled demo data and open the app on it.

    Re-running adds nothing. Without a terminal (or with --no-tui) it prints the status table.
    A database holding items of systems other than the demo's is refused: use a file of its own."""
    from calibrate.demo import DEMO_SYSTEMS, load_demo

    ctx = click_ctx.find_object(Context)
    if others := [system for system in ctx.store.systems() if system not in DEMO_SYSTEMS]:
        raise click.ClickException(safe(
            f"{ctx.db_path} holds items that are not the demo's (system {', '.join(map(repr, others))}): the demo would "
            "mix its made-up items, judgments and labels with them. Run it on a file of its own: "
            "calibrate --db demo.db demo"))
    summary = load_demo(ctx.store, ctx.templates)
    ctx.keep_file()  # the demo's database is whole: whatever ends the app (a closed terminal), people's labels stay
    console.print(safe_text(f"demo data in {ctx.db_path}: {summary}"))
    if no_tui or not in_terminal():
        click_ctx.invoke(status_command, as_json=False)
        return
    click_ctx.invoke(annotate_command)


# -- annotate ------------------------------------------------------------------------------------


def check_app_files(guidelines: Path | None, keymap: str | Path | None) -> dict[str, str] | None:
    """Refuse, before the app starts, a guidelines or keymap file it could not read (not UTF-8,
    not TOML, a key that is not text): the error names the file. Returns the keymap as read, for
    the app to check and use (the file is read once)."""
    if guidelines:
        read_text_file(guidelines)
    return read_keymap(keymap) if keymap else None


def in_terminal() -> bool:
    """Whether input and output are a terminal, where the annotation app can run (without one it
    would draw escape sequences into a file or a pipe, waiting for keys that never come)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def annotate_options(command):
    """The options `annotate` and `serve` share."""
    from calibrate.session import ORDERS

    for option in reversed([
        click.option("--annotator", help="Who is labelling [default: $CALIBRATE_ANNOTATOR, calibrate.toml, else $USER, else 'annotator']."),
        click.option("--task", help="Only this task."),
        lang_option(),
        click.option("--system", help="Only this system under test."),
        click.option("--judge", help="Show this judge's verdicts (default: the latest judgment)."),
        click.option("--blind", is_flag=True, help="Hide the judge's verdict until you have labelled."),
        click.option("--order", type=click.Choice(ORDERS), default="in-order", show_default=True, metavar="ORDER",
                     help=f"The queue's order: {', '.join(ORDERS)}. Items you skip come back once, after the rest "
                          "of the queue. "
                          "informative: next the label that most narrows the corrected scores' intervals "
                          "(cells with wide intervals and contested verdicts first; random within a cell). "
                          "escalate: first the items whose judge verdict `trust` cannot accept (none in a cell "
                          "with fewer labelled items than its minimum, 198 at the defaults; said when the app "
                          "closes)."),
        click.option("--overlap", type=click.IntRange(1), default=1, show_default=True,
                     help="How many different annotators each item should get (2+ for human-human agreement)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed for the random and stratified orders."),
        click.option("--guidelines", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="A guidelines file shown by g (default: the template manifest's guidelines)."),
        click.option("--keymap", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help='TOML of binding id = keys, e.g. "annotate.next" = "right,m" [or $CALIBRATE_KEYMAP].'),
        click.option("--require-listen", is_flag=True, help="Take a label on an item with audio only after it has played (l)."),
        click.option("--audio-root", type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="Look for the audio here instead of where it was imported from (the folder moved)."),
    ]):
        command = option(command)
    return command


@cli.command(name="annotate", database=WRITES)
@annotate_options
@click.option("--tab", hidden=True, help="The browser tab this app serves (set by `calibrate serve`).")
@pass_ctx
def annotate_command(ctx, annotator=None, task=None, lang=None, system=None, judge=None, blind=False, order="in-order",
                     overlap=1, seed=0, guidelines=None, keymap=None, require_listen=False, audio_root=None, tab=None):
    """Label items in the annotation app (TUI).

    Shows the item, the rendered prompt, the judge's verdict and the reference; confirm or
    override with one key. Every decision is saved at once. Runs in a terminal only (elsewhere,
    label in a browser with `calibrate serve`)."""
    from calibrate.session import RELABEL, AnnotationSession

    settings = ctx.settings.with_flags(annotator=annotator, keymap=keymap)
    annotator, keymap = settings.get("annotator"), settings.get("keymap")
    annotator = checked_annotator(annotator)
    check_queue_filters(ctx, task=task, lang=lang, system=system, judge=judge)
    ctx.store.check_writable()  # refused now, not at the app's first decision
    bindings = check_app_files(guidelines, keymap)
    if tab is None and not in_terminal():  # a tab of `calibrate serve` runs the app without a terminal
        raise click.ClickException("annotate opens a full-screen app and needs a terminal (input and output are "
                                   "not one here): run it in a terminal, or label in a browser with calibrate serve")
    templates = ctx.templates  # (read while the store is open)
    ctx.close()
    options = {"annotator": annotator, "judge": judge, "blind": blind, "order": order, "overlap": overlap, "seed": seed,
               "require_listen": require_listen, "audio_root": audio_root, "tab": tab}
    # the session first: its first reads (the queue's count, the stratified lanes) go on while Textual is imported
    session = AnnotationSession(Store(ctx.db_path), templates, task=task, lang=lang, system=system, **options)
    from calibrate.tui import CalibrateApp

    app = CalibrateApp(ctx.db_path, templates=templates, task=task, lang=lang, system=system, guidelines_file=guidelines,
                       keymap_file=keymap, keymap=bindings, session=session, **options)
    app.run()
    if app.fault is not None:  # the database file is damaged: nothing more could be saved
        raise click.ClickException(str(app.fault))
    progress = app.session.progress()
    saved = ", ".join(counted(app.saved[kind], kind) for kind in ("label", RELABEL, "skip", "flag", "undo", "note")
                      if app.saved[kind])
    console.print(safe_text(f"{annotator}: {saved or 'nothing'} saved in {ctx.db_path} "
                            f"({progress.labelled}/{progress.total} items labelled in the last queue). "
                            f"See agreement with: calibrate --db {ctx.db_path} report"))
    if app.session.fallback_note:  # the order found none of the items it puts first
        err_console.print(safe_text(f"--order {app.session.fallback_note}.", style="yellow"))
    if app.held_back or app.lost:
        held = (f"the items you held come back to you when you start again, and to others when their leases end (in "
                f"{app.session.lease_seconds / 60:g} min at most)") if app.held_back else ""
        console.print(f"Another writer held the database as the app ended: {'; '.join(filter(None, (app.lost, held)))}.")
    if app.session.trust_marks is not None:  # the escalate order's, as built when the queue started
        say_trust_refusals(app.session.trust_marks.refusals(app.session.task, app.session.lang),
                           "the escalate order sent all their items to people first")
    if app.lost:
        raise SystemExit(1)


@cli.command(name="serve", database=WRITES)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told otherwise).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port to listen on (0: any free port, shown in the printed URL).")
@click.option("--annotators", "annotators_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help='TOML of name = "token" lines: each person gets their own URL (default: one random token, '
                   "and each tab asks who is labelling).")
@click.option("--max-connections", type=click.IntRange(1), default=16, show_default=True, help="Tabs connected at once.")
@annotate_options
@pass_ctx
def serve_command(ctx, host, port, annotators_file, max_connections, **options):
    """Serve the annotation app in a browser, behind a login token.

    Prints the URL to open (…/?token=…); anything without the token gets 403. Each tab is one
    annotator's session: tabs never share an item, and u undoes only that tab's decisions."""
    from calibrate.serve import CalibrateServer, Logins, is_loopback, listening_socket, url_host

    check_queue_filters(ctx, **{name: options[name] for name in ("task", "lang", "system", "judge")})
    ctx.store.check_writable()  # refused now, not in each tab at its first decision
    logins = Logins.from_file(annotators_file) if annotators_file else Logins()
    annotator = options.pop("annotator")
    annotator = annotator if annotator is None else checked_annotator(annotator)
    options["keymap"] = ctx.settings.with_flags(keymap=options["keymap"]).get("keymap")
    bindings = check_app_files(options["guidelines"], options["keymap"])
    if bindings is not None:  # the tabs' apps would each refuse it
        from calibrate.tui.app import checked_keymap

        checked_keymap(options["keymap"], bindings)
    args = [sys.executable, "-m", "calibrate", "--db", str(Path(ctx.db_path).resolve())]
    for folder in ctx.template_dirs:
        args += ["--templates", str(Path(folder).resolve())]
    args.append("annotate")
    for name, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + name.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    if not is_loopback(host):
        err_console.print(f"warning: binding {host} lets anyone who can reach this machine try to connect; "
                          "the token is the only protection and travels unencrypted over http", style="bold yellow")
    ctx.close()  # checked and brought up to date; each tab's app opens it for itself
    listening = listening_socket(host, port)
    base = f"http://{url_host(host)}:{listening.getsockname()[1]}"
    console.print("serving calibrate (Ctrl-C stops); open:")
    for person, url in logins.urls(base):
        console.print(safe_text(f"  {url}" + (f"   ({person})" if person else "")))
    CalibrateServer(args, host=host, port=port, logins=logins, max_connections=max_connections,
                    annotator=annotator, db_path=str(Path(ctx.db_path).resolve()),
                    audio_root=options.get("audio_root")).serve(listening)


# -- judge ---------------------------------------------------------------------------------------


class JudgeKind(click.Choice):
    """`judge --judge`: how to judge, llm or rule. Other commands' --judge names a judge, so a
    name given here (gpt-4o) is refused with where a model's name goes."""

    def convert(self, value, param, ctx):
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            if isinstance(value, str) and value.strip().lower() in self.choices:
                raise click.BadParameter(f"{value!r} is not one of 'llm', 'rule' (did you mean "
                                         f"{value.strip().lower()}?)", ctx=ctx, param=param) from None
            raise click.BadParameter(
                f"{value!r} is not one of 'llm', 'rule': here --judge says how to judge (elsewhere it names a "
                f"judge); to ask the model {value}, give --model {value} (--judge-name stores its verdicts under "
                "another name)", ctx=ctx, param=param) from None


RULE_JUDGE_READS = {"judge_kind", "task", "lang", "system", "limit", "force"}


def _refuse_llm_options() -> None:
    """`judge --judge rule` asks no model: an option only the LLM judge reads (--model,
    --temperature, …) would be ignored, so giving one is a usage error naming it."""
    ctx = click.get_current_context()
    given = [param.opts[0] for param in ctx.command.params  # (--db, --templates and --help are not exposed)
             if param.expose_value and param.name not in RULE_JUDGE_READS
             and ctx.get_parameter_source(param.name) is not click.core.ParameterSource.DEFAULT]
    if given:
        raise click.UsageError(f"--judge rule asks no model, so {', '.join(given)} would be ignored: "
                               f"{'it is' if len(given) == 1 else 'they are'} for --judge llm")


@cli.command(name="judge", database=WRITES)
@click.option("--judge", "judge_kind", type=JudgeKind(["llm", "rule"]), default="llm", show_default=True,
              help="llm: ask a model; rule: parse SuperGLUE responses offline and compare with gold.")
@click.option("--model", help="Model name to ask (required for llm).")
@click.option("--base-url", help="OpenAI-compatible server URL [default: $OPENAI_BASE_URL, calibrate.toml, else OpenAI].")
@click.option("--api-key-env", help="Environment variable holding the API key [default: OPENAI_API_KEY].")
@click.option("--judge-name", help="Name stored with the judgments (default: the model).")
@click.option("--concurrency", type=click.IntRange(1, 1024), default=8, show_default=True,
              help="Most requests in flight; halved on a timeout, an HTTP 429 or 503, grown back as answers come.")
@click.option("--task", help="Only this task.")
@lang_option()
@system_filter_option
@click.option("--limit", type=click.IntRange(1), help="Judge at most this many items (items that failed in an earlier run only where fewer are left that did not).")
@click.option("--temperature", type=float, help="Sampling temperature [default: 0; none with --reasoning].")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True,
              help="Ask each item K times under one judge (test-retest consistency; confidence from the repeats).")
@click.option("--max-tokens", type=click.IntRange(1), help="Output token limit (max_completion_tokens with --reasoning).")
@click.option("--logprobs", is_flag=True, help="Ask for logprobs and store P(verdict) where the server gives them.")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0, show_default=True,
              help="Seconds a request may take once the server is on it (counted from when it is the oldest "
                   "request in flight: waiting behind our own earlier requests does not count).")
@click.option("--max-retries", type=click.IntRange(0), default=3, show_default=True,
              help="Times a failed request is asked again (a timeout, a lost connection, HTTP 429 or 5xx) before "
                   "its item is stored as an error.")
@click.option("--force", is_flag=True, help="Judge again items already judged by this configuration (a new judgment beside the old).")
@click.option("--export-batch", type=click.Path(dir_okay=False, path_type=Path), help="Write the requests as OpenAI Batch JSONL instead of calling.")
@click.option("--import-batch", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Store the results of a batch.")
@click.option("--variant", metavar="FAMILY",
              help="Judge with this template family's prompts (e.g. c3-official: C3's own wording, with its "
                   "temperature 0 and max_tokens 2048 unless given) instead of each task's default.")
@click.option("--seed", type=int, help="Sampling seed sent with each request (servers that honour it repeat answers).")
@click.option("--top-p", type=click.FloatRange(0, 1), help="Nucleus sampling: top_p sent with each request.")
@click.option("--stop", multiple=True, metavar="TEXT", help="A stop sequence; may be repeated.")
@click.option("--system-prompt", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="A file whose text replaces every template's system prompt (part of the judge's identity).")
@click.option("--param", "extra_params", multiple=True, metavar="KEY=VALUE",
              help="Another request field the server accepts, the value read as JSON if it is JSON (top_k=40); may be repeated.")
@click.option("--reasoning", is_flag=True,
              help="A reasoning model: send no temperature, and --max-tokens as max_completion_tokens "
                   "(chosen by itself when the server refuses temperature).")
@click.option("--progress-every", type=click.FloatRange(0.1), default=10.0, show_default=True,
              help="Seconds between progress lines when stderr is not a terminal.")
@pass_ctx
def judge_command(ctx, judge_kind, model, base_url, api_key_env, judge_name, concurrency, task, lang, system, limit,
                  temperature, repeat, max_tokens, logprobs, timeout, max_retries, force, export_batch, import_batch,
                  seed, top_p, stop, system_prompt, extra_params, reasoning, progress_every, variant):
    """Run a judge over items and store its verdicts (resumable)."""
    import asyncio

    from calibrate.formats.c3 import c3_passed_over
    from calibrate.formats.openai_batch import export_batch as write_batch
    from calibrate.formats.openai_batch import import_batch as read_batch
    from calibrate.judge_progress import JudgeProgress
    from calibrate.judge_rule import RULE_JUDGE, run_rule_judge
    from calibrate.judge_runner import (
        JudgeConfig,
        JudgeRefused,
        RunStopped,
        parse_param,
        plan_jobs,
        refusal_message,
        resume_reasoning,
        run_jobs,
    )
    from calibrate.judge_summary import RunSummary

    check_queue_filters(ctx, task=task, lang=lang, system=system, judge=None)
    if judge_kind == "rule":
        _refuse_llm_options()
        summary = run_rule_judge(ctx.store, ctx.templates, task=task, lang=lang, system=system, force=force, limit=limit)
        _say_outside_family("the rule judge reads SuperGLUE responses only", summary)
        if summary.no_response:
            err_console.print(safe_text(_cells_counted(summary.no_response) + " passed over: no system's response to "
                                        "read (gold-only items, imported without --predictions; an LLM judge answers "
                                        "them itself: calibrate judge --model NAME)", style="yellow"))
        if summary.skipped_done and not summary.stored:
            _nothing_to_judge(summary, [], RULE_JUDGE)
            return
        if not summary.stored:
            given = filters_given(task=task, lang=lang, system=system)
            if task and not task.startswith("superglue/"):
                how = ("people decide them (calibrate annotate)" if ctx.templates.people_decide(task, lang or "en") else
                       "an LLM judge judges them (calibrate judge --model NAME --base-url URL"
                       + (", --variant c3-official for C3's own prompts)" if task.startswith("c3/") else ")"))
                raise click.ClickException(f"the rule judge reads SuperGLUE responses only (the predicted label against "
                                           f"the reference); {task} is not a SuperGLUE task: {how}")
            raise click.ClickException(f"nothing was judged: no SuperGLUE items with a model response in {ctx.db_path}"
                                       + (f" match {given}" if given else "") + ": import them with "
                                       "calibrate import superglue FILE --task NAME --predictions FILE")
        _print_judge_summary(summary, advice=RULE_UNPARSED_ADVICE)
        return
    if not model:
        raise click.UsageError("--model is required (or use --judge rule)")
    if (judge_name or model) == RULE_JUDGE:
        raise option_error("--judge-name" if judge_name else "--model",
                           f"{RULE_JUDGE!r} is the rule judge's name (judge --judge rule): a model's verdicts under it "
                           "would mix with the rule's; give the judge another --judge-name")
    if reasoning and temperature is not None:
        raise click.UsageError("--reasoning sends no temperature (reasoning models take only their default)")
    settings = ctx.settings.with_flags(base_url=base_url, api_key_env=api_key_env)
    (base_url, url_source), api_key_env = settings.lookup("base_url"), settings.get("api_key_env")
    if variant:
        if variant not in ctx.templates.families():
            raise option_error("--variant", unknown_value("template family", variant, ctx.templates.families(),
                                                          "known families"))
        requested = ctx.templates.request_defaults(variant)
        given = click.get_current_context().get_parameter_source("temperature") != click.core.ParameterSource.DEFAULT
        temperature = temperature if given else requested.get("temperature", temperature)
        max_tokens = max_tokens if max_tokens is not None else requested.get("max_tokens")
    config = JudgeConfig(
        model=model, base_url=base_url, api_key_env=api_key_env, judge_name=judge_name, concurrency=concurrency,
        temperature=temperature or 0.0, max_tokens=max_tokens, logprobs=logprobs, timeout=timeout,
        max_retries=max_retries, repeat=repeat, seed=seed, top_p=top_p, stop=stop,
        system_prompt=read_system_prompt(system_prompt, "--system-prompt", UserFileError),
        extra=dict(parse_param(text) for text in extra_params), reasoning=reasoning, family=variant,
    )
    if problem := config.url_problem():
        if url_source == "command line":
            raise option_error("--base-url", problem)
        raise click.UsageError(f"{problem}; set by {url_source}")
    if resumed := resume_reasoning(ctx.store, config):
        err_console.print(safe_text(f"note: {resumed}", style="yellow"))
    if repeat > 1 and not config.reasoning and not config.temperature:
        err_console.print(safe_text(
            f"warning: --repeat {repeat} at temperature 0: the repeats will agree by construction unless the server "
            "samples anyway, so they measure little consistency and their majority adds nothing; give --temperature "
            "(e.g. 0.7) to sample", style="yellow"))
    summary = RunSummary()
    if import_batch:
        found = read_batch(ctx.store, ctx.templates, config, import_batch, summary, force=force)
        _say_batch_import(found, import_batch)
        _print_judge_summary(summary)
        if found.batch and found.batch.unanswered:
            unanswered = len(found.batch.unanswered)
            raise click.ClickException(f"{unanswered} of the batch's {found.batch.requests} requests "
                                       f"{'has' if unanswered == 1 else 'have'} no result yet (named above)")
        return
    jobs = plan_jobs(ctx.store, ctx.templates, config, task=task, lang=lang, system=system, limit=limit, force=force,
                     summary=summary, passed_over=c3_passed_over(ctx.store, lang=lang, system=system, task=task))
    if summary.response_unseen:
        err_console.print(safe_text(_response_unseen_words(summary.response_unseen), style="yellow"))
    left_out = _items_left_out(summary)
    _say_outside_family(f"--variant {variant} judges the tasks it has templates for", summary)
    if summary.c3_passes_over:
        cells = _per_cell(summary.c3_passes_over)
        n = sum(summary.c3_passes_over.values())
        err_console.print(safe_text(f"{counted(n, 'item')} not asked ({cells}): {'it' if n == 1 else 'each'} repeats an "
                                    "earlier item's notation or first turn, which C3's evaluate.py passes over, so no "
                                    f"C3 figure counts {'it' if n == 1 else 'them'} (scores and export c3 leave "
                                    f"{'it' if n == 1 else 'them'} out)"))
    if variant and not jobs and not summary.skipped_done and not left_out:
        given = filters_given(task=task, lang=lang, system=system)
        raise click.ClickException(f"no item{f' matching {given}' if given else ''} has a {variant} template: "
                                   "nothing to judge")
    if not jobs:
        _nothing_to_judge(summary, left_out, config.name, export_batch)
        return
    if export_batch:
        n = write_batch(ctx.store, jobs, config, export_batch)
        console.print(f"wrote {counted(n, 'request')} to {export_batch} ({summary.skipped_done} already judged, skipped)")
        _refuse_left_out(left_out)
        return
    if repeat == 1:
        console.print(safe_text(f"{counted(len(jobs), 'item')} to judge with {config.name} at {redact_url(config.url)}; "
                                f"{summary.skipped_done} already judged (no call)"))
    else:
        console.print(safe_text(f"{counted(len({job.item.id for job in jobs}), 'item')}, {counted(len(jobs), 'sample')} to ask (up to {repeat} "
                                f"per item: those not yet stored) with {config.name} at {redact_url(config.url)}; "
                                f"{summary.skipped_done} already judged (no call)"))
    if replacing := other_configurations(ctx.store, jobs, config):
        err_console.print(safe_text(f"note: {replacing_words(config.name, replacing, done=False)}", style="yellow"))
    if beside := runs_beside(ctx.store, config):
        err_console.print(safe_text(
            f"warning: {config.name} is being judged now with another configuration too (run "
            f"{', '.join(str(run['id']) for run in beside)}): the two runs replace each other's verdicts item by item; "
            f"{KEEP_BOTH[0].lower()}{KEEP_BOTH[1:]}", style="yellow"))
    started = now_iso()
    stopped = None
    with JudgeProgress(err_console, jobs, summary, every=progress_every) as progress:
        try:
            asyncio.run(_terminated_as_interrupted(run_jobs(ctx.store, jobs, config, summary, progress)))
        except (KeyboardInterrupt, asyncio.CancelledError):
            summary.interrupted = True
        except (JudgeRefused, RunStopped) as exc:
            stopped = exc
    if replaced := replaced_words(ctx.store, jobs, config, replacing, summary.items_stored):
        summary.notes.append(replaced)
    if beside := runs_beside(ctx.store, config, since=started):
        summary.notes.append(beside_words(ctx.store, jobs, config, beside, summary.items_stored))
    if isinstance(stopped, JudgeRefused):
        _print_judge_summary(summary, check=False)
        raise click.ClickException(f"the judge server refused: {refusal_message(stopped, config)}. "
                                   f"{_stored(summary.stored)}.")
    if stopped is not None:
        _print_judge_summary(summary, check=False)
        raise click.ClickException(f"{stopped} ({_stored(summary.stored)})")
    if summary.interrupted:
        _print_judge_summary(summary, check=False)
        raise click.ClickException(f"interrupted: {_stored(summary.stored)}; run again to resume")
    _print_judge_summary(summary)
    _refuse_left_out(left_out)


BATCH_ITEMS_SHOWN = 5  # the first few items a batch import's notes name


def _say_batch_import(found, path: Path) -> None:
    """On stderr, what a batch result file held beside its judgments: requests it answers more
    than once (one judgment each kept), and the requests of its batch with no result yet (or
    that this database has no record of the batch, so these cannot be told), and error results
    stored already (the file imported again)."""
    if found.errors_again:
        err_console.print(safe_text(
            f"{counted(found.errors_again, 'error result')} of {path} {'is' if found.errors_again == 1 else 'are'} "
            f"stored already, with the same message: not stored again ({ASKED_AGAIN})", style="yellow"))
    if found.repeated:
        shown = [f"item {source} on lines {', '.join(map(str, lines))}: kept line {kept}"
                 for source, lines, kept in found.repeated]
        err_console.print(safe_text(
            f"{counted(len(shown), 'request')} of {path} {'has' if len(shown) == 1 else 'have'} more than one result "
            f"line; one judgment per request was stored, of the last line that is not an error "
            f"({listing(shown, BATCH_ITEMS_SHOWN)})", style="yellow"))
    batch = found.batch
    if batch is None and found.answered:
        err_console.print(safe_text(
            f"note: no batch written by --export-batch into this database holds the requests of {path}, so "
            "requests of the batch that have no result cannot be named", style="yellow"))
    elif batch is not None and batch.unanswered:
        one = len(batch.unanswered) == 1
        err_console.print(safe_text(
            f"{len(batch.unanswered)} of the {batch.requests} requests of the batch written to {batch.path} on "
            f"{batch.exported_at[:16].replace('T', ' ')} UTC {'has' if one else 'have'} no result yet: "
            f"{'item' if one else 'items'} {listing(batch.unanswered, BATCH_ITEMS_SHOWN)}. The "
            "Batch API writes failed requests to a separate error file: import it too (--import-batch), or judge "
            "again without --import-batch to ask them", style="red"))


async def _terminated_as_interrupted(run):
    """Awaits `run`, cancelled on SIGTERM (kill, `timeout`) as asyncio.run cancels it on Ctrl-C,
    so the run records what it stored as interrupted and the command says so."""
    import asyncio

    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, asyncio.current_task().cancel)
    try:
        return await run
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def _items_left_out(summary) -> list[str]:
    """Why items the run was asked to judge were left out, each reason once with its count,
    printed on stderr: tasks no template serves, prompts that cannot be rendered."""
    lines = []
    if summary.no_template:
        cells = _per_cell(summary.no_template)
        lines.append(f"{counted(sum(summary.no_template.values()), 'item')} of tasks no template serves not judged "
                     f"({cells}); add their template folder with --templates DIR (calibrate templates list "
                     "shows the templates loaded)")
    for reason, ids in summary.not_renderable.items():
        lines.append(f"{counted(len(ids), 'item')} cannot be rendered ({reason}): id {listing(list(map(str, ids)), 5)}; fix the template or "
                     "the items' fields (calibrate render ID shows one)")
    for line in lines:
        err_console.print(safe_text(line, style="yellow"))
    return lines


def _per_cell(cells) -> str:
    """Items counted by (task, lang), in words: "superglue/boolq (en): 2, superglue/cb (en): 1"."""
    return ", ".join(f"{task} ({lang}): {n}" for (task, lang), n in sorted(cells.items()))


def _cells_counted(cells) -> str:
    """Items counted by (task, lang), their number first: "3 items (superglue/boolq (en): 2, …)"."""
    return f"{counted(sum(cells.values()), 'item')} ({_per_cell(cells)})"


def _say_outside_family(judges: str, summary) -> None:
    """The line counting the items of other tasks a judge passed over (`summary.outside_family`),
    after what it `judges`; nothing when it passed over none."""
    if summary.outside_family:
        err_console.print(safe_text(f"{judges}: {counted(sum(summary.outside_family.values()), 'item')} of other tasks "
                                    f"passed over ({_per_cell(summary.outside_family)})"))


def _response_unseen_words(cells) -> str:
    """Why `judge --model` does not ask the selected items that carry a system's response their
    template's prompt does not show, and what to do instead."""
    instead = ["score the system's answers with calibrate judge --judge rule", "benchmark a model on SuperGLUE by "
               "importing the tasks without --predictions (into a database of their own)"] \
        if any(task.startswith("superglue/") for task, _ in cells) else []
    instead.append("judge with a template that shows the response (--templates DIR)")
    return (f"{_cells_counted(cells)} not asked: they carry a system's response that their template's prompt does "
            "not show, so the model would answer the task itself and its accuracy would be filed under that system; "
            "instead, " + "; or ".join(instead))


def _refuse_left_out(left_out: list[str]) -> None:
    if left_out:
        raise click.ClickException("some items were not judged (see above); the next run asks only for them")


def _nothing_to_judge(summary, left_out: list[str], name: str, batch: Path | None = None) -> None:
    """No request to make for the items selected (`check_queue_filters` made sure there are
    some): every one is judged already (done, exit 0), or none could be asked (an error saying
    why, or pointing at the lines above that did: items left out, responses the prompt does not
    show). Asked for a `batch` file, it is an error whatever the reason: no file was written,
    and a script's next step would upload a stale one or none."""
    unwritten = "" if batch is None else "; no batch file was written" + (
        f" ({batch} is left as it was)" if batch.exists() else "")
    if left_out:
        raise click.ClickException(f"nothing was judged (see above){unwritten}")
    if summary.skipped_done:
        done = f"nothing to judge: {name} has judged all {summary.skipped_done} (--force judges them again)"
        if batch is not None:
            raise click.ClickException(done + unwritten)
        console.print(safe_text(done))
        return
    if summary.response_unseen:
        raise click.ClickException(f"nothing was asked (see above){unwritten}")
    what = "item selected is of a task" if summary.no_prompt == 1 else "items selected are of tasks"
    raise click.ClickException(f"nothing to judge: the {summary.no_prompt} {what} people decide (no judge prompt); "
                               f"label {'it' if summary.no_prompt == 1 else 'them'} with calibrate annotate{unwritten}")


def _stored(n: int) -> str:
    """How a stopped run says what it kept ("1 judgment was stored")."""
    return f"{counted(n, 'judgment')} {'was' if n == 1 else 'were'} stored"


LLM_UNPARSED_ADVICE = ("see them with calibrate items --status unparsed, and the prompt one answered with calibrate "
                       "render ID; does the model follow the template's answer format (another --variant, a "
                       "--system-prompt), and is it the model meant?")
RULE_UNPARSED_ADVICE = ("see them with calibrate items --status unparsed: the rule judge reads the system's own "
                        "responses with the task's parsing rules; are they the predictions meant for these items?")


def _print_judge_summary(summary, check: bool = True, advice: str = LLM_UNPARSED_ADVICE) -> None:
    """The per-cell table and totals, what the requests cost (retries and timeouts by cause),
    warnings and advice (`advice` for outputs that mostly did not parse: the LLM judge's or the
    rule judge's); then, if any item ended in error, the reasons grouped and a non-zero exit (a
    run with errors did not succeed, even if it stored something); so does a run none of whose
    outputs parsed."""
    rows = summary.table()
    if rows:
        print_table("judged" if summary.repeat == 1 else f"samples judged ({summary.repeat} per item)",
                    summary.columns(), rows, False)
    errors = f" ({summary.failed} of them errors)" if summary.failed else ""
    console.print(f"{counted(summary.stored, 'judgment')} stored{errors}, {counted(summary.skipped_done, summary.unit)} already judged "
                  "(skipped)")
    requests = summary.requests
    if requests.attempts:
        causes = ", ".join(f"{n} × {cause}" for cause, n in requests.failures.most_common())
        line = requests.words() + (f"; failed: {causes}" if causes else "")
        if summary.concurrency_lowest is not None and summary.concurrency_lowest < summary.concurrency[1]:
            line += f"; concurrency went down to {summary.concurrency_lowest} of {summary.concurrency[1]}"
        console.print(safe_text(line, style="yellow" if causes else ""))
    for model, n in summary.other_models.items():
        err_console.print(safe_text(f"warning: the server reported model {model!r} for {n} answers, not the model asked for",
                                    style="yellow"))
    for note in summary.notes:
        err_console.print(safe_text(f"note: {note}", style="yellow"))
    for reason, n in summary.no_confidence.most_common():
        err_console.print(safe_text(f"no confidence for {counted(n, 'verdict')}: {reason}", style="yellow"))
    truncated = sum(n for key, n in summary.cells.items() if key[2] == "truncated")
    if truncated:
        asked = summary.stored + summary.skipped_done
        err_console.print(safe_text(
            f"{counted(truncated, 'output')} {'was' if truncated == 1 else 'were'} cut at the token limit (stored as unparsed, \"truncated at N tokens\"): raise "
            f"--max-tokens. That is another configuration of the judge: it asks all {counted(asked, summary.unit)} of this run "
            f"again, not only the {truncated} cut, and its verdicts replace these item by item; --task, --lang and "
            "--limit narrow it, and another --judge-name keeps it a judge of its own", style="yellow"))
    unparsed, parsed = summary.outputs("unparsed"), summary.outputs("verdict")
    if unparsed > parsed and summary.unparsed:  # (truncations have their advice above)
        reasons = "; ".join(f"{n} × {reason}" for reason, n in summary.unparsed.most_common(3))
        err_console.print(safe_text(
            f"warning: {unparsed} of the {unparsed + parsed} outputs did not parse as a verdict ({reasons}): {advice}",
            style="yellow"))
    if summary.unsent and check:
        raise click.ClickException(
            f"{counted(summary.unsent, 'request')} could not be sent: no connection to the server could be made "
            f"(after its retries); {'it is' if summary.unsent == 1 else 'they are'} not stored, and the next run asks "
            f"{'it' if summary.unsent == 1 else 'them'}")
    if summary.errors and check:
        for reason, n in summary.errors.most_common():
            err_console.print(safe_text(f"{n} × {reason}   e.g. {summary.error_examples[reason]}", style="red"))
        raise click.ClickException(f"{summary.failed} of {counted(summary.stored, summary.unit)} ended in error (stored as errors; "
                                   f"{ASKED_AGAIN})")
    if unparsed and not parsed and check:
        outputs = "the one output" if unparsed == 1 else f"none of the {unparsed} outputs"
        raise click.ClickException(f"{outputs} of this run {'did not parse' if unparsed == 1 else 'parsed'} as a verdict "
                                   f"(see above); {'it is' if unparsed == 1 else 'they are'} stored as unparsed, and the "
                                   f"next run does not ask {'it' if unparsed == 1 else 'them'} again (--force does)")


# -- measure -------------------------------------------------------------------------------------

REPORT_FORMATS = ["table", "markdown", "json", "csv", "html"]


@cli.command(name="report", database=READS)
@click.option("--judge", help="Only this judge.")
@system_filter_option
@by_option("task,lang")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="table", show_default=True)
@out_option
@click.option("--wide", is_flag=True, help="Terminal table: add AC1, sensitivity, specificity, prevalence, leniency; "
              "for rubric scores, Pearson, Kendall, weighted κ and pass/fail κ beside Spearman and MAE.")
@click.option("--unparsed", type=click.Choice(["exclude", "as-negative", "as-disagreement"]), default="exclude",
              show_default=True, help="Unparsed verdicts: leave out (counted), count as no/否 as C3's script does "
              "(kinds with a negative label), or count as disagreeing with the person (categories); where a kind "
              "does not allow it (scores), left out and said per cell.")
@click.option("--unparsed-as-disagreement", is_flag=True, help="Same as --unparsed as-disagreement.")
@click.option("--gold-from", metavar="ANNOTATOR", help="An adjudicator whose label is the gold where present.")
@click.option("--reliability", is_flag=True,
              help="Measure the judges' reliability and bias probes even without repeats or confidences "
                   "(reads every labelled item's response).")
@click.option("--resamples", type=click.IntRange(100), default=4000, show_default=True,
              help="Posterior draws / resamples for intervals.")
@click.option("--target", type=click.FloatRange(0.01, 1), default=0.1, show_default=True, help="κ CI half-width to plan for.")
@click.option("--threshold", type=float, default=60.0, show_default=True, help="Pass/fail threshold for rubric scores.")
@click.option("--epsilon", type=click.FloatRange(0, 1), default=0.2, show_default=True,
              help="Alternative annotator test margin (Calderon et al. 2025: 0.2 experts, 0.15 skilled, 0.1 crowd workers).")
@click.option("--family", "families", multiple=True, metavar="NAME=FAMILY", callback=parse_families,
              help="The model family of a judge or system (e.g. gpt-4o=openai); flags a judge grading its own family. "
              "May be repeated.")
@pass_ctx
def report_command(ctx, judge, system, by, fmt, out, wide, unparsed, unparsed_as_disagreement, gold_from, reliability,
                   resamples, target, threshold, epsilon, families):
    """Judge-vs-human agreement per task × language.

    κ, AC1 and agreement with 95 % intervals, sensitivity and specificity, beside the
    human–human ceiling on the same items; for rubric scores Spearman, Pearson, Kendall, MAE,
    weighted κ and pass/fail κ with 95 % intervals; in five formats. An interval simulated to
    cover less than 93 % in data like these is marked ~ with the figure."""
    from calibrate import report as reports
    from calibrate.reliability_cells import JURY

    options = reports.ReportOptions(by=by, unparsed="as-disagreement" if unparsed_as_disagreement else unparsed,
                                    resamples=resamples, target_half_width=target, threshold=threshold,
                                    epsilon=epsilon, gold_from=gold_from, families=families,
                                    reliability=reliability)
    check_filters(ctx, system=system, judge=None if judge == JURY else judge, gold_from=gold_from, families=families)
    _check_judged(ctx, () if judge in (None, JURY) else (judge,), system, "to compare with people")
    result = reports.build_report(ctx.store, ctx.templates, judge=judge, options=options, system=system)
    if not any(line.n for cell in result.cells for line in cell.lines):
        raise click.ClickException(_nothing_to_report(ctx, result.cells, None if judge == JURY else judge, system))
    emit(result, fmt, out, "report", lambda r, c: reports.render_table(r, c, wide=wide), reports.RENDERERS,
         width=200 if wide else 120)
    given = click.get_current_context().get_parameter_source("threshold") is not click.core.ParameterSource.DEFAULT
    if given and not any(c.lines and c.kind is not None and c.kind.scored for c in result.cells):
        err_console.print(safe_text(f"note: --threshold {threshold:g} was not used: it is the pass/fail threshold of "
                                    "rubric scores, and no cell of this report compares scores", style="yellow"))


JUDGE_AGAIN = "ask the judge again (calibrate judge), or import its outputs: a verdict replaces a failed call"


def _no_verdicts(ctx: Context, judge: str | None, none: str, system: str | None = None) -> str:
    """Why there is no judge verdict to work with (`none` says so, its `{db}` the database): judges
    whose every call failed, or none has run."""
    if failed := ctx.store.failed_only_judges(system=system, judge=judge):
        shown = [f"{name} ({counted(n, 'error')})" for name, n in failed.items()]
        return (f"{none.format(db=ctx.db_path)}: every call of {listing(shown)} failed, no verdict "
                f"(calibrate items --status error lists them): {JUDGE_AGAIN}")
    return f"{none.format(db=ctx.db_path)}: run calibrate judge first"


def _nothing_to_report(ctx: Context, cells, judge: str | None, system: str | None) -> str:
    """Why the report has no line with a number, and what to do."""
    if not cells:
        return _no_verdicts(ctx, judge, "no judge verdicts in {db} to compare with people", system)
    labelled = [c for c in cells if c.lines]
    if not labelled:
        return "no agreement to report yet: " + ". ".join(_why_unlabelled(cells))
    tied = sum(line.jury_ties for c in labelled for line in c.lines)
    return (f"no agreement to report: every labelled item's verdict is unparsed in the labelled cells "
            f"({_cells_and_judges({(c.key, c.system) for c in labelled}, {c.judge for c in labelled})})"
            + (f", or the jury's judges tie on it ({tied} labelled items tied, which --unparsed does not settle)"
               if tied else "") + "; see --unparsed, or calibrate parse after a parser change")


def _why_unlabelled(cells) -> list[str]:
    """Why none of the report's `cells` has a labelled item with a verdict, per kind of cell:
    labelled items that hold only failed calls, every call failed (asking again is what helps
    there), or judged items none of which is labelled (labelling is)."""
    def judges(of) -> str:
        return f"{listing(sorted({c.judge for c in of}))} in {counted(len({(c.key, c.system) for c in of}), 'cell')}"

    failed = [c for c in cells if c.labelled_errors]
    only_failed = [c for c in cells if not c.labelled_errors and not c.judged]
    to_label = [c for c in cells if c.labelled_errors == 0 and c.judged]
    said = [f"the calls of {judges(failed)} on labelled items failed, no verdict"] if failed else []
    said += [f"every call of {judges(only_failed)} failed"] if only_failed else []
    reasons = ["; ".join(said) + f" (calibrate items --status error lists them): {JUDGE_AGAIN}"] if said else []
    if to_label:
        reasons.append(f"{'None' if said else 'none'} of the items that {judges(to_label)} judged is labelled by people: "
                       "label some (calibrate annotate) or import labels (calibrate import labels FILE)")
    return reasons


def _check_judged(ctx: Context, judges: tuple[str, ...], system: str | None, purpose: str) -> None:
    """A report or scores of one `system` on which a named judge (any judge, when none is
    named) has no verdict, refused naming the judges that met nothing and the system, and the
    judges that did judge its items: the judge filter and the system filter each exist, but a
    named judge would be left out without a word."""
    if system is None:
        return
    judged = ctx.store.judge_names(system=system)
    missing = [judge for judge in judges if judge not in judged]
    if not missing and (judges or judged):
        return
    what = (f"{listing(missing)} judged none of the items" if judges else "no judge has judged the items")
    raise click.ClickException(f"{what} of system {system!r} in {ctx.db_path}: nothing {purpose}"
                               + (" with " + ("it" if len(missing) == 1 else "them") if len(missing) < len(judges) else "")
                               + (f"; judges of its items: {listing(judged)}" if judged else
                                  f" (calibrate judge --system {system!r} judges them)"))


def _cells_and_judges(cells: set, judges: set) -> str:
    """What a listing of judge × cell rows covers, as "1 cell, 3 judges"."""
    return f"{counted(len(cells), 'cell')}, {counted(len(judges), 'judge')}"


@cli.command(name="scores", database=READS)
@by_option("system,task,lang", "; with system, each system overall is shown too")
@click.option("--judge", "judges", multiple=True, callback=_each_once,
              help="Only this judge; may be repeated (C3's two: --judge dpsk --judge gpt). [default: every judge]")
@system_filter_option
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="table", show_default=True)
@click.option("--target", type=click.FloatRange(0.001, 1), default=0.05, show_default=True,
              help="Half-width the corrected 95 % interval should reach: how many more labels that takes.")
@out_option
@pass_ctx
def scores_command(ctx, by, judges, system, fmt, target, out):
    """Each system's benchmark score, raw and corrected for the judge's errors.

    Per system × task × language and per system overall: the judge's accuracy three ways (C3's
    own rule, calibrate's parser with unparsed and errors counted wrong, then left out), people's
    accuracy, and the corrected accuracy (stratified by the judge's verdict; Rogan–Gladen
    beside it) with 95 % intervals; C3's final score (mean over judges); the ranking of
    systems; judge against judge. Rubric items are left out (their verdicts are 0-100 scores,
    not right or wrong; `report` shows how the judge's scores follow people's), and a database
    of rubric items only exits 1 saying so."""
    from calibrate.scores import render
    from calibrate.scores.build import build_scores

    check_filters(ctx, system=system)
    for judge in judges:
        check_filters(ctx, judge=judge)
    _check_judged(ctx, judges, system, "to score")
    with ctx.store.reading():  # one snapshot: a label given meanwhile counts in every figure or in none
        result = build_scores(ctx.store, ctx.templates, by=by, judges=judges, system=system, target=target)
    emit(result, fmt, out, "scores", render.render_table, render.RENDERERS, width=240)
    if fmt == "csv" and (left_out := render.csv_leaves_out(result)):
        err_console.print(safe_text(left_out, style="yellow"))


def min_labels_option(what: str):
    """--min-labels of `trust` and the export's trust marks (the default is
    `calibrate.stats.trust_or_escalate.minimum_calibration`, computed where the statistics are loaded)."""
    return click.option("--min-labels", type=click.IntRange(0), default=None, metavar="N",
                        help=f"{what}. [default: 9 × the fewest the exact test can certify at --target and --risk, "
                             "198 at 0.9 and 0.1, chosen by simulation: with fewer, most certifications are wrong on "
                             "fresh items]")


def more_notes(n: int) -> str:
    """How an import summary counts the notes that came beside labels (a label's notes after its
    first, on a label the import added or one already present)."""
    return f"{counted(n, 'more note')} beside labels"


def say_trust_refusals(refusals: list[tuple[str, str]], consequence: str) -> None:
    """Where no confidence threshold was certified (too few labelled items, or the target not
    met: `TrustMarks.refusals`), say so on stderr, each reason once with its cells: a mark never
    changes silently."""
    from calibrate.fit import hanging, said_once

    if not refusals:
        return
    lines = [(safe_text(f"no confidence threshold certified in {counted(len(refusals), 'cell')} "
                        f"({consequence}; see calibrate trust):", style="yellow"), 0, 2)]
    lines += [(safe_text(line), 2, 4) for line in said_once(refusals)]
    for text, first, rest in lines:
        if err_console.soft_wrap:  # a log or a pipe: one line each
            err_console.print(Text(" " * first) + text)
        else:
            err_console.print(hanging(text, err_console.width, first, rest), soft_wrap=False)


@cli.command(name="trust", database=READS)
@click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_TARGET,
              show_default=True, help="Agreement with people the accepted verdicts must reach.")
@click.option("--risk", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_RISK,
              show_default=True, help="Chance allowed that they do not (the guarantee holds with probability 1 - risk).")
@click.option("--judge", help="Only this judge.")
@by_option("task,lang")
@click.option("--gold-from", metavar="ANNOTATOR", help="An adjudicator whose label is the gold where present.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv", "markdown"]), default="table",
              show_default=True)
@min_labels_option("Certify a threshold only from N labelled items (0: from as few as the test allows)")
@out_option
@pass_ctx
def trust_command(ctx, target, risk, judge, by, gold_from, fmt, min_labels, out):
    """The confidence above which a judge's verdicts can be accepted without a person.

    Per cell and judge, from the human-labelled items: the threshold, the share of items it
    accepts and how many labels stand behind it, the lower bound on their agreement, and the
    smallest shortfall that many labels could detect (fixed-sequence testing with an exact
    binomial bound; Jung et al., ICLR 2025), or why no threshold is certified. The guarantee:
    repeating the calibration on fresh labelled items, at most a share `risk` of the
    repetitions would certify a threshold where the judge misses the target. Rubric scores are
    no verdict to accept: they are left out, and a database of them only exits 1 saying so."""
    from calibrate import trust

    check_filters(ctx, judge=judge, gold_from=gold_from)
    with ctx.store.helpers() as helpers, ctx.store.reading(*helpers):
        result = trust.build_trust(ctx.store, ctx.templates, by=by, target=target, risk=risk, judge=judge,
                                   gold_from=gold_from, min_labels=min_labels, helpers=helpers)
    if not result.rows:
        raise click.ClickException(result.scores_only() or _no_verdicts(ctx, judge, "no judge verdicts with a yes/no or label verdict in {db}"))
    if not any(row.found.n for row in result.rows):
        raise click.ClickException(
            f"nothing to assess: no judge verdict in {ctx.db_path} has both a confidence and a human label "
            f"({_cells_and_judges({(r.system, r.task, r.lang) for r in result.rows}, {r.judge for r in result.rows})}). "
            "Judge with --logprobs (or --repeat K) for a confidence, and label items "
            "(calibrate annotate, or calibrate import labels FILE)")
    emit(result, fmt, out, "trust thresholds", trust.render_table, trust.RENDERERS, width=120)


@import_group.command(name="labels", database=WRITES)
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@skip_bad_option
@pass_ctx
def import_labels_command(ctx, file, skip_bad):
    """Import human labels made elsewhere (JSONL or CSV: task, lang, source_id, annotator, label, note).

    A gold export (calibrate export, JSONL or CSV) reads back as each person's own labels and
    notes, never its gold label; a person's label edited in its CSV takes effect."""
    from calibrate.formats.labels import CONSOLIDATED_REASON, NOTES_LEFT_OUT_REASON, import_labels
    from calibrate.names import CONSOLIDATED

    done = import_labels(ctx.store, ctx.templates, file, skip_bad=skip_bad)
    for bad in done.skipped:
        err_console.print(safe_text(f"skipped {bad}", style="yellow"))
    if done.consolidated:
        err_console.print(safe_text(f"{counted(done.consolidated, 'row')} refused: {CONSOLIDATED_REASON}", style="yellow"))
    if done.notes_left_out:
        err_console.print(safe_text(f"the notes of {counted(done.notes_left_out, 'item')} left out (or some of them): "
                                    f"{NOTES_LEFT_OUT_REASON}", style="yellow"))
    if done.superseded:
        shown = [f"{place} by {standing}" for place, standing in done.superseded]
        err_console.print(safe_text(
            f"{counted(len(shown), 'row')} of {file} left out: a later row labels the same item for the same annotator "
            f"otherwise, and the file's last word stands ({listing(shown, CHANGES_SHOWN)})", style="yellow"))
    say_labels_out_of_order(done.added.put_back, done.added.older)
    read = ", ".join(f"{who} {n}" for who, n in done.by_annotator.items())
    notes = f", {more_notes(done.added.notes)}" if done.added.notes else ""
    console.print(safe_text(f"{counted(done.added.labels, 'label')} added, {done.present} already present{notes}, "
                            f"{len(done.skipped)} skipped"
                            + (f", {counted(done.unlabelled, 'item')} without a label left out" if done.unlabelled else "")
                            + (f", {done.consolidated} refused (annotator {CONSOLIDATED!r})" if done.consolidated else "")
                            + f"; labels read: {read}"))


@cli.command(name="merge", database=CREATES)
@click.argument("other", type=click.Path(dir_okay=False))
@pass_ctx
def merge_command(ctx, other):
    """Fold another calibrate database into this one.

    For an offline annotator's copy: items by content hash, judgments and annotations by uid, so
    running it twice adds nothing. OTHER is only read, never changed; rows that fail validation
    are refused and listed. The label in force is the latest decision by time, whichever file
    it came from. Refused rows make the exit status 1 (the rest is merged)."""
    from calibrate.merge import merge_database

    if Path(other).resolve() == Path(ctx.db_path).resolve():
        raise click.ClickException("cannot merge a database into itself")
    other_store = Store.open_other(other)
    try:
        report = merge_database(ctx.store, other_store, ctx.templates)
    finally:
        other_store.close()
    added = report.added
    older = (f" (made by an older calibrate: read through a copy upgraded to this calibrate's schema; {other} is "
             "left as it was)") if other_store.upgraded_copy else ""
    console.print(safe_text(f"merged {other}{older}: {counted(added['items'], 'item')}, {counted(added['judgments'], 'judgment')}, "
                            f"{counted(added['annotations'], 'annotation')} added"))
    say_verdicts_changed(report.changed, "this merge")
    say_left_behind(report.left_behind, f" merged from {other}")
    if report.redacted:
        err_console.print(safe_text(f"blanked credentials out of {counted(report.redacted, 'judgment')} from {other}", style="yellow"))
    if report.refused:
        counts = ", ".join(counted(n, table) for table, n in sorted(report.refused.items()))
        err_console.print(safe_text(f"refused {counts} from {other}:", style="yellow"))
        for example in report.examples:
            err_console.print(safe_text(f"  {example}"))
        if sum(report.refused.values()) > len(report.examples):
            err_console.print(f"  … and {sum(report.refused.values()) - len(report.examples)} more")
        raise click.ClickException(f"{counted(sum(report.refused.values()), 'row')} of {other} refused (listed above), "
                                   "not merged; the rest is merged, and merging again adds only what is fixed")


@cli.group(name="export", invoke_without_command=True, database=READS)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option("--out", type=OUT_FILE, callback=out_file_callback, help="File to write (default: standard output).")
@system_filter_option
@click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_TARGET,
              show_default=True, help="Trust marks: agreement with people an accepted verdict must reach (see `trust`).")
@click.option("--risk", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_RISK,
              show_default=True, help="Trust marks: the risk allowed (see `trust`).")
@min_labels_option("Trust marks: no verdict is accepted in a cell with fewer labelled items (see `trust`)")
@click.pass_context
def export_group(click_ctx, fmt, out, system, target, risk, min_labels):
    """Export gold labels, verdicts and notes (JSONL, CSV, C3).

    Items with every annotator's label, the consolidated label (majority; for rubric scores the
    mean, each score also in a CSV column of its own), judge verdicts,
    whether each judge's verdict is accepted or needs a person (as `trust` finds), and notes;
    `export c3` writes C3's own result layout."""
    if click_ctx.invoked_subcommand is not None:
        return
    from calibrate.cells import CellKinds
    from calibrate.formats.gold import write_csv, write_jsonl
    from calibrate.reliability_cells import trust_marks

    ctx = click_ctx.find_object(Context)
    check_filters(ctx, system=system)
    if not (total := ctx.store.count_items(system=system)):
        raise click.ClickException(f"no items to export in {ctx.db_path}: import items first (calibrate import …)")
    # the trust marks and the rows from one snapshot of the database, which helper connections put together; a
    # bar on a terminal's stderr counts the items written (seconds at a million), from when the marks are worked out.
    # The rows go to standard output as it is before the bar, which stands in for it while it shows
    stdout = sys.stdout
    with ctx.store.helpers() as helpers, ctx.store.reading(*helpers), \
            progress_bar(total, f"exporting {fmt}", unit="items") as advance:
        kinds = CellKinds(ctx.templates, BY_CHOICES)
        options = {"helpers": helpers, "progress": advance}
        if fmt == "csv":  # a CSV gives rubric scores columns of their own where some item's kind has them
            options["scores"] = kinds.any_scored(ctx.store.task_langs(system=system))
        writer = functools.partial(write_jsonl if fmt == "jsonl" else write_csv, **options)
        marks = trust_marks(ctx.store, kinds, target=target, risk=risk, min_labels=min_labels, helpers=helpers)
        met = None if system is None else {(task, lang, name) for task, lang, of, name in ctx.store.judged_cells()
                                           if of == system}  # the cells of the items it exports
        say_trust_refusals(marks.refusals(judged=met), "trust marks: every verdict there is marked 'needs a person'")
        if out:  # JSON lines go to the file as UTF-8 bytes (`write_jsonl`), CSV rows as text
            with replaced_whole(out) as part, part.open("wb") if fmt == "jsonl" else part.open(
                    "w", encoding="utf-8", newline="") as handle:
                n = writer(ctx.store, handle, system, marks)
        elif stdout.isatty():  # a person reads it: made safe to show (a pipe or a file gets the data)
            buffer = io.StringIO(newline="")
            writer(ctx.store, buffer, system, marks)
        else:
            writer(ctx.store, stdout, system, marks)
    if out:
        console.print(f"wrote {counted(n, 'item')} to {out}")
    elif stdout.isatty():
        click.echo(safe(buffer.getvalue()), nl=False)


@export_group.command(name="c3", database=READS)
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@lang_option("Language: en or zh.", required=True)
@click.option("--judge", "judges", multiple=True, callback=_each_once,
              help="Whose raw output fills check_answer for judged phenomena; may be repeated. Each judge's result "
                   "tree goes to OUT_DIR/<judge>/, the statistics files to OUT_DIR/statistics/. Name judges dpsk "
                   "and gpt to get C3's exact statistics keys.")
@click.option("--system", help="The system whose results to write [default: the one system with C3 items in this "
                               "language; required when there are several].")
@pass_ctx
def export_c3_command(ctx, out_dir, lang, judges, system):
    """Write result files in C3's own layout, one tree per judge, and C3's statistics files.

    Records carry exactly the keys C3's evaluate.py writes; items a judge never judged are left
    out, as that script leaves out what it skipped. Generation items get the decision the
    judge's own result files held, in their words, else the human label in C3's wording. The statistics files hold each judge's accuracy by C3's rule (its keys) and
    calibrate's corrected accuracy side by side. Run C3's process_results.py with
    --deepseek_path/--gpt_path OUT_DIR/<judge> to score the export with C3's own script."""
    from concurrent.futures import Future

    from calibrate.child_process import ChildWorkError, a_core_is_free, call_named, in_child_process
    from calibrate.formats.c3 import (
        C3_STATISTICS_FOLDER,
        c3_files_left_over,
        c3_json,
        c3_judge_folder,
        c3_judges_without_verdicts,
        c3_other_judge_folders,
        c3_systems,
        export_c3,
    )
    from calibrate.formats.c3_figures import c3_statistics

    for judge in judges:
        check_filters(ctx, judge=judge)
    folders = {judge: c3_judge_folder(judge) for judge in judges}
    if len(set(folders.values())) < len(folders):
        raise click.UsageError(f"judges {', '.join(judges)} would share a folder ({', '.join(folders.values())})")
    known = c3_systems(ctx.store, lang)
    if system is None:
        if len(known) > 1:
            raise click.UsageError(f"C3 {lang} items belong to several systems ({', '.join(known)}): pass --system")
        system = known[0] if known else ""
    elif system not in known:
        raise click.ClickException(f"no C3 {lang} items of system {system!r} in {ctx.db_path} (systems: {', '.join(known) or 'none'})")
    targets = {judge: out_dir / folders[judge] if judge else out_dir for judge in judges or (None,)}
    if idle := c3_judges_without_verdicts(ctx.store, lang, system, judges):
        raise click.ClickException(
            f"{listing(idle)} judged none of system {system}'s C3 {lang} items in {ctx.db_path} (calibrate judge, or "
            "calibrate import c3-results of the judge's result files); nothing was written")
    for judge, target in targets.items():
        if left := c3_files_left_over(ctx.store, lang, target, system, judge):
            shown = listing(left, 3)
            raise click.ClickException(
                f"{target} holds {counted(len(left), 'result file')} this export would not write ({shown}), left by an "
                "earlier export: C3's process_results.py reads every file of the folder and would score them with "
                "this one's. Remove them or export into an empty folder; nothing was written")
    # the corrected scores (seconds of imports and statistics at a million items) are worked out in
    # a child process while this one writes the result files, where a core is free for it
    corrected_args = (str(Path(ctx.db_path).resolve()), ctx.templates, lang, system, list(dict.fromkeys(judges)))
    corrected: Future | None = None
    if judges and a_core_is_free():
        corrected = Future()
        in_child_process(corrected, call_named, ("calibrate.scores.build", "c3_corrected_in", *corrected_args),
                         lower_priority=False)
    if others := c3_other_judge_folders(out_dir, list(folders.values())) if judges else []:
        err_console.print(safe_text(
            f"{out_dir} also holds {listing([f'{name}/' for name in others])}, which this export does not write (an "
            f"earlier export's, maybe of another system): {out_dir / C3_STATISTICS_FOLDER} will cover only "
            f"{listing([f'{name}/' for name in folders.values()])}, and C3's process_results.py pointed at "
            f"{'that folder' if len(others) == 1 else 'those folders'} would score the earlier export's records "
            "(remove them or export into an empty folder)", style="yellow"))
    results = {}
    for judge, target in targets.items():
        written, left_out, passed_over, own_kept = export_c3(ctx.store, ctx.templates, lang, target, judge, system)
        if not written:
            raise click.ClickException(
                f"no C3 {lang} items in {ctx.db_path} with C3's source ids (<phenomenon folder>/<index>, as `import c3` "
                "and `import c3-results` give them): items imported another way (`import jsonl`) have no place in "
                "C3's result files; nothing was written")
        for path, records in written.items():
            notes = []
            if path in left_out:
                notes.append(f"{counted(left_out[path], 'item')} {judge} never judged")
            if path in passed_over:
                notes.append(f"{counted(passed_over[path], 'item')} repeating an earlier record, which C3's evaluate.py "
                             "passes over")
            note = f" ({'; '.join(notes)} left out)" if notes else ""
            console.print(safe_text(f"{target / path}: {counted(len(records), 'record')}{note}"))
            if path in own_kept:
                err_console.print(safe_text(
                    f"{target / path}: {counted(len(own_kept[path]), 'decision')} as {judge}'s own result file held "
                    f"{'it' if len(own_kept[path]) == 1 else 'them'}, not the label in force "
                    f"({listing(own_kept[path], CHANGES_SHOWN)}): C3's process_results.py counts each judge's own",
                    style="yellow"))
        for path in (path for path in left_out if path not in written):
            console.print(safe_text(f"{target / path}: not written: {judge} judged no item of it "
                                    f"({counted(left_out[path], 'item')}; C3 writes no file for a phenomenon it did "
                                    "not run)"))
        if judge:
            results[judge] = written
    if not results:
        err_console.print(safe_text("no --judge: check_answer is empty in every record of a judged phenomenon (C3's "
                                    "process_results.py counts those wrong), and no statistics were written; name "
                                    "the judges whose outputs fill it with --judge", style="yellow"))
        return

    def by_category() -> dict[str, dict]:
        if corrected is not None:
            try:
                return corrected.result()
            except ChildWorkError:  # the child could not finish (killed, or it could not start): worked out here
                pass
        from calibrate.scores.build import c3_corrected_in

        return c3_corrected_in(*corrected_args)

    statistics = out_dir / C3_STATISTICS_FOLDER
    statistics.mkdir(parents=True, exist_ok=True)
    for name, rows in c3_statistics(results, lang, by_category):
        (statistics / name).write_text(c3_json(rows), encoding="utf-8")
        console.print(safe_text(f"{statistics / name}: {counted(len(rows), 'entry', 'entries')}"))


def _inspect_log_out(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    """`export inspect --out`, refused as a usage error unless it names an Inspect log (and its
    folder exists: `out_file_callback`)."""
    from calibrate.formats.inspect import LOG_SUFFIXES

    out_file_callback(ctx, param, value)
    if value.suffix not in LOG_SUFFIXES:
        raise click.BadParameter(f"{value}: an Inspect log ends in .eval or .json", ctx, param)
    return value


@export_group.command(name="inspect", database=READS)
@click.argument("log", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", required=True, type=OUT_FILE, callback=_inspect_log_out,
              help="The edited log to write (.eval or .json); LOG itself is changed only if --out names it.")
@click.option("--annotator", help="Write this annotator's labels.")
@click.option("--gold", is_flag=True, help="Write the consolidated label of everyone who labelled (majority; ties left).")
@lang_option("The language the log was imported as.", default="en")
@click.option("--system", help="The system the log was imported as [default: the log's evaluated model].")
@click.option("--scorer", help="The scorer whose scores to edit [default: the log's only scorer].")
@pass_ctx
def export_inspect_command(ctx, log, out, annotator, gold, lang, system, scorer):
    """Write people's decisions back into an Inspect AI log as score edits.

    Each labelled sample's score gets an edit with provenance (the annotator, when they decided,
    their note as the reason); a label that agrees with the score is recorded as a review that
    keeps the value. The metrics are recomputed; inspect's read_eval_log reads the result."""
    from calibrate.formats.inspect import export_edits

    if bool(annotator) == gold:
        raise click.UsageError("give --annotator NAME or --gold (one of them)")
    check_filters(ctx, system=system, annotator=annotator)  # a --lang of no sample: the log's own message
    summary = export_edits(ctx.store, log, out, annotator=annotator, gold=gold, lang=lang, system=system,
                           scorer=scorer)
    console.print(safe_text(f"{'replaced' if summary.replaced else 'wrote'} {out}: {summary.edits} score edits "
                            f"({summary.changed} change the value, {summary.confirmed} confirm it) of {summary.samples} "
                            "samples"))
    left = [f"{n} {what}" for n, what in ((summary.unlabelled, "unlabelled"), (summary.ties, "tied"),
                                          (summary.already, "already edited so"),
                                          (summary.no_score, "without a score to edit"),
                                          (summary.not_imported, "not in the database")) if n]
    if left:
        console.print(safe_text(f"left as they were: {', '.join(left)}"))
    for name, before in summary.metrics_before.items():
        after = summary.metrics_after.get(name)
        console.print(safe_text(f"{name}: {before:.4g} -> {after:.4g}" if after is not None else f"{name}: {before:.4g}"))
    if summary.replaced and out.resolve() != log.resolve():
        err_console.print(safe_text(f"the earlier {out} is now {log} with these edits (to add edits to a log exported "
                                    f"before, give it as LOG: export inspect {out} --out {out})", style="yellow"))

