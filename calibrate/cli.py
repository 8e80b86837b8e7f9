"""The `calibrate` command: every stage of the flow (import, render, judge, annotate, measure,
export) as a scriptable subcommand over one SQLite file."""

from __future__ import annotations

import io
import json
import sys
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from calibrate.display import safe, safe_json
from calibrate.formats import ImportReport, import_records
from calibrate.model import CalibrateError, check_system
from calibrate.redact import redact_url
from calibrate.reliability_cells import DEFAULT_RISK, DEFAULT_TARGET
from calibrate.settings import Settings
from calibrate.store import Store
from calibrate.templates import TemplateSet

console = Console(soft_wrap=True)
err_console = Console(stderr=True, soft_wrap=True)


class Context:
    """What every command shares: the settings, and the database and templates they name,
    opened when first used and closed when the command ends."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.db_path = str(settings.get("db"))
        self.template_dirs: list[str] = settings.get("templates")
        self._store: Store | None = None
        self._templates: TemplateSet | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.db_path)
            self._store.on_wait = _say_waiting
        return self._store

    @property
    def reader(self) -> Store:
        """The database for a command that only reads: a missing file is an error, never created."""
        if self._store is None:
            self._store = Store(self.db_path, read_only=True)
        return self._store

    @property
    def templates(self) -> TemplateSet:
        if self._templates is None:
            self._templates = TemplateSet(map(Path, self.template_dirs))
        return self._templates

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def _say_waiting(seconds: float) -> None:
    """Another writer holds the database: say so when a wait starts (the first call of each wait
    comes at 0 s), then keep waiting."""
    if seconds < 0.1:
        err_console.print("waiting for the database (another writer holds it)…", style="dim")


pass_ctx = click.make_pass_decorator(Context)


class CalibrateGroup(click.Group):
    """Turns the domain's user-facing errors (a bad import, a template problem) and the file
    system's (an output folder that does not exist, no permission, a full disk) into a clean
    `Error: …` message and exit status 1, for every command."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except CalibrateError as exc:
            raise click.ClickException(safe(str(exc))) from None
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            raise click.ClickException(safe(f"{where}{exc.strerror or exc}")) from None
        except click.ClickException as exc:
            exc.message = safe(exc.message)
            raise


@click.group(cls=CalibrateGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db", "db_path", help="The SQLite file [default: calibrate.db; or $CALIBRATE_DB, or db in calibrate.toml].",
)
@click.option(
    "--templates", "template_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
    help="An extra template folder (same manifest format); may be repeated [or $CALIBRATE_TEMPLATES].",
)
@click.version_option(package_name="calibrate")
@click.pass_context
def cli(ctx: click.Context, db_path: str | None, template_dirs: tuple[str, ...]) -> None:
    """Can this LLM judge be trusted? Import items, run judges, label, measure agreement.

    Settings come from flags, then environment variables, then ./calibrate.toml, then the
    user config file: `calibrate config` shows which."""
    ctx.obj = Context(Settings({"db": db_path, "templates": template_dirs}))
    ctx.call_on_close(ctx.obj.close)


def main() -> None:
    cli(prog_name="calibrate")


# -- helpers -----------------------------------------------------------------------------------


@contextmanager
def byte_progress(total: int, description: str, unit: str = "bytes"):
    """A progress bar over bytes read, or over files (on stderr, only when it is a terminal)."""
    counter = DownloadColumn() if unit == "bytes" else TextColumn(f"{{task.completed}}/{{task.total}} {unit}")
    columns = (TextColumn("{task.description}"), BarColumn(), counter, TimeRemainingColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not err_console.is_terminal) as bar:
        task = bar.add_task(description, total=total or None)
        yield lambda n: bar.advance(task, n)


def safe_text(text, style: str = "") -> Text:
    """Text from data for the console: terminal-safe (display.safe) and never read as markup."""
    return Text(safe(text), style=style)


