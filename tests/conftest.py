"""Shared fixtures: an in-memory store, the bundled templates, the demo database, the CLI; and
the property tests' settings: the same examples on every run (HYPOTHESIS_PROFILE=explore draws
new ones, to look for failures on purpose); and a guard that no test leaves `asyncio.run`
patched for the tests after it."""

from __future__ import annotations

import asyncio
import asyncio.runners
import os
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import settings

from calibrate import store as store_module
from calibrate.cli import cli
from calibrate.demo import load_demo
from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from calibrate.templates import TemplateSet

SEEDS = Path(__file__).parent / "fixtures" / "seeds"

settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(autouse=True)
def asyncio_left_as_it_was():
    """Fails a test after which `asyncio.run` is no longer asyncio's own. inspect_ai patches it
    for the whole process (nest_asyncio) when its log API is called while an event loop runs;
    the patched one reuses a loop, and a later test's judge run once waited forever on it."""
    yield
    assert asyncio.run is asyncio.runners.run, (
        "this test left asyncio.run patched for the whole process (inspect_ai's nest_asyncio: an inspect log "
        "read or written while an event loop ran); call it outside the loop")


class MigratedSchema:
    """What the migrations make of a new database, replayed: each test makes many new databases,
    and the migrations' 400 statements took about 0.1 s each time (ALTER TABLE parses the whole
    schema again), some 40 % of many test files' time. Built once by the migrations themselves,
    then given to each new database (none of calibrate's migrations recorded) as its tables, their
    rows, then its indexes, views and triggers, each kind in the order the migrations left them
    (a table's triggers fire in that order). A database made with fewer migrations (a test of an
    upgrade), or one to upgrade, gets the migrations."""

    ORDER = "CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'view' THEN 2 ELSE 3 END, rowid"

    def __init__(self):
        import sqlite_utils

        self.migrations = store_module._migrations
        self.files = list(store_module.MIGRATION_FILES)
        made = sqlite3.connect(":memory:")
        self.migrations(":memory:").apply(sqlite_utils.Database(made))
        self.objects = made.execute("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE "
                                    f"'sqlite_%' ORDER BY {self.ORDER}").fetchall()
        tables = [name for kind, name, _ in self.objects if kind == "table"]
        self.rows = {name: rows for name in tables if (rows := made.execute(f'SELECT * FROM "{name}"').fetchall())}
        self.sequences = made.execute("SELECT name, seq FROM sqlite_sequence").fetchall() if made.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone() else []
        replayed = sqlite3.connect(":memory:")
        self.replay(replayed)
        assert self.contents(replayed) == self.contents(made), "the replay makes what the migrations make"
        made.close()
        replayed.close()

    def contents(self, conn: sqlite3.Connection) -> tuple:
        master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        rows = {name: conn.execute(f'SELECT * FROM "{name}"').fetchall() for kind, name, _, _ in master if kind == "table"}
        triggers = conn.execute(f"SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY {self.ORDER}").fetchall()
        return master, rows, triggers

    def replay(self, conn) -> None:
        tables = [sql for kind, _, sql in self.objects if kind == "table"]
        for sql in tables:
            conn.execute(sql)
        for name, rows in self.rows.items():
            conn.executemany(f'INSERT INTO "{name}" VALUES ({", ".join("?" * len(rows[0]))})', rows)
        if self.sequences:
            conn.executemany("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", self.sequences)
        for kind, _, sql in self.objects:
            if kind != "table":
                conn.execute(sql)

    def __call__(self, database: str):
        migrations = self.migrations(database)
        if self.files != store_module.MIGRATION_FILES:
            return migrations
        schema = self

        class Replayed:
            def apply(self, db) -> None:
                if db.conn.execute("SELECT 1 FROM sqlite_master WHERE name = '_sqlite_migrations'").fetchone():
                    migrations.apply(db)
                else:
                    schema.replay(db.conn)

        return Replayed()


@pytest.fixture(autouse=True, scope="session")
def migrated_schema_replayed() -> Iterator[None]:
    with patch.object(store_module, "_migrations", MigratedSchema()):
        yield


@pytest.fixture(scope="session")
def templates() -> TemplateSet:
    return TemplateSet()


@pytest.fixture
def store() -> Store:
    s = Store(":memory:")
    yield s
    s.close()


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "calibrate.db"


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory, templates) -> Path:
    """The demo database, made once: each test's `demo_db` is a copy of it (making it takes a
    quarter of a second, its migrations and the demo's rows, and some 300 tests use it)."""
    path = tmp_path_factory.mktemp("demo") / "demo.db"
    s = Store(path)
    load_demo(s, templates)
    s.close()
    assert not Path(f"{path}-wal").exists(), "the write-ahead log is in the file: a copy of the file is the database"
    return path


