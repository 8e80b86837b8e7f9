"""Live judge-vs-human agreement per task x language for this database, computed by the
agreement module in a worker thread so the app never freezes. The title and the table share
one box that hides the screen below; the verdict column takes the width the other columns
leave, and a verdict longer than that wraps onto more lines of its row. Where they leave too
little (an 80-column terminal), the table scrolls sideways (the title says → shows more
columns; no scrollbar, whose thumb would float alone in the empty rows) and the highlighted
row's verdict is shown whole below it."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from calibrate.escape import safe
from calibrate.stats.simulated import APPROXIMATE_MARK
from calibrate.store import Store


class StatsScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,t", "close", "close", id="stats.close"),
                Binding("r", "refresh_stats", "refresh", id="stats.refresh")]
    DEFAULT_CSS = """
    StatsScreen { align: center middle; }
    StatsScreen > Vertical { width: 95%; height: 85%; border: round $accent; background: $surface; }
    StatsScreen Static { height: auto; background: $panel; padding: 0 1; }
    StatsScreen DataTable { height: 1fr; scrollbar-size-horizontal: 0; }
    """
    COLUMNS = ("task", "lang", "judge", "vs", "n", "agree", "κ [95% CI]", "AC1", "human ceiling", "verdict")
    VERDICT_FLOOR = 24  # the verdict column wraps in no fewer cells (in a narrower terminal the table scrolls sideways)

    def __init__(self, db_path: str, templates, judge: str | None):
        super().__init__()
        self.db_path, self.templates, self.judge = db_path, templates, judge
        self.shown: list[tuple[Text, ...]] | None = None  # the table's rows, once worked out
        self.verdict_below = False  # whether the highlighted row's verdict shows below the table (too narrow)
        self.approximate = False  # whether an interval shown is marked approximate

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("judge vs human agreement (computing…)", id="stats-title", markup=False)
            yield DataTable(id="stats-table", zebra_stripes=True)
            yield Static("", id="stats-verdict", markup=False)

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()  # the arrows move through the rows (and sideways) at once
        self.action_refresh_stats()

    def action_refresh_stats(self) -> None:
        self.compute()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def compute(self) -> None:
        # the report pulls in scipy and scikit-learn: load them only when statistics are asked for
        from calibrate.report import build_report, rows_of

        try:
            store = Store(self.db_path)
            try:
                report = build_report(store, self.templates, judge=self.judge)  # as `calibrate report` works it out
            finally:
                store.close()
        except Exception as exc:  # noqa: BLE001 - said on this screen: the annotation app goes on
            self.app.call_from_thread(self.failed, exc)
            return
        self.app.call_from_thread(self.show, [row for _, _, row in rows_of(report) if row.n])

    def failed(self, exc: Exception) -> None:
        """Say why the statistics could not be worked out (the labels are saved all the same)."""
        self.query_one("#stats-title", Static).update(
            f"judge vs human agreement could not be worked out: {safe(str(exc)) or type(exc).__name__} "
            "(r tries again, Esc closes)")

    def show(self, rows: list) -> None:
        def number(value: float | None, low: float | None = None, high: float | None = None,
                   approximate: float | None = None) -> str:
            """A figure with its interval, marked as the report marks an approximate one."""
            if value is None:
                return "—"
            if low is None:
                return f"{value:.2f}"
            return f"{value:.2f} [{low:.2f}, {high:.2f}]{APPROXIMATE_MARK if approximate is not None else ''}"

        def scored(r) -> str:
            """A rubric score's line in words (its agreement is a distance and a correlation, not κ)."""
            return ", ".join(f"{name} {value:{spec}}" for name, value, spec in (
                ("MAE", r.mae, ".1f"), ("Spearman ρ", r.spearman, ".2f")) if value is not None)

        self.approximate = any(r.ceiling_approximate is not None and r.ceiling_low is not None for r in rows)
        self.shown = [tuple(Text(safe(v)) for v in (
            r.task, r.lang, r.judge, f"{r.versus} · {r.scores}" if r.scores else r.versus, str(r.n), number(r.agreement),
            number(r.kappa, r.kappa_low, r.kappa_high), number(r.ac1),
            number(r.ceiling, r.ceiling_low, r.ceiling_high, r.ceiling_approximate),
            scored(r) if r.scores else r.verdict)) for r in rows]
        self.fill_table()

    def fill_table(self) -> None:
        """The rows in the table, the verdict column as wide as the table has room for."""
        table = self.query_one(DataTable)
        table.clear(columns=True)
        columns = list(zip(self.COLUMNS, *self.shown, strict=True))  # each column's name, then its cells
        used = sum(max(cell_len(str(cell)) for cell in column) + 2 * table.cell_padding for column in columns[:-1])
        room = table.size.width - table.styles.scrollbar_size_vertical - used - 2 * table.cell_padding
        wraps = room >= self.VERDICT_FLOOR  # else the table scrolls sideways, each verdict in one line
        table.add_columns(*self.COLUMNS[:-1])
        table.add_column(self.COLUMNS[-1], width=room if wraps else None)
        for row in self.shown:
            table.add_row(*row, height=None if wraps else 1)
        self.verdict_below = not wraps
        self.show_verdict(table.cursor_row)
        more = "→ more columns, " if self.verdict_below else ""
        rough = f"{APPROXIMATE_MARK} approximate interval (calibrate report says how), " if self.approximate else ""
        title = f"judge vs human agreement ({more}{rough}r refreshes, Esc closes)"
        self.query_one("#stats-title", Static).update(title if self.shown else title + ": no labelled items yet")

    def show_verdict(self, row: int) -> None:
        """Below a table too narrow to show its verdicts, the highlighted row's, whole."""
        below = self.query_one("#stats-verdict", Static)
        below.display = bool(self.verdict_below and self.shown)
        if below.display and 0 <= row < len(self.shown):
            cells = self.shown[row]
            below.update(Text.assemble(f"{cells[0]} {cells[1]} · {cells[2]} vs {cells[3]}: ", cells[-1]))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        self.show_verdict(event.coordinate.row)

    def on_resize(self) -> None:
        if self.shown is not None:
            self.call_after_refresh(self.fill_table)

    def action_close(self) -> None:
        self.dismiss(None)
