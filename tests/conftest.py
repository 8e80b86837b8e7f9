"""Shared fixtures: an in-memory store, the bundled templates, the demo database, the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from calibrate.cli import cli
from calibrate.demo import load_demo
from calibrate.store import Store
from calibrate.templates import TemplateSet

SEEDS = Path(__file__).parent / "fixtures" / "seeds"


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


@pytest.fixture
def demo_db(tmp_path, templates) -> Path:
    path = tmp_path / "demo.db"
    s = Store(path)
    load_demo(s, templates)
    s.close()
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


@pytest.fixture
def calibrate(db_path) -> Calibrate:
    return Calibrate(db_path)