@pytest.fixture
def demo_db(tmp_path, demo_template) -> Path:
    path = tmp_path / "demo.db"
    shutil.copyfile(demo_template, path)
    return path


@pytest.fixture
def labelled_demo_db(demo_db, templates) -> Path:
    """The demo database after people's work: annotators ana and bo label every judged item of a
    categorical task (ana agrees with the latest verdict, bo with it on even ids), and each
    verdict has a confidence, so every command has something to show."""
    store = Store(demo_db)
    store.conn.execute("UPDATE judgments SET confidence = 0.55 + (id % 9) * 0.05 WHERE status = 'verdict'")
    for item in store.items():
        kind = templates.for_task(item.task, item.lang).kind
        verdict = next((j.verdict for j in store.judgments_for_item(item.id) if j.verdict), None)
        if kind.scored or verdict is None or verdict not in kind.labels:
            continue
        other = next(label for label in kind.labels if label != verdict)
        store.annotate(item.id, "ana", "label", label=verdict)
        store.annotate(item.id, "bo", "label", label=verdict if item.id % 2 == 0 else other)
    store.close()
    return demo_db


@pytest.fixture
def three_scorers_db(tmp_path) -> Path:
    """Twelve rubric items the judge ds scored and ana, bob and cy each scored, within 10 points of
    one another, most of them passing (skewed scores): the judge's pairs against each person, and
    the people's, share items."""
    import json

    path = tmp_path / "three.db"
    store = Store(path)
    fields = {"question": "q", "content": "c", "answer": "a", "llm_answer": "x", "llm_reasoning": "r"}
    ids, _ = store.add_items([NewItem("rubric/reference", "zh", str(k), fields) for k in range(12)], with_ids=True)
    scores = lambda a: json.dumps({"score_answer": float(a), "score_reasoning": float(a)})  # noqa: E731
    quality = [40, 62, 70, 75, 80, 85, 88, 90, 92, 95, 97, 100]
    store.add_judgments([NewJudgment(item_id=i, judge_name="ds", judge_key="k", status="verdict",
                                     verdict=scores(min(100, q + (10 if k % 3 else -10))), raw_output="…")
                         for k, (i, q) in enumerate(zip(ids, quality, strict=True))])
    for name, shift in (("ana", (0, 5, -5)), ("bob", (5, -5, 0)), ("cy", (-5, 0, 10))):
        for k, (i, q) in enumerate(zip(ids, quality, strict=True)):
            store.annotate(i, name, "label", label=scores(min(100, q + shift[k % 3])))
    store.close()
    return path


class Calibrate:
    """Runs `calibrate --db PATH ...` in-process and returns the click Result."""

    def __init__(self, db: Path):
        self.db = db
        self.runner = CliRunner()

    def __call__(self, *args: str, ok: bool = True, input: str | None = None):
        result = self.runner.invoke(cli, ["--db", str(self.db), *args], input=input, catch_exceptions=False)
        if ok and result.exit_code != 0:
            raise AssertionError(f"calibrate {' '.join(args)} exited {result.exit_code}:\n{result.output}")
        return result


@contextmanager
def threads_using(store: Store) -> Iterator[set[int]]:
    """The ids of the threads that touch `store`'s connection while the block runs (a store's
    connection is one thread's at a time)."""
    used_by, conn = set(), store.conn

    class Recording:
        def __getattr__(self, name):
            used_by.add(threading.get_ident())
            return getattr(conn, name)

    store.conn = Recording()
    try:
        yield used_by
    finally:
        store.conn = conn


@contextmanager
def without_migration(name: str) -> Iterator[None]:
    """Meanwhile, a database this process opens is made (or upgraded) without migration `name`,
    as the calibrate before it did (where `name` is the newest), so the next opening upgrades it."""
    files = [path for path in store_module.MIGRATION_FILES if path.stem != name]
    assert len(files) == len(store_module.MIGRATION_FILES) - 1, f"no migration {name}"
    with patch.object(store_module, "MIGRATION_FILES", files), \
            patch.object(store_module, "MIGRATION_NAMES", [path.stem for path in files]):
        yield


def as_made_before_0027(path: Path) -> None:
    """Turn the database at `path` into the one the calibrate before migration 0027 made of the
    same commands: without the columns and the index 0027 adds (the columns' facts only in the
    notes and run messages it fills them from, which that calibrate wrote alike) and without its
    record, so that the next opening upgrades it. Checked against a database made with every
    migration but 0027."""
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("ALTER TABLE annotations DROP COLUMN c3_file_judge")
        conn.execute("ALTER TABLE annotations DROP COLUMN c3_file_text")
        conn.execute("DROP INDEX labels_in_force_by_time")
        conn.execute("ALTER TABLE judge_runs DROP COLUMN switched_to_reasoning")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = '0027_facts_as_columns'")
    conn.close()
    older = path.with_name(f"{path.stem}.before-0027.db")
    with without_migration("0027_facts_as_columns"):
        Store(older).close()
    assert _schema(path)[0] == _schema(older)[0]


