"""`calibrate import inspect` and `export inspect` on a large .eval log.

    PYTHONPATH=. .venv/bin/python tests/bench/bench_inspect.py [SAMPLES]

Makes a 12-sample log with inspect's own eval (mock models, scripted grader), copies its samples
to SAMPLES samples (default 2000) with inspect's writer, then times, in one run: reading every
sample with inspect's per-sample reader (`read_eval_log_samples`, which opens the archive again
for each sample), reading the whole log (`read_eval_log`), `calibrate import inspect` (read a
zip member at a time, store), and `calibrate export inspect` with every sample labelled beside
inspect reading and writing the same log (what any edit of it costs). Prints the seconds and
the ratios.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from inspect_ai.log import read_eval_log, read_eval_log_samples, write_eval_log

from calibrate.formats import import_records
from calibrate.formats.inspect import FAMILY, export_edits, inspect_records, open_log
from calibrate.store import Store
from calibrate.templates import TemplateSet
from tests.test_inspect import make_eval_log


def timed(what: str, run) -> float:
    started = time.perf_counter()
    run()
    seconds = time.perf_counter() - started
    print(f"{what:<48} {seconds:8.2f} s")
    return seconds


def main(samples: int) -> None:
    folder = Path(tempfile.mkdtemp(prefix="bench-inspect-"))
    small = read_eval_log(str(make_eval_log(folder)))
    base = list(small.samples)
    small.samples = [base[n % len(base)].model_copy(update={"id": n + 1, "uuid": f"s{n}"}) for n in range(samples)]
    small.eval.dataset.sample_ids = [n + 1 for n in range(samples)]
    small.eval.dataset.samples = samples
    log = folder / "big.eval"
    write_eval_log(small, str(log))
    print(f"{samples} samples, {log.stat().st_size / 1e6:.1f} MB")

    per_sample = timed("inspect read_eval_log_samples (each sample)", lambda: sum(1 for _ in read_eval_log_samples(
        str(log), all_samples_required=False, resolve_attachments=True)))
    whole = timed("inspect read_eval_log (whole log)", lambda: read_eval_log(str(log)))
    rewrite = timed("inspect read_eval_log + write_eval_log", lambda: write_eval_log(read_eval_log(str(log)),
                                                                                     str(folder / "copy.eval")))
    store = Store(folder / "bench.db")
    templates = TemplateSet()

    def run_import() -> None:
        opened = open_log(log)
        templates.add_data_task(opened.task, "en", FAMILY, opened.labels)
        import_records(store, inspect_records(opened, lang="en"), templates,
                       data_tasks=[(opened.task, "en", FAMILY, opened.labels)])

    imported = timed("calibrate import inspect", run_import)
    store.add_imported_labels((f"u{item_id}", item_id, "ana", "C", None, None, None, None) for item_id in store.item_ids())
    exported = timed("calibrate export inspect (every sample labelled)",
                     lambda: export_edits(store, log, folder / "out.eval", annotator="ana"))
    store.close()
    print(f"import vs inspect's per-sample reader: {per_sample / imported:.1f}x faster; "
          f"vs reading the whole log: {whole / imported:.2f}x faster")
    print(f"export vs inspect reading and writing the log: {exported / rewrite:.2f}x the time "
          f"({exported / samples * 1000:.1f} ms per sample)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
