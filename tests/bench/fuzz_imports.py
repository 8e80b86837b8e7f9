"""Fuzz: every importer over generated inputs, through the command line as a user runs it:
`import jsonl`, `import labels` (JSONL and CSV), `import superglue`, `import c3` (reference and
response trees), `import c3-results` and `import rubric`. Each input is a valid one from the
demo data (or made like it) with a few mutations: a value replaced by a hostile one (wrong
type, NaN, a huge or deep value, a lone surrogate, control and invisible characters), lines
truncated, repeated, emptied or cut by invalid UTF-8, files of a tree deleted, emptied, added or
garbled. An input passes when the command ends with a message (exit 0, 1 or 2, no traceback),
and, when the import failed, the database is byte for byte what it was (its SQL dump compared).

    PYTHONPATH=. .venv/bin/python tests/bench/fuzz_imports.py [N] [--seed S] [--keep DIR] [--only I]

N inputs (default 10,000) over the importers in turn; `--keep` saves each failing input;
`--only I` reruns input I of the seed. `tests/test_fuzz_imports.py` runs a few hundred.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from click.testing import CliRunner

import calibrate.cli
from calibrate.cli import cli
from calibrate.demo import DEMO_DIR, load_demo
from calibrate.store import Store
from calibrate.templates import TemplateSet

SUPERGLUE_TASKS = ("boolq", "cb", "copa", "rte", "wic", "wsc", "multirc", "record", "axb", "axg")
LABEL_COLUMNS = ("task", "lang", "system", "source_id", "annotator", "label", "note")


def hostile_value(rng: random.Random):
    """A value no importer should take as it is, or should take without harm."""
    choices = [
        None, True, False, 0, -1, 10**400, 2**63, 1.5, float("nan"), float("inf"), "", " ", "\x00", "\ud800",
        "\x1b]52;c;aGk=\x07", "id\u200b", "\u202eevil", "=cmd|' /C calc'!A0", "../../etc/passwd", "a" * 100_000,
        "中文", [], ["a", 1], {}, {"k": "v"}, [[[[[[[[[[[]]]]]]]]]]], "yes", "no", "是", "True", "1", "{}",
    ]
    if rng.random() < 0.05:
        return f"@@deep:{rng.choice((100, 1000, 100_000))}@@"  # written as that many nested lists (see dumps)
    return rng.choice(choices)


_DEEP = re.compile(r'"@@deep:(\d+)@@"')


def dumps(value) -> str:
    """JSON as a careless writer makes it: NaN, Infinity and lone surrogates included, and
    nesting deeper than Python's json module can write."""
    text = json.dumps(value, ensure_ascii=True, allow_nan=True)
    return _DEEP.sub(lambda m: "[" * int(m.group(1)) + '"x"' + "]" * int(m.group(1)), text)


def mutate_object(rng: random.Random, record):
    """One structural change to a decoded JSON record: a field replaced, removed or added."""
    if isinstance(record, dict) and record:
        key = rng.choice(list(record))
        action = rng.random()
        if action < 0.6:
            record[key] = hostile_value(rng)
        elif action < 0.8:
            del record[key]
        else:
            record[rng.choice(["extra", key + "2", "", "\x1b", "id"])] = hostile_value(rng)
        return record
    if isinstance(record, list) and record:
        index = rng.randrange(len(record))
        record[index] = mutate_object(rng, record[index]) if rng.random() < 0.5 else hostile_value(rng)
        return record
    return hostile_value(rng)


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    """One change to a file's bytes: truncation, invalid UTF-8, a byte flipped, a line repeated
    or emptied, a BOM, CRLF line ends, NULs, or nothing left."""
    lines = data.split(b"\n")
    action = rng.randrange(10)
    if action == 0 and data:
        return data[: rng.randrange(len(data))]
    if action == 1 and data:
        at = rng.randrange(len(data))
        return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[at:]
    if action == 2 and data:
        at = rng.randrange(len(data))
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1:]
    if action == 3:
        line = rng.randrange(len(lines))
        return b"\n".join(lines[: line + 1] + lines[line:])
    if action == 4:
        line = rng.randrange(len(lines))
        lines[line] = rng.choice([b"", b" ", b"{", b"[]", b"null", b"\"x\"", b"{\"a\": 1"])
        return b"\n".join(lines)
    if action == 5:
        return b"\xef\xbb\xbf" + data
    if action == 6:
        return data.replace(b"\n", b"\r\n")
    if action == 7:
        return data.replace(b" ", b"\x00", 1)
    if action == 8:
        return rng.choice([b"", b"\n", b"\n\n\n"])
    return data + b"\n" + rng.choice([b"{}", b"[1, 2]", b"garbage", b"\x00\x01"])