def as_made_before_0028(path: Path) -> None:
    """Turn the database at `path` into the one the calibrate before migration 0028 made of the
    same commands: that calibrate's triggers and views (taken from a database made without
    0028), judgments without judged_at, and its verdicts in force (each judge's newest judgment
    of an item by id, or the majority of the newest configuration's repeats: a failed call over a
    verdict; its verdicts_by_majority gives both); without the record of 0028, so that the next
    opening upgrades it."""
    name = "0028_failed_calls_and_older_evals_out_of_force"
    older = path.with_name(f"{path.stem}.before-0028.db")
    with without_migration(name):
        Store(older).close()
    read = sqlite3.connect(older)
    theirs = dict(read.execute("SELECT name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')"))
    read.close()
    conn = sqlite3.connect(path)
    with conn:
        ours = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')"))
        changed = [n for n in theirs if ours[n] != theirs[n]]
        for n in changed:
            conn.execute(f"DROP {theirs[n].split()[1]} {n}")
        for n in sorted(changed, key=lambda n: theirs[n].startswith("CREATE TRIGGER")):  # views first
            conn.execute(theirs[n])
        conn.execute("ALTER TABLE judgments DROP COLUMN judged_at")
        conn.execute("DELETE FROM verdicts_in_force")  # its triggers keep the counts in step
        conn.execute("INSERT INTO verdicts_in_force (item_id, judge_name, judgment_id, status, verdict, reason) "
                     "SELECT item_id, judge_name, judgment_id, status, verdict, reason FROM verdicts_by_majority")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = ?", (name,))
    conn.close()
    assert _schema(path) == _schema(older)


def _schema(db: Path) -> tuple[dict[str, list[str]], set[str]]:
    """The columns of each table of the database at `db`, and its triggers' and views' SQL."""
    read = sqlite3.connect(db)
    tables = [r[0] for r in read.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    columns = {t: [r[1] for r in read.execute(f"PRAGMA table_info({t})")] for t in tables}
    code = {r[0] for r in read.execute("SELECT sql FROM sqlite_master WHERE type IN ('trigger', 'view')")}
    read.close()
    return columns, code


@pytest.fixture
def calibrate(db_path) -> Calibrate:
    return Calibrate(db_path)


@pytest.fixture
def labelled_db(tmp_path):
    """60 lexical items judged by 'gpt'; annotators a, b, c label all items (80-90 % right)."""
    path = tmp_path / "labelled.db"
    store = Store(path)
    rng = np.random.default_rng(1)
    truth = rng.choice(["yes", "no"], 60, p=[0.6, 0.4])
    ids, _ = store.add_items([NewItem("c3/lexical", "en", str(k), {"content": str(k), "notation": "n", "response": "r"})
                              for k in range(60)], with_ids=True)
    flip = lambda v: "no" if v == "yes" else "yes"  # noqa: E731
    verdicts = [t if rng.random() < 0.85 else flip(t) for t in truth]
    verdicts[0] = None  # one unparsed output
    store.add_judgments([
        NewJudgment(item_id=i, judge_name="gpt", judge_key="k", status="verdict" if v else "unparsed", verdict=v,
                    unparsed_reason=None if v else "no verdict line", raw_output=f"The answer is: {v}." if v else "??")
        for i, v in zip(ids, verdicts, strict=True)
    ])
    humans = {}
    for name, accuracy in (("a", 0.9), ("b", 0.85), ("c", 0.8)):
        humans[name] = [t if rng.random() < accuracy else flip(t) for t in truth]
        for i, label in zip(ids, humans[name], strict=True):
            store.annotate(i, name, "label", label=label)
    store.close()
    return path, verdicts, humans


@pytest.fixture
def score_templates(tmp_path) -> Path:
    """A user template folder whose one template declares the rubric's score kind for a new
    task, essay/score (zh): what a scored cell is must come from the kind, not a task list."""
    folder = tmp_path / "mine" / "essay"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'family = "essay"\n[[template]]\nid = "essay/zh"\nfile = "e.j2"\nlang = "zh"\ntasks = ["essay/score"]\n'
        'required = ["content"]\nverdict = "rubric_scores"\n[template.fields]\ncontent = "text"\n', encoding="utf-8")
    (folder / "e.j2").write_text("评分：{{ content }}", encoding="utf-8")
    return tmp_path / "mine"