def print_table(title: str, columns: list[str], rows: list[list], as_json: bool) -> None:
    """Rows as JSON, or as a table on the console: short values keep their width, free text
    folds, previews end in "…"; a table that cannot fit the console this way is printed as one
    block of "column: value" lines per row instead (never with columns squeezed away)."""
    if as_json:
        click.echo(safe_json([dict(zip(columns, row, strict=True)) for row in rows]))
        return
    from rich import box

    cells = [[safe(v) for v in row] for row in rows]
    widths = []
    for n, column in enumerate(columns):
        widest = max([len(column), *(len(row[n]) for row in cells)])
        widths.append(min(widest, PREVIEW_WIDTH if column in PREVIEWS else FREE_TEXT_WIDTH if column in FREE_TEXT
                          else widest))
    if sum(widths) + 3 * (len(columns) - 1) > console.width:
        console.print(Text(safe(title), style="bold"))
        name_width = max(map(len, columns))
        for row in cells:
            console.print()
            for column, value in zip(columns, row, strict=True):
                console.print(Text.assemble((f"{column:>{name_width}}  ", "dim"), value), soft_wrap=False)
        return
    table = Table(title=safe(title), box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for column, width in zip(columns, widths, strict=True):
        if column in PREVIEWS:
            table.add_column(safe(column), overflow="ellipsis", no_wrap=True, max_width=width)
        else:  # free text may wrap; short values (numbers, codes, ids) keep their width and never fold
            table.add_column(safe(column), overflow="fold", no_wrap=column not in FREE_TEXT, min_width=width)
    for row in cells:
        table.add_row(*[Text(v) for v in row])
    console.print(table)


FREE_TEXT = {"task", "tasks", "source_id", "required fields", "value", "from", "to"}
PREVIEWS = {"fields", "reference"}  # one line each; `items --json` gives them whole
PREVIEW_WIDTH = 24
FREE_TEXT_WIDTH = 14  # free text folds, but never below this width


AUDIO_PROBLEMS_SHOWN = 20  # a text-only response tree would otherwise print a line per item


def emit(result, fmt: str, out: Path | None, what: str, table, renderers: dict, *, width: int) -> None:
    """Show `result` in `fmt`: the table on the terminal as it is drawn there, or any format as
    text, printed or written to `out`."""
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
        out.write_text(text, encoding="utf-8")
        console.print(safe_text(f"wrote {fmt} {what} to {out}"))
    else:
        click.echo(text, nl=False)


def run_import(ctx: Context, records, skip_bad: bool, update: bool = False) -> ImportReport:
    report = import_records(ctx.store, records, ctx.templates, skip_bad=skip_bad, update=update)
    for bad in report.skipped:
        err_console.print(safe_text(f"skipped {bad}", style="yellow"))
    for missing in report.without_audio[:AUDIO_PROBLEMS_SHOWN]:
        err_console.print(safe_text(f"no audio: {missing} (item imported without it)", style="yellow"))
    if len(report.without_audio) > AUDIO_PROBLEMS_SHOWN:
        err_console.print(Text(f"no audio: … and {len(report.without_audio) - AUDIO_PROBLEMS_SHOWN} more", style="yellow"))
    counts = report.counts
    console.print(
        f"{report.records} records: {counts.items_added} items added, {counts.items_existing} already present, "
        f"{counts.judgments_added} judgments added, {len(report.skipped)} skipped"
        + (f", {len(report.without_audio)} without audio" if report.without_audio else "")
    )
    return report


def parse_field_map(pairs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        if "=" not in pair:
            raise click.BadParameter(f"{pair!r}: use ITEM_FIELD=LINE_FIELD", param_hint="--map")
        target, source = pair.split("=", 1)
        out[target.strip()] = source.strip()
    return out


def parse_families(pairs: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
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
lang_choice = click.Choice(["en", "zh"])


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
    """Import items (and judgments run elsewhere)."""


@import_group.command(name="jsonl")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", required=True, help="Task id, e.g. c3/heterograph or superglue/boolq.")
@click.option("--lang", required=True, help="Language: en or zh.")
@click.option("--id-field", default="id", show_default=True, help="The line field holding the source id.")
@click.option("--map", "field_map", multiple=True, metavar="ITEM_FIELD=LINE_FIELD", help="Rename a field; may be repeated.")
@click.option("--reference-field", help="The line field holding the reference answer or gold label.")
@click.option("--judge-output", help="The line field holding a judge's raw output, run elsewhere.")
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
    size = file.stat().st_size if file.is_file() else 0
    with byte_progress(size, f"importing {file.name}") as advance:
        records = jsonl_records(
            file, task=task, lang=lang, id_field=id_field, field_map=parse_field_map(field_map),
            reference_field=reference_field, judge_output=judge_output, judge_name=judge_name, audio_field=audio_field,
            system=system or "", system_field=system_field, progress=advance,
        )
        run_import(ctx, records, skip_bad, update)


@import_group.command(name="c3")
@click.option("--reference", "reference_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="C3's text root for the language (C3/english/text or C3/chinese/text).")
@click.option("--responses", "responses_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="The spoken dialogue model's response tree.")
@click.option("--lang", required=True, type=lang_choice)
@system_option("the --responses folder's name", "The spoken dialogue model that wrote the responses")
@skip_bad_option
@update_option
@pass_ctx
def import_c3(ctx, reference_dir, responses_dir, lang, system, skip_bad, update):
    """Import the C3 reference tree paired with a response tree."""
    from calibrate.formats.c3 import c3_parts, c3_records

    with byte_progress(len(c3_parts(reference_dir, lang)), "importing C3", unit="files") as advance:
        run_import(ctx, c3_records(reference_dir, responses_dir, lang, advance, system), skip_bad, update)


@import_group.command(name="c3-results")
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--lang", required=True, type=lang_choice)
@click.option("--judge-name", required=True, help="Name for the judge that wrote these results.")
@system_option("the one system with C3 items in this language, if there is exactly one; else the results "
               "folder's name", "The spoken dialogue model whose answers were judged")
@skip_bad_option
@update_option
@pass_ctx
def import_c3_results(ctx, results_dir, lang, judge_name, system, skip_bad, update):
    """Import the C3 script's result files: check_answer becomes a judgment.

    Items not imported yet are created from the records (content, reference, answer)."""
    from calibrate.formats.c3 import c3_result_parts, c3_result_records, c3_systems

    if system is None:
        known = c3_systems(ctx.store, lang)
        system = known[0] if len(known) == 1 else None
    with byte_progress(len(c3_result_parts(results_dir, lang)), "importing C3 results", unit="files") as advance:
        run_import(ctx, c3_result_records(results_dir, lang, judge_name, advance, system), skip_bad, update)


@import_group.command(name="superglue")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--task", "task_name", required=True, help="boolq, copa, cb, rte, wic, wsc, multirc, record, axb or axg.")
@click.option("--predictions", type=click.Path(dir_okay=False, path_type=Path),
              help='JSONL of {"idx": ..., "response": "..."}: the answers of the model under test.')
@system_option("the --predictions file's name up to its first dot; none without --predictions",
               "The model whose --predictions these are")
@skip_bad_option
@update_option
@pass_ctx
def import_superglue(ctx, file, task_name, predictions, system, skip_bad, update):
    """Import a SuperGLUE task's published JSONL."""
    from calibrate.formats.superglue import superglue_records

    if system is None:
        system = predictions.name.split(".", 1)[0] if predictions else ""
    size = file.stat().st_size if file.is_file() else 0
    with byte_progress(size, f"importing {file.name}") as advance:
        run_import(ctx, superglue_records(file, task_name, predictions, advance, system), skip_bad, update)


@import_group.command(name="rubric")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--judge-output", help="The line field holding a judge's raw output, run elsewhere.")
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
    with byte_progress(size, f"importing {file.name}") as advance:
        records = rubric_records(file, judge_output=judge_output, judge_name=judge_name, system=system or "", progress=advance)
        run_import(ctx, records, skip_bad, update)


# -- look around -------------------------------------------------------------------------------

STATUSES = ["judged", "unjudged", "unparsed", "error", "labelled", "unlabelled", "flagged"]


@cli.command(name="items")
@click.option("--task")
@click.option("--lang")
@click.option("--status", type=click.Choice(STATUSES))
@system_filter_option
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def items_command(ctx, task, lang, status, system, limit, offset, as_json):
    """List items, filtered by task, language, system and status."""
    rows = []
    ctx.reader.check_filter(task=task, lang=lang, system=system)
    for item in ctx.reader.iter_items(task=task, lang=lang, status=status, system=system, limit=limit, offset=offset):
        if as_json:
            rows.append([item.id, item.task, item.lang, item.system, item.source_id, item.reference, item.fields])
        else:  # the terminal gets a one-line preview of the fields; --json has the item whole
            rows.append([item.id, item.task, item.lang, item.system, item.source_id,
                         json.dumps(item.fields, ensure_ascii=False)[:200]])
    columns = ["id", "task", "lang", "system", "source_id", "reference", "fields"]
    print_table("items", columns if as_json else [c for c in columns if c != "reference"], rows, as_json)


@cli.command(name="status")
@system_filter_option
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--runs", is_flag=True, help="Every judge run (requests, retries, failures by cause) instead of the cells.")
@pass_ctx
def status_command(ctx, system=None, as_json=False, runs=False):
    """Items, judged, unparsed, errors, labelled per cell (task × language × system); the last judge runs."""
    if runs:
        _print_judge_runs(ctx.reader.judge_runs(), as_json)
        return
    counts = ctx.reader.status_counts(system=system)
    columns = ["system", "task", "lang", "items", "judged", "unparsed", "errors", "labelled"]
    if as_json:
        print_table("status", columns, [[c[k] for k in columns] for c in counts], as_json)
        return
    for name in dict.fromkeys(c["system"] for c in counts):  # a table per system keeps 80 columns readable
        rows = [[c[k] for k in columns[1:]] for c in counts if c["system"] == name]
        print_table(f"status of {ctx.db_path} · system {name or '(none)'}", columns[1:], rows, False)
    recent = ctx.reader.judge_runs(limit=JUDGE_RUNS_SHOWN)
    if recent:
        _print_judge_runs(recent, False, title=f"the last {len(recent)} judge runs (more: status --runs)", full=False)


JUDGE_RUNS_SHOWN = 5


def _print_judge_runs(runs: list[dict], as_json: bool, title: str = "judge runs", full: bool = True) -> None:
    """Judge runs: what each asked and stored, and what its requests cost (retries, timeouts,
    429s); `full` adds when, where, errors, truncations, requests, concurrency and why a run stopped."""
    if as_json:
        columns = list(runs[0]) if runs else []
        print_table(title, columns, [[run[c] for c in columns] for run in runs], True)
        return
    if not runs:
        console.print("no judge runs recorded yet (calibrate judge records each run against a server)")
        return
    columns = ["run", "judge", "outcome", "stored", "retries", "timeouts", "429s"]
    if full:
        columns[1:1] = ["started", "server"]
        columns += ["errors", "truncated", "requests", "concurrency"]
    rows = []
    for run in runs:
        lowest = run["concurrency_lowest"]
        values = {
            "run": run["id"], "started": run["started_at"][:16].replace("T", " "), "judge": run["judge_name"],
            "server": run["server"], "outcome": run["outcome"] or "running or died",
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


@templates_group.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@pass_ctx
def templates_list(ctx, as_json):
    """List every template with its tasks, language, verdict kind and version."""
    rows = [
        [t.id, t.lang, " ".join(t.tasks), t.verdict, t.version if t.has_prompt else "(no prompt)", ", ".join(t.required)]
        for t in ctx.templates.templates.values()
    ]
    print_table("templates", ["id", "lang", "tasks", "verdict", "version", "required fields"], rows, as_json)


@templates_group.command(name="show")
@click.argument("template_id")
@pass_ctx
def templates_show(ctx, template_id):
    """Print one template: its manifest entry, system prompt and prompt text."""
    t = ctx.templates.get(template_id)
    click.echo(safe(f"id: {t.id}\nfamily: {t.family}\nlang: {t.lang}\ntasks: {', '.join(t.tasks)}"))
    click.echo(safe(f"verdict: {t.verdict}{' ' + '/'.join(t.labels) if t.labels else ''}\nrequired: {', '.join(t.required)}"))
    click.echo(safe(f"version: {t.version}\nsource: {t.source}\n"))
    if t.system:
        click.echo(safe(f"--- system ---\n{t.system}\n"))
    click.echo(safe(f"--- prompt ---\n{t.text}") if t.has_prompt else "(no judge prompt: humans decide this task)")


@cli.command(name="render")
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

    item = ctx.reader.item(item_id)
    if item is None:
        raise click.ClickException(f"no item {item_id} in {ctx.db_path}")
    if judge:
        ctx.reader.check_filter(judge=judge)
    judged = None if variant else next((j for j in ctx.reader.judgments_for_item(item_id, judge) if j.prompt), None)
    template = ctx.templates.for_task(item.task, item.lang, variant)
    if judged is not None:
        err_console.print(safe_text(f"the prompt judge {judged.judge_name} was given (template {judged.template_id or '?'}, "
                                    f"judgment #{judged.id})", style="dim"))
        click.echo(safe(RenderedPrompt(template, judged.system_prompt, judged.prompt).as_text()))
        return
    if not template.has_prompt:
        click.echo(safe(f"item {item_id} ({item.task}, {item.lang}) has no judge prompt: humans decide it."))
        click.echo(safe_json(item.fields))
        return
    how = "the --variant" if variant else "no judgment yet: the default"
    err_console.print(safe_text(f"{how} template {template.id}, rendered now", style="dim"))
    click.echo(safe(render_for(ctx.templates, item, variant).as_text()))


@cli.command(name="parse")
@click.option("--judge", help="Only this judge's judgments.")
@pass_ctx
def parse_command(ctx, judge):
    """Re-parse stored judge outputs; report what changed.

    For after a parser change: raw outputs are never rewritten, only the verdicts."""
    from calibrate.judgments import reparse

    changes = reparse(ctx.store, ctx.templates, judge)
    if not changes:
        console.print("no verdict changed")
        return
    rows = [[frm, to, n] for (frm, to), n in sorted(changes.items(), key=lambda kv: -kv[1])]
    print_table("verdict changes", ["from", "to", "count"], rows, False)


@cli.command(name="config")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@pass_ctx
def config_command(ctx, as_json):
    """Each effective setting and where it came from."""
    rows = ctx.settings.rows()
    if as_json:
        print_table("settings", ["setting", "value", "from"], [list(r) for r in rows], as_json)
        return
    console.print("settings: a flag wins, then the environment, then ./calibrate.toml, then the user config", style="dim")
    for name, value, source in rows:
        console.print(Text.assemble((f"{name} = ", "bold"), value or "(none)", (f"   from {source}", "dim")))


# -- demo --------------------------------------------------------------------------------------


@cli.command(name="demo")
@click.option("--no-tui", is_flag=True, help="Import and print the status table without opening the app.")
@click.pass_context
def demo_command(click_ctx, no_tui):
    """Import the bundled demo data and open the app on it.

    Re-running adds nothing. Without a terminal (or with --no-tui) it prints the status table."""
    from calibrate.demo import load_demo

    ctx = click_ctx.find_object(Context)
    summary = load_demo(ctx.store, ctx.templates)
    console.print(safe_text(f"demo data in {ctx.db_path}: {summary}"))
    if no_tui or not sys.stdin.isatty() or not sys.stdout.isatty():
        click_ctx.invoke(status_command, as_json=False)
        return
    click_ctx.invoke(annotate_command)


# -- annotate ------------------------------------------------------------------------------------


def annotate_options(command):
    """The options `annotate` and `serve` share."""
    from calibrate.session import ORDERS

    for option in reversed([
        click.option("--annotator", help="Who is labelling [default: $CALIBRATE_ANNOTATOR, calibrate.toml, else $USER]."),
        click.option("--task", help="Only this task."),
        click.option("--lang", help="Only this language."),
        click.option("--system", help="Only this system under test."),
        click.option("--judge", help="Show this judge's verdicts (default: the latest judgment)."),
        click.option("--blind", is_flag=True, help="Hide the judge's verdict until you have labelled."),
        click.option("--order", type=click.Choice(ORDERS), default="in-order", show_default=True,
                     help="The queue's order. Items you skip come back once, after the rest of the queue. "
                          "informative: next the label that most narrows the corrected scores' intervals "
                          "(cells with wide intervals and contested verdicts first; random within a cell)."),
        click.option("--overlap", type=click.IntRange(1), default=1, show_default=True,
                     help="How many different annotators each item should get (2+ for human-human agreement)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed for the random and stratified orders."),
        click.option("--guidelines", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="A guidelines file shown by g (default: the template manifest's guidelines)."),
        click.option("--keymap", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help='TOML of binding id = keys, e.g. "annotate.next" = "right,l" [or $CALIBRATE_KEYMAP].'),
        click.option("--require-listen", is_flag=True, help="Take a label on an item with audio only after it has played (l)."),
        click.option("--audio-root", type=click.Path(exists=True, file_okay=False, path_type=Path),
                     help="Look for the audio here instead of where it was imported from (the folder moved)."),
    ]):
        command = option(command)
    return command


@cli.command(name="annotate")
@annotate_options
@click.option("--tab", hidden=True, help="The browser tab this app serves (set by `calibrate serve`).")
@pass_ctx
def annotate_command(ctx, annotator=None, task=None, lang=None, system=None, judge=None, blind=False, order="in-order",
                     overlap=1, seed=0, guidelines=None, keymap=None, require_listen=False, audio_root=None, tab=None):
    """Label items in the annotation app (TUI).

    Shows the item, the rendered prompt, the judge's verdict and the reference; confirm or
    override with one key. Every decision is saved at once."""
    from calibrate.tui import CalibrateApp

    settings = ctx.settings.with_flags(annotator=annotator, keymap=keymap)
    annotator, keymap = settings.get("annotator"), settings.get("keymap")
    ctx.reader.check_filter(task=task, lang=lang, system=system, judge=judge)
    ctx.close()
    app = CalibrateApp(ctx.db_path, annotator=annotator, templates=ctx.templates, task=task, lang=lang, system=system,
                       judge=judge, blind=blind, order=order, overlap=overlap, seed=seed, guidelines_file=guidelines,
                       keymap_file=keymap, require_listen=require_listen, audio_root=audio_root, tab=tab)
    app.run()
    progress = app.session.progress()
    console.print(safe_text(f"{annotator}: {app.decisions} decisions saved in {ctx.db_path} "
                            f"({progress.labelled}/{progress.total} items labelled in the last queue). "
                            f"See agreement with: calibrate --db {ctx.db_path} report"))


@cli.command(name="serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told otherwise).")
@click.option("--port", type=int, default=8000, show_default=True)
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
    from calibrate.serve import CalibrateServer, Logins, is_loopback

    logins = Logins.from_file(annotators_file) if annotators_file else Logins()
    annotator = options.pop("annotator")
    options["keymap"] = ctx.settings.with_flags(keymap=options["keymap"]).get("keymap")
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
    base = f"http://{host if ':' not in host else f'[{host}]'}:{port}"
    console.print("serving calibrate (Ctrl-C stops); open:")
    for person, url in logins.urls(base):
        console.print(safe_text(f"  {url}" + (f"   ({person})" if person else "")))
    CalibrateServer(args, host=host, port=port, logins=logins, max_connections=max_connections,
                    annotator=annotator, db_path=str(Path(ctx.db_path).resolve()),
                    audio_root=options.get("audio_root")).serve()


# -- judge ---------------------------------------------------------------------------------------


@cli.command(name="judge")
@click.option("--judge", "judge_kind", type=click.Choice(["llm", "rule"]), default="llm", show_default=True,
              help="llm: ask a model; rule: parse SuperGLUE responses offline and compare with gold.")
@click.option("--model", help="Model name to ask (required for llm).")
@click.option("--base-url", help="OpenAI-compatible server URL [default: $OPENAI_BASE_URL, calibrate.toml, else OpenAI].")
@click.option("--api-key-env", help="Environment variable holding the API key [default: OPENAI_API_KEY].")
@click.option("--judge-name", help="Name stored with the judgments (default: the model).")
@click.option("--concurrency", type=click.IntRange(1, 1024), default=8, show_default=True,
              help="Most requests in flight; halved on timeouts and 429s, grown back as answers come.")
@click.option("--task")
@click.option("--lang")
@click.option("--limit", type=click.IntRange(1), help="Judge at most this many items.")
@click.option("--temperature", type=float, help="Sampling temperature [default: 0; none with --reasoning].")
@click.option("--repeat", type=click.IntRange(1), default=1, show_default=True,
              help="Ask each item K times under one judge (test-retest consistency; confidence from the repeats).")
@click.option("--max-tokens", type=click.IntRange(1), help="Output token limit (max_completion_tokens with --reasoning).")
@click.option("--logprobs", is_flag=True, help="Ask for logprobs and store P(verdict) where the server gives them.")
@click.option("--timeout", type=click.FloatRange(0, min_open=True), default=120.0, show_default=True,
              help="Seconds a request may take once the server is on it (counted from when it is the oldest "
                   "request in flight: waiting behind our own earlier requests does not count).")
@click.option("--max-retries", type=click.IntRange(0), default=3, show_default=True)
@click.option("--force", is_flag=True, help="Judge again items already judged by this configuration (a new judgment beside the old).")
@click.option("--export-batch", type=click.Path(dir_okay=False, path_type=Path), help="Write the requests as OpenAI Batch JSONL instead of calling.")
@click.option("--import-batch", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="Store the results of a batch.")
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
def judge_command(ctx, judge_kind, model, base_url, api_key_env, judge_name, concurrency, task, lang, limit,
                  temperature, repeat, max_tokens, logprobs, timeout, max_retries, force, export_batch, import_batch,
                  seed, top_p, stop, system_prompt, extra_params, reasoning, progress_every):
    """Run a judge over items and store its verdicts (resumable)."""
    import asyncio

    from calibrate.judge_progress import JudgeProgress
    from calibrate.judge_runner import (
        JudgeConfig,
        JudgeRefused,
        RunStopped,
        RunSummary,
        parse_param,
        plan_jobs,
        refusal_message,
        run_jobs,
        run_rule_judge,
    )
    from calibrate.judge_runner import export_batch as write_batch
    from calibrate.judge_runner import import_batch as read_batch

    if judge_kind == "rule":
        summary = run_rule_judge(ctx.store, ctx.templates, task=task, force=force, limit=limit)
        _print_judge_summary(summary)
        return
    if not model:
        raise click.UsageError("--model is required (or use --judge rule)")
    if reasoning and temperature is not None:
        raise click.UsageError("--reasoning sends no temperature (reasoning models take only their default)")
    settings = ctx.settings.with_flags(base_url=base_url, api_key_env=api_key_env)
    base_url, api_key_env = settings.get("base_url"), settings.get("api_key_env")
    config = JudgeConfig(
        model=model, base_url=base_url, api_key_env=api_key_env, judge_name=judge_name, concurrency=concurrency,
        temperature=temperature or 0.0, max_tokens=max_tokens, logprobs=logprobs, timeout=timeout,
        max_retries=max_retries, repeat=repeat, seed=seed, top_p=top_p, stop=stop,
        system_prompt=system_prompt.read_text(encoding="utf-8") if system_prompt else None,
        extra=dict(parse_param(text) for text in extra_params), reasoning=reasoning,
    )
    summary = RunSummary()
    if import_batch:
        read_batch(ctx.store, ctx.templates, config, import_batch, summary, force=force)
        _print_judge_summary(summary)
        return
    jobs = plan_jobs(ctx.store, ctx.templates, config, task=task, lang=lang, limit=limit, force=force, summary=summary)
    for problem in summary.not_renderable:
        err_console.print(safe_text(f"cannot render {problem}", style="yellow"))
    if export_batch:
        n = write_batch(jobs, config, export_batch)
        console.print(f"wrote {n} requests to {export_batch} ({summary.skipped_done} already judged, skipped)")
        return
    if repeat == 1:
        console.print(safe_text(f"{len(jobs)} items to judge with {config.name} at {redact_url(config.url)}; "
                                f"{summary.skipped_done} already judged (no call)"))
    else:
        console.print(safe_text(f"{len({job.item.id for job in jobs})} items, {len(jobs)} samples to ask ({repeat} per "
                                f"item) with {config.name} at {redact_url(config.url)}; {summary.skipped_done} "
                                "already judged (no call)"))
    stopped = None
    with JudgeProgress(err_console, jobs, summary, every=progress_every) as progress:
        try:
            asyncio.run(run_jobs(ctx.store, jobs, config, summary, progress))
        except KeyboardInterrupt:
            summary.interrupted = True
        except (JudgeRefused, RunStopped) as exc:
            stopped = exc
    if isinstance(stopped, JudgeRefused):
        _print_judge_summary(summary, check=False)
        raise click.ClickException(f"the judge server refused: {refusal_message(stopped, config)}. "
                                   f"{summary.stored} judgments were stored.")
    if stopped is not None:
        _print_judge_summary(summary, check=False)
        raise click.ClickException(f"{stopped} ({summary.stored} judgments were stored)")
    if summary.interrupted:
        _print_judge_summary(summary, check=False)
        raise click.ClickException(f"interrupted: {summary.stored} judgments were stored; run again to resume")
    _print_judge_summary(summary)


def _print_judge_summary(summary, check: bool = True) -> None:
    """The per-cell table and totals, what the requests cost (retries and timeouts by cause),
    warnings and advice; then, if any item ended in error, the reasons grouped and a non-zero
    exit (a run with errors did not succeed, even if it stored something)."""
    rows = summary.table()
    if rows:
        print_table("judged", summary.columns(), rows, False)
    console.print(f"{summary.stored} judgments stored, {summary.skipped_done} items already judged (skipped)")
    requests = summary.requests
    if requests.attempts:
        causes = ", ".join(f"{n} × {cause}" for cause, n in requests.failures.most_common())
        line = f"{requests.attempts} requests sent, {requests.retries} of them retries" + (f"; failed: {causes}" if causes else "")
        if summary.concurrency_lowest is not None and summary.concurrency_lowest < summary.concurrency[1]:
            line += f"; concurrency went down to {summary.concurrency_lowest} of {summary.concurrency[1]}"
        console.print(safe_text(line, style="yellow" if causes else ""))
    for model, n in summary.other_models.items():
        err_console.print(safe_text(f"warning: the server reported model {model!r} for {n} answers, not the model asked for",
                                    style="yellow"))
    for note in summary.notes:
        err_console.print(safe_text(f"note: {note}", style="yellow"))
    for reason, n in summary.no_confidence.most_common():
        err_console.print(safe_text(f"no confidence for {n} verdicts: {reason}", style="yellow"))
    truncated = sum(n for key, n in summary.cells.items() if key[2] == "truncated")
    if truncated:
        err_console.print(safe_text(f"{truncated} outputs were cut at the token limit (stored as unparsed, "
                                    "\"truncated at N tokens\"): raise --max-tokens", style="yellow"))
    if summary.errors and check:
        for reason, n in summary.errors.most_common():
            err_console.print(safe_text(f"{n} × {reason}   e.g. {summary.error_examples[reason]}", style="red"))
        raise click.ClickException(f"{summary.failed} of {summary.stored} items ended in error (stored as errors; "
                                   "the next run asks for them again)")


# -- measure -------------------------------------------------------------------------------------

REPORT_FORMATS = ["table", "markdown", "json", "csv", "html"]


@cli.command(name="report")
@click.option("--judge", help="Only this judge.")
@system_filter_option
@click.option("--by", default="task,lang", show_default=True, help="Group cells by system, task and lang (any of them).")
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file instead of the terminal.")
@click.option("--wide", is_flag=True, help="Terminal table: add AC1, sensitivity, specificity, prevalence, leniency.")
@click.option("--unparsed", type=click.Choice(["exclude", "as-negative", "as-disagreement"]), default="exclude",
              show_default=True, help="Unparsed verdicts: leave out (counted), count as no/否 as C3's script does, "
              "or count as disagreeing with the person.")
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
@click.option("--family", "families", multiple=True, metavar="NAME=FAMILY",
              help="The model family of a judge or system (e.g. gpt-4o=openai); flags a judge grading its own family. "
              "May be repeated.")
@pass_ctx
def report_command(ctx, judge, system, by, fmt, out, wide, unparsed, unparsed_as_disagreement, gold_from, reliability,
                   resamples, target, threshold, epsilon, families):
    """Judge-vs-human agreement per task × language.

    κ, AC1 and agreement with 95 % intervals, sensitivity and specificity, beside the
    human–human ceiling on the same items, in five formats."""
    from calibrate import report as reports

    dims = tuple(d.strip() for d in by.split(",") if d.strip())
    if not dims or any(d not in reports.BY_CHOICES for d in dims):
        raise click.BadParameter("use system, task, lang or a comma-separated combination", param_hint="--by")
    options = reports.ReportOptions(by=dims, unparsed="as-disagreement" if unparsed_as_disagreement else unparsed,
                                    resamples=resamples, target_half_width=target, threshold=threshold,
                                    epsilon=epsilon, gold_from=gold_from, families=parse_families(families),
                                    reliability=reliability)
    ctx.reader.check_filter(system=system, judge=None if judge == reports.JURY else judge)
    result = reports.build_report(ctx.reader, ctx.templates, judge=judge, options=options, system=system)
    renderers = {"markdown": reports.render_markdown, "json": reports.render_json, "csv": reports.render_csv,
                 "html": reports.render_html}
    emit(result, fmt, out, "report", lambda r, c: reports.render_table(r, c, wide=wide), renderers,
         width=200 if wide else 120)


@cli.command(name="scores")
@click.option("--by", default="system,task,lang", show_default=True,
              help="Cells by system, task, lang (comma-separated); each system overall is always shown.")
@click.option("--judge", help="Only this judge.")
@system_filter_option
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="table", show_default=True)
@click.option("--target", type=click.FloatRange(0.001, 1), default=0.05, show_default=True,
              help="Half-width the corrected 95 % interval should reach: how many more labels that takes.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write to a file instead of the terminal.")
@pass_ctx
def scores_command(ctx, by, judge, system, fmt, target, out):
    """Each system's benchmark score, raw and corrected for the judge's errors.

    Per system × task × language and per system overall: the judge's accuracy three ways (C3's
    own rule, calibrate's parser with unparsed counted wrong, unparsed left out), people's
    accuracy, and the corrected accuracy (PPI++, Rogan–Gladen) with 95 % intervals; C3's final
    score (mean over judges); the ranking of systems; judge against judge."""
    from calibrate import scores as scoring

    dims = tuple(d.strip() for d in by.split(",") if d.strip())
    result = scoring.build_scores(ctx.reader, ctx.templates, by=dims, judge=judge, system=system, target=target)
    emit(result, fmt, out, "scores", scoring.render_table, scoring.RENDERERS, width=240)


@cli.command(name="trust")
@click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_TARGET,
              show_default=True, help="Agreement with people the accepted verdicts must reach.")
@click.option("--risk", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_RISK,
              show_default=True, help="Chance allowed that they do not (the guarantee holds with probability 1 - risk).")
@click.option("--judge", help="Only this judge.")
@click.option("--by", default="task,lang", show_default=True, help="Group cells by task, lang, or both.")
@click.option("--gold-from", metavar="ANNOTATOR", help="An adjudicator whose label is the gold where present.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@pass_ctx
def trust_command(ctx, target, risk, judge, by, gold_from, fmt):
    """The confidence above which a judge's verdicts can be accepted without a person.

    Per cell and judge, from the human-labelled items: the threshold, the share of items it
    accepts and the agreement with people it guarantees at this risk (fixed-sequence testing
    with an exact binomial bound; Jung et al., ICLR 2025), or that no threshold meets the target."""
    from calibrate.reliability_cells import JudgeReliability, gather
    from calibrate.report import BY_CHOICES, CellKinds

    dims = tuple(d.strip() for d in by.split(",") if d.strip())
    if not dims or any(d not in BY_CHOICES for d in dims):
        raise click.BadParameter("use task, lang or task,lang", param_hint="--by")
    kinds = CellKinds(ctx.templates, dims)
    results = []
    for (key, name), items in sorted(gather(ctx.store, kinds, judge=judge, gold_from=gold_from).items()):
        kind = kinds.kind(key)
        if kind is not None and kind.scored:
            continue
        found = JudgeReliability(key, name, kind, items).trust(target, risk)
        results.append({"task": key[0], "lang": key[1], "judge": name, **found.as_dict()})
    if fmt == "json":
        click.echo(json.dumps(results, ensure_ascii=False, indent=2))
        return
    if not results:
        console.print("no judge verdicts to assess")
        return
    from rich import box

    console.print(f"accept a judge's verdict when its confidence reaches the threshold: agreement with people "
                  f">= {target:g}, guaranteed with probability {1 - risk:g}")
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for name in ("task", "lang", "judge", "n", "threshold", "accepts", "guaranteed", "agree"):
        table.add_column(name, no_wrap=True, justify="left" if name in ("task", "lang", "judge") else "right")
    refused = []
    for r in results:
        if r["met"]:
            values = [r["threshold"], f"{r['coverage']:.0%} ({r['accepted']})", r["guaranteed"], r["agreement"]]
        else:
            values = ["—", "—", "—", "—"]
            refused.append(f"{r['task']} {r['lang']} ({r['judge']}): {r['reason']}")
        table.add_row(*[safe_text(v if isinstance(v, str) else f"{v:.3f}" if isinstance(v, float) else str(v))
                        for v in (r["task"], r["lang"], r["judge"], r["n"], *values)])
    console.print(table)
    for line in refused:
        console.print(safe_text(line), soft_wrap=False)


@import_group.command(name="labels")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@skip_bad_option
@pass_ctx
def import_labels_command(ctx, file, skip_bad):
    """Import human labels made elsewhere (JSONL or CSV: task, lang, source_id, annotator, label, note)."""
    from calibrate.formats.labels import import_labels

    added, skipped = import_labels(ctx.store, ctx.templates, file, skip_bad=skip_bad)
    for bad in skipped:
        err_console.print(safe_text(f"skipped {bad}", style="yellow"))
    console.print(f"{added} labels added, {len(skipped)} skipped")


@cli.command(name="merge")
@click.argument("other", type=click.Path(dir_okay=False))
@pass_ctx
def merge_command(ctx, other):
    """Fold another calibrate database into this one.

    For an offline annotator's copy: items by content hash, judgments and annotations by uid, so
    running it twice adds nothing. OTHER is only read, never changed; rows that fail validation
    are refused and listed. The label in force is the latest decision by time, whichever file
    it came from."""
    from calibrate.merge import merge_database

    if Path(other).resolve() == Path(ctx.db_path).resolve():
        raise click.ClickException("cannot merge a database into itself")
    other_store = Store.open_other(other)
    try:
        report = merge_database(ctx.store, other_store, ctx.templates)
    finally:
        other_store.close()
    added = report.added
    console.print(safe_text(f"merged {other}: {added['items']} items, {added['judgments']} judgments, "
                            f"{added['annotations']} annotations added"))
    if report.refused:
        counts = ", ".join(f"{n} {table}s" for table, n in sorted(report.refused.items()))
        err_console.print(safe_text(f"refused {counts} from {other}:", style="yellow"))
        for example in report.examples:
            err_console.print(safe_text(f"  {example}"))
        if sum(report.refused.values()) > len(report.examples):
            err_console.print(f"  … and {sum(report.refused.values()) - len(report.examples)} more")


@cli.group(name="export", invoke_without_command=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), default="jsonl", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="File to write (default: standard output).")
@system_filter_option
@click.option("--target", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_TARGET,
              show_default=True, help="Trust marks: agreement with people an accepted verdict must reach (see `trust`).")
@click.option("--risk", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=DEFAULT_RISK,
              show_default=True, help="Trust marks: the risk allowed (see `trust`).")
@click.pass_context
def export_group(click_ctx, fmt, out, system, target, risk):
    """Export gold labels, verdicts and notes (JSONL, CSV, C3).

    Items with every annotator's label, the consolidated (majority) label, judge verdicts,
    whether each judge's verdict is accepted or needs a person (as `trust` finds), and notes;
    `export c3` writes C3's own result layout."""
    if click_ctx.invoked_subcommand is not None:
        return
    from calibrate.formats.gold import write_csv, write_jsonl
    from calibrate.reliability_cells import accepted_items
    from calibrate.report import BY_CHOICES, CellKinds

    ctx = click_ctx.find_object(Context)
    writer = write_jsonl if fmt == "jsonl" else write_csv
    accepted = accepted_items(ctx.reader, CellKinds(ctx.templates, BY_CHOICES), target=target, risk=risk)
    if out:
        with out.open("w", encoding="utf-8", newline="") as handle:
            n = writer(ctx.reader, handle, system, accepted)
        console.print(f"wrote {n} items to {out}")
    else:
        writer(ctx.reader, sys.stdout, system, accepted)


@export_group.command(name="c3")
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--lang", required=True, type=lang_choice)
@click.option("--judge", "judges", multiple=True,
              help="Whose raw output fills check_answer for judged phenomena; may be repeated (then one result "
                   "tree per judge, OUT_DIR/<judge>/). Name judges dpsk and gpt to get C3's exact statistics keys.")
@click.option("--system", help="The system whose results to write [default: the one system with C3 items in this "
                               "language; required when there are several].")
@pass_ctx
def export_c3_command(ctx, out_dir, lang, judges, system):
    """Write result files in C3's own layout, and C3's statistics files beside them.

    Generation items get the human label in C3's wording. The statistics files hold each
    judge's accuracy by C3's rule (its keys) and calibrate's corrected accuracy side by side."""
    from calibrate.formats.c3 import c3_statistics, c3_systems, export_c3

    for judge in judges:
        ctx.reader.check_filter(judge=judge)
    known = c3_systems(ctx.reader, lang)
    if system is None:
        if len(known) > 1:
            raise click.UsageError(f"C3 {lang} items belong to several systems ({', '.join(known)}): pass --system")
        system = known[0] if known else ""
    elif system not in known:
        raise click.ClickException(f"no C3 {lang} items of system {system!r} in {ctx.db_path} (systems: {', '.join(known) or 'none'})")
    results = {}
    for judge in judges or (None,):
        target = out_dir / judge if len(judges) > 1 else out_dir
        written = export_c3(ctx.reader, ctx.templates, lang, target, judge, system)
        if not written:
            raise click.ClickException(f"no C3 {lang} items in {ctx.db_path}")
        for path, records in written.items():
            console.print(safe_text(f"{target / path if len(judges) > 1 else path}: {len(records)} records"))
        if judge:
            results[judge] = written
    if not results:
        return
    for name, rows in c3_statistics(results, lang, _c3_corrected(ctx, lang, system, list(results))).items():
        (out_dir / name).write_text(json.dumps(rows, ensure_ascii=False, indent=4), encoding="utf-8")
        console.print(f"{out_dir / name}: {len(rows)} entries")


def _c3_corrected(ctx: Context, lang: str, system: str, judges: list[str]) -> dict[str, dict]:
    """Per C3 category ("/<result path>" or "overall"): calibrate's corrected accuracy of the
    exported judges (their mean when several, as C3's final score), for the statistics file."""
    from calibrate import scores as scoring
    from calibrate.formats.c3 import C3_LAYOUT

    categories = {part.task: "/" + part.responses for part in C3_LAYOUT[lang]}
    out: dict[str, dict] = {}
    for by in (("system", "task", "lang"), ("system", "lang")):
        try:
            result = scoring.build_scores(ctx.reader, ctx.templates, by=by, system=system)
        except scoring.ScoresError:
            return out
        for cell in result.cells:
            if cell.lang != lang or (cell.task != scoring.ALL and cell.task not in categories):
                continue
            chosen = [j for j in cell.judges if j.judge in judges]
            if len(judges) > 1 and cell.final is not None:
                estimate = cell.final.corrected
            elif len(chosen) == 1:
                estimate = chosen[0].corrected
            else:
                continue
            name = "overall" if cell.task == scoring.ALL else categories[cell.task]
            out[name] = {
                "corrected_accuracy": round(estimate.value, 4) if estimate.value is not None else None,
                "corrected_ci": [round(v, 4) for v in estimate.ci] if estimate.ci else None,
                "corrected_note": estimate.reason,
                "people_accuracy": round(cell.people.value, 4) if cell.people.value is not None else None,
                "labelled": cell.labelled,
            }
    return out
