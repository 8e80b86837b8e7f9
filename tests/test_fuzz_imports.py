"""Every importer over generated hostile inputs (a small run of tests/bench/fuzz_imports.py):
no traceback, and a failed import leaves the database byte for byte as it was."""

from __future__ import annotations

from tests.bench.fuzz_imports import fuzz


def test_importers_refuse_hostile_inputs_cleanly_and_failed_imports_change_nothing():
    outcome = fuzz(140, seed=1)
    assert sum(outcome.inputs.values()) == 140 and len(outcome.inputs) == 7
    assert outcome.bad == 0, "\n".join(outcome.failures)
    assert all(outcome.refused[importer] >= 5 for importer in outcome.inputs), "the inputs are hostile enough"
    assert sum(outcome.imported.values()) >= 10, "and some still import (harmless changes, --skip-bad)"