def mutate_jsonl(rng: random.Random, records: list) -> bytes:
    """JSON lines with one to three mutations, structural or of the bytes."""
    records = [json.loads(json.dumps(r)) for r in records]
    for _ in range(rng.randint(1, 3)):
        if rng.random() < 0.6 and records:
            index = rng.randrange(len(records))
            records[index] = mutate_object(rng, records[index])
        else:
            data = "".join(dumps(r) + "\n" for r in records).encode("utf-8", "surrogatepass")
            return mutate_bytes(rng, data)
    return "".join(dumps(r) + "\n" for r in records).encode("utf-8", "surrogatepass")


def read_jsonl(path: Path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass
class Case:
    importer: str
    args: list[str]
    folder: Path


@dataclass
class Outcome:
    inputs: Counter = field(default_factory=Counter)
    imported: Counter = field(default_factory=Counter)
    refused: Counter = field(default_factory=Counter)
    tracebacks: Counter = field(default_factory=Counter)
    changed: Counter = field(default_factory=Counter)  # a failed import that changed the database
    failures: list[str] = field(default_factory=list)
    seconds: dict = field(default_factory=lambda: defaultdict(float))

    @property
    def bad(self) -> int:
        return sum(self.tracebacks.values()) + sum(self.changed.values())


class Fuzzer:
    """Makes the inputs (in `work`) and runs each against a database of the demo data."""

    def __init__(self, work: Path, seed: int):
        self.work, self.seed = work, seed
        self.demo = work / "demo"  # the demo files, on the same file system as the inputs (hard links)
        shutil.copytree(DEMO_DIR, self.demo, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        self.base = work / "base.db"
        store = Store(self.base)
        load_demo(store, TemplateSet())
        self.items = [(i.task, i.lang, i.system, i.source_id) for i in store.iter_items()]
        store.close()
        self.db = work / "fuzz.db"
        self.restore()
        self.baseline = self.dump()
        self.makers: dict[str, Callable[[random.Random, Path], list[str]]] = {
            "jsonl": self.jsonl, "labels-jsonl": self.labels_jsonl, "labels-csv": self.labels_csv,
            "superglue": self.superglue, "c3": self.c3, "c3-results": self.c3_results, "rubric": self.rubric,
        }

    def restore(self) -> None:
        for suffix in ("-wal", "-shm"):
            Path(f"{self.db}{suffix}").unlink(missing_ok=True)
        shutil.copyfile(self.base, self.db)

    def dump(self) -> str:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return "\n".join(conn.iterdump())
        finally:
            conn.close()

    # -- inputs ----------------------------------------------------------------------------------

    def options(self, rng: random.Random, system: bool = True) -> list[str]:
        extra = []
        if rng.random() < 0.3:
            extra.append("--skip-bad")
        if rng.random() < 0.2:
            extra.append("--update")
        if system and rng.random() < 0.2:
            extra += ["--system", str(hostile_value(rng)) if rng.random() < 0.3 else "fuzz-sys"]
        return extra

    def jsonl(self, rng: random.Random, folder: Path) -> list[str]:
        records = [{"id": k, "content": f"sentence {k}", "notation": "n", "response": "r", "judge": "The answer is: yes."}
                   for k in range(rng.randint(1, 6))]
        source = folder / "items.jsonl"
        source.write_bytes(mutate_jsonl(rng, records))
        args = ["import", "jsonl", str(source), "--task", rng.choice(["c3/lexical"] * 8 + ["c3/nope", "superglue/boolq"]),
                "--lang", rng.choice(["en"] * 8 + ["zh", "fr"])]
        if rng.random() < 0.4:
            args += ["--judge-output", "judge", "--judge-name", "fuzz-judge"]
        if rng.random() < 0.2:
            args += ["--map", rng.choice(["content=response", "content=missing", "x=y", "content"])]
        if rng.random() < 0.2:
            args += ["--reference-field", rng.choice(["notation", "missing"])]
        if rng.random() < 0.1:
            args += ["--system-field", rng.choice(["response", "missing"])]
        return args + self.options(rng, system="--system-field" not in args)

    def labels_rows(self, rng: random.Random) -> list[dict]:
        rows = []
        for task, lang, system, source_id in rng.sample(self.items, min(len(self.items), rng.randint(1, 5))):
            label = {"en": rng.choice(["yes", "no"]), "zh": rng.choice(["是", "否"])}[lang]
            if task.startswith(("superglue", "rubric")):
                label = rng.choice(["True", "False", "entailment", "0", "50"])
            rows.append({"task": task, "lang": lang, "system": system, "source_id": source_id,
                         "annotator": rng.choice(["ana", "bo"]), "label": label, "note": "fine"})
        return rows

    def labels_jsonl(self, rng: random.Random, folder: Path) -> list[str]:
        source = folder / "labels.jsonl"
        source.write_bytes(mutate_jsonl(rng, self.labels_rows(rng)))
        return ["import", "labels", str(source)] + (["--skip-bad"] if rng.random() < 0.3 else [])

    def labels_csv(self, rng: random.Random, folder: Path) -> list[str]:
        rows = self.labels_rows(rng)
        for _ in range(rng.randint(1, 2)):
            row = rng.choice(rows)
            column = rng.choice(list(row))
            row[column] = str(hostile_value(rng)) if rng.random() < 0.8 else None
        out = io.StringIO(newline="")
        columns = list(LABEL_COLUMNS) if rng.random() < 0.8 else rng.sample(LABEL_COLUMNS, rng.randint(1, 6))
        writer = csv.DictWriter(out, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: v for k, v in r.items() if v is not None} for r in rows)
        data = out.getvalue().encode("utf-8", "surrogatepass")
        if rng.random() < 0.5:
            data = mutate_bytes(rng, data)
        source = folder / "labels.csv"
        source.write_bytes(data)
        return ["import", "labels", str(source)] + (["--skip-bad"] if rng.random() < 0.3 else [])

    def superglue(self, rng: random.Random, folder: Path) -> list[str]:
        task = rng.choice(SUPERGLUE_TASKS)
        source, predictions = folder / f"{task}.jsonl", folder / f"{task}.predictions.jsonl"
        items = read_jsonl(self.demo / "superglue" / f"{task}.jsonl")
        answers = read_jsonl(self.demo / "superglue" / f"{task}.predictions.jsonl")
        which = rng.random()
        source.write_bytes(mutate_jsonl(rng, items) if which < 0.6 else "".join(dumps(r) + "\n" for r in items).encode())
        predictions.write_bytes(mutate_jsonl(rng, answers) if which > 0.4 else
                                "".join(dumps(r) + "\n" for r in answers).encode())
        args = ["import", "superglue", "--task", task if rng.random() < 0.95 else "nope", str(source)]
        if rng.random() < 0.8:
            args += ["--predictions", str(predictions)]
        return args + self.options(rng)

    def tree(self, rng: random.Random, source: Path, target: Path) -> None:
        """A copy of a demo tree (hard links; mutated files are rewritten) with one to three
        changes: a file garbled or emptied, a JSON value replaced, a file deleted or added."""
        shutil.copytree(source, target, copy_function=os.link)
        files = sorted(p for p in target.rglob("*") if p.is_file())
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(files)
            action = rng.random()
            if not path.exists():
                continue
            data = path.read_bytes()
            path.unlink()
            if action < 0.15:
                files.remove(path)
                continue  # deleted
            if action < 0.25:
                extra = path.parent / f"{rng.choice([7, 99, 1])}{path.suffix}"
                extra.unlink(missing_ok=True)
                extra.write_bytes(data)
            if path.suffix == ".json" and action < 0.7:
                try:
                    records = json.loads(data)
                    data = dumps(mutate_object(rng, records)).encode("utf-8", "surrogatepass")
                except (ValueError, UnicodeDecodeError, RecursionError):  # garbled, or nested deep by a mutation
                    data = mutate_bytes(rng, data)
            else:
                data = mutate_bytes(rng, data)
            path.write_bytes(data)

    def c3(self, rng: random.Random, folder: Path) -> list[str]:
        lang = rng.choice(["en", "zh"])
        base = self.demo / "c3" / lang
        which = rng.random()
        if which < 0.5:
            self.tree(rng, base / "reference", folder / "reference")
            shutil.copytree(base / "responses", folder / "responses", copy_function=os.link)
        else:
            shutil.copytree(base / "reference", folder / "reference", copy_function=os.link)
            self.tree(rng, base / "responses", folder / "responses")
        return (["import", "c3", "--reference", str(folder / "reference"), "--responses", str(folder / "responses"),
                 "--lang", lang if rng.random() < 0.9 else {"en": "zh", "zh": "en"}[lang]] + self.options(rng))

    def c3_results(self, rng: random.Random, folder: Path) -> list[str]:
        lang = rng.choice(["en", "zh"])
        self.tree(rng, self.demo / "c3" / lang / rng.choice(["results", "results-beta"]), folder / "results")
        return ["import", "c3-results", str(folder / "results"), "--lang", lang, "--judge-name",
                rng.choice(["fuzz-judge", "demo-judge"])] + self.options(rng)

    def rubric(self, rng: random.Random, folder: Path) -> list[str]:
        source = folder / "rubric.jsonl"
        source.write_bytes(mutate_jsonl(rng, read_jsonl(self.demo / "rubric" / "rubric.jsonl")))
        args = ["import", "rubric", str(source)]
        if rng.random() < 0.6:
            args += ["--judge-output", "judge_output", "--judge-name", "fuzz-judge"]
        return args + self.options(rng)

    # -- running ---------------------------------------------------------------------------------

    def case(self, index: int) -> Case:
        importer = list(self.makers)[index % len(self.makers)]
        rng = random.Random(f"{self.seed}:{index}")
        folder = self.work / "inputs" / str(index)
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return Case(importer, self.makers[importer](rng, folder), folder)

    def run(self, indices, outcome: Outcome, keep: Path | None = None) -> Outcome:
        """Run the inputs `indices`; the bundled templates are loaded once and shared by every
        command (they never change), the rest of each command runs as from a shell."""
        runner, templates = CliRunner(), TemplateSet()
        loader, calibrate.cli.TemplateSet = calibrate.cli.TemplateSet, lambda folders: templates
        try:
            return self._run(runner, indices, outcome, keep)
        finally:
            calibrate.cli.TemplateSet = loader

    def _run(self, runner: CliRunner, indices, outcome: Outcome, keep: Path | None) -> Outcome:
        for done, index in enumerate(indices, 1):
            if done % 1000 == 0:
                print(f"{done:,} inputs: {sum(outcome.tracebacks.values())} tracebacks, "
                      f"{sum(outcome.changed.values())} changed", file=sys.stderr, flush=True)
            case = self.case(index)
            started = time.perf_counter()
            result = runner.invoke(cli, ["--db", str(self.db), *case.args], catch_exceptions=True)
            outcome.seconds[case.importer] += time.perf_counter() - started
            outcome.inputs[case.importer] += 1
            problem = None
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                outcome.tracebacks[case.importer] += 1
                problem = f"traceback: {type(result.exception).__name__}: {result.exception}"
            elif "Traceback" in result.output or result.exit_code not in (0, 1, 2):
                outcome.tracebacks[case.importer] += 1
                problem = f"exit {result.exit_code}: {result.output[-300:]}"
            elif result.exit_code == 0:
                outcome.imported[case.importer] += 1
            else:
                outcome.refused[case.importer] += 1
                if self.dump() != self.baseline:
                    outcome.changed[case.importer] += 1
                    problem = f"database changed by a failed import: {result.output[-300:]}"
            if problem:
                outcome.failures.append(f"#{index} {case.importer} {' '.join(case.args[:3])}: {problem}")
                if keep is not None:
                    shutil.copytree(case.folder, keep / str(index), dirs_exist_ok=True)
                    (keep / str(index) / "command.txt").write_text(" ".join(case.args) + "\n" + result.output,
                                                                   errors="backslashreplace")
            if result.exit_code == 0 or problem:
                self.restore()
            shutil.rmtree(case.folder, ignore_errors=True)
        return outcome


def fuzz(n: int, seed: int = 0, keep: Path | None = None, only: int | None = None) -> Outcome:
    memory = Path("/dev/shm")  # no disk syncs: the commands run the same, faster
    with tempfile.TemporaryDirectory(dir=memory if memory.is_dir() and os.access(memory, os.W_OK) else None) as tmp:
        fuzzer = Fuzzer(Path(tmp), seed)
        return fuzzer.run([only] if only is not None else range(n), Outcome(), keep)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", nargs="?", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="save each failing input here")
    parser.add_argument("--only", type=int, help="rerun this input only")
    options = parser.parse_args()
    started = time.perf_counter()
    outcome = fuzz(options.n, options.seed, options.keep, options.only)
    elapsed = time.perf_counter() - started
    print(f"{'importer':<14}{'inputs':>8}{'imported':>10}{'refused':>9}{'tracebacks':>12}{'changed':>9}{'ms/input':>10}")
    for importer, count in outcome.inputs.items():
        print(f"{importer:<14}{count:>8}{outcome.imported[importer]:>10}{outcome.refused[importer]:>9}"
              f"{outcome.tracebacks[importer]:>12}{outcome.changed[importer]:>9}"
              f"{1000 * outcome.seconds[importer] / count:>10.0f}")
    total = sum(outcome.inputs.values())
    print(f"{total:,} inputs in {elapsed:.0f} s: {sum(outcome.tracebacks.values())} tracebacks, "
          f"{sum(outcome.changed.values())} failed imports that changed the database (seed {options.seed})")
    for failure in outcome.failures[:50]:
        print(" ", failure)
    sys.exit(1 if outcome.bad else 0)


if __name__ == "__main__":
    main()
