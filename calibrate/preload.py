"""Importing a slow module on a thread of its own while the caller reads the database: scipy's
statistics (about a second) for the report, numpy for the stratified queue's lanes. SQLite reads
without the interpreter's lock, so on a free core the import and the reads overlap."""

from __future__ import annotations

import importlib
import threading
from contextlib import suppress


def import_meanwhile(module: str) -> threading.Thread:
    """A started daemon thread that imports `module`; join it to wait for the import. An
    ImportError is left to the module's first real import to report."""
    thread = threading.Thread(target=_import, args=(module,), name=f"import {module}", daemon=True)
    thread.start()
    return thread


def _import(module: str) -> None:
    with suppress(ImportError):
        importlib.import_module(module)
