"""The benchmarks' large database, built once and reused: N items over five tasks with
templates (C3 yes/no in English, C3 是/否 in Chinese, SuperGLUE BoolQ True/False and CB with
three labels, C3 syntactic) and four systems under test, judged by two judges (so the report
has their jury), labelled by three annotators, with what a real database holds besides:
unparsed and failed judgments, confidences from logprobs, repeats on a few items.

Rows are written with raw `executemany` in a few large transactions, through the schema's
triggers (the counts the report reads are kept by them), so building 1M items takes minutes,
not the hours an import through the CLI would.

Per item k (1-based), deterministic from k:
- cell: TASKS[k % 5]; system: SYSTEMS[(k // 5) % 4]; reference: the gold label (SuperGLUE)
  or the reference text (C3);
- judge "gpt" (a judge run: its prompt stored, ~400 characters, and a confidence from
  logprobs in [0.5, 1]): a verdict, unparsed on ~8 % of items, an error on ~0.5 %; on 2 % of
  items two more samples (`judge --repeat 3`), which disagree on a third of those;
- judge "r1" (imported, no prompt, no confidence): a verdict on every item, unparsed on ~5 %;
- labels: ~70 % of items labelled by one of ann0..ann2 (right 95 % of the time), 5 % of items
  by a second one too; the rest unlabelled (what the annotation queue serves).
The judge "gpt" is confident where it is right (its confidence 0.5 + 0.5 u^0.15 then, else
0.5 + 0.5 u^1.5), so `trust` finds a threshold and the escalate order has both kinds of item.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import numpy as np

from calibrate.model import digest, now_iso
from calibrate.store import Store
from calibrate.store.items import response_length

TASKS = [  # task, lang, fields, labels, reference of a right response (C3's source ids: its folder / index)
    ("c3/lexical", "en", {"content": "She went to the bank to see the ducks.", "notation": "The bank of a river.",
                          "response": "She means a river bank, where ducks are."}, ["yes", "no"], "The bank of a river."),
    ("c3/semantic", "zh", {"content": "他在银行门口等我。", "annotation": "河岸。", "response": "他在河边等你。"},
     ["是", "否"], "河岸。"),
    ("superglue/boolq", "en", {"question": "is the sun a star", "passage": "Sun -- The Sun is the star at the center of "
                               "the Solar System. It is a nearly perfect ball of hot plasma.", "response": "True"},
     ["True", "False"], None),
    ("superglue/cb", "en", {"premise": "It was a complex language. Not written down but handed down.",
                            "hypothesis": "the language was peeled down", "response": "neutral"},
     ["entailment", "contradiction", "neutral"], None),
    ("c3/syntactic", "en", {"content": "I saw the man with the telescope.", "notation": "I used a telescope.",
                            "response": "The speaker looked through a telescope."}, ["yes", "no"], "I used a telescope."),
]
SYSTEMS = ["sys-a", "sys-b", "sys-c", "sys-d"]
C3_FOLDERS = {"c3/lexical": "ambiguity/semantic/lexical", "c3/semantic": "ambiguity/semantic",
              "c3/syntactic": "ambiguity/semantic/syntactic"}  # as C3's import names its items, so `export c3` finds them
ANNOTATORS = ["ann0", "ann1", "ann2"]
PROMPT = ("You are an expert evaluator of spoken dialogue models. Read the utterance, the standard answer and the "
          "student's answer below, decide whether the student's answer agrees with the standard answer, reason "
          "briefly, and end with one line: The answer is: yes or The answer is: no. ") * 2
BATCH = 100_000


def cell_of(k: int) -> tuple[str, str, dict, list[str], str | None]:
    return TASKS[k % len(TASKS)]


def answer(lang: str, verdict: str) -> str:
    if lang == "zh":
        return f"学生的回答与标准答案{'一致' if verdict == '是' else '不一致'}。\n最终答案为：{verdict}"
    return f"The student's answer {'matches' if verdict in ('yes', 'True', 'entailment') else 'differs from'} " \
           f"the standard answer.\nThe answer is: {verdict}"


def build(path: Path, n: int, *, seed: int = 0, log=print) -> None:
    """Write the database at `path` (a new file) with `n` items."""
    path = Path(path)
    if path.exists():
        raise FileExistsError(path)
    store = Store(path)
    rng = random.Random(seed)
    stamp = now_iso()
    c = store.conn
    c.execute("PRAGMA cache_size = -262144")
    started = time.perf_counter()
    fields = [json.dumps(f, ensure_ascii=False) for _, _, f, _, _ in TASKS]

    def batches(rows):
        batch = []
        for row in rows:
            batch.append(row)
            if len(batch) >= BATCH:
                yield batch
                batch = []
        if batch:
            yield batch

    def write(sql, rows, what):
        for batch in batches(rows):
            c.execute("BEGIN IMMEDIATE")
            c.executemany(sql, batch)
            c.execute("COMMIT")
        log(f"  {what} written ({time.perf_counter() - started:.0f} s)")

    truth = {}  # item -> the right label (what a careful person says)

    def items():
        for k in range(1, n + 1):
            t = k % len(TASKS)
            task, lang, _, labels, ref = TASKS[t]
            right = labels[0] if rng.random() < 0.7 else labels[1 + int(rng.random() * (len(labels) - 1))]
            truth[k] = right
            reference = right if task.startswith("superglue/") else ref
            source = f"{C3_FOLDERS[task]}/{k}" if task in C3_FOLDERS else str(k)
            yield (k, task, lang, SYSTEMS[(k // len(TASKS)) % len(SYSTEMS)], source, fields[t], reference,
                   digest(f"million-{k}"), stamp, lengths[t])

    lengths = [response_length(f) for _, _, f, _, _ in TASKS]
    write("INSERT INTO items (id, task, lang, system, source_id, fields, reference, content_hash, imported_at, "
          "response_length) VALUES (?,?,?,?,?,?,?,?,?,?)", items(), f"{n:,} items")

    def other(labels, label):
        return labels[(labels.index(label) + 1 + int(rng.random() * (len(labels) - 1))) % len(labels)]

    def judgments():
        for k in range(1, n + 1):
            task, lang, _, labels, _ = TASKS[k % len(TASKS)]
            right = truth[k]
            samples = 3 if k % 50 == 7 else 1
            for s in range(samples):
                r = rng.random()
                if r < 0.005:
                    yield (f"g{k}-{s}", k, "gpt", "gpt-key", s, "error", None, None, None, "HTTP 500", PROMPT, stamp)
                    continue
                if r < 0.085:
                    yield (f"g{k}-{s}", k, "gpt", "gpt-key", s, "unparsed", None, None, "I cannot tell.", None, PROMPT,
                           stamp)
                    continue
                agrees = rng.random() < (0.88 if s == 0 or k % 150 != 7 else 0.5)
                verdict = right if agrees else other(labels, right)
                confidence = round(0.5 + 0.5 * rng.random() ** (0.15 if agrees else 1.5), 4)
                yield (f"g{k}-{s}", k, "gpt", "gpt-key", s, "verdict", verdict, confidence, answer(lang, verdict), None,
                       PROMPT, stamp)
            r = rng.random()
            if r < 0.05:
                yield (f"r{k}", k, "r1", "r1-key", 0, "unparsed", None, None, "Hmm.", None, None, stamp)
            else:
                verdict = right if rng.random() < 0.8 else other(labels, right)
                yield (f"r{k}", k, "r1", "r1-key", 0, "verdict", verdict, None, answer(lang, verdict), None, None, stamp)

    write("INSERT INTO judgments (uid, item_id, judge_name, judge_key, sample, status, verdict, confidence, raw_output, "
          "error, prompt, params, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,'{}',?)", judgments(), "judgments")

    labelled = []

    def annotations():
        for k in range(1, n + 1):
            r = rng.random()
            if r >= 0.70:
                continue
            _, _, _, labels, _ = TASKS[k % len(TASKS)]
            first = k % len(ANNOTATORS)
            people = [first] + ([(first + 1) % len(ANNOTATORS)] if r < 0.05 else [])
            for a in people:
                label = truth[k] if rng.random() < 0.95 else other(labels, truth[k])
                uid = f"a{k}-{a}"
                labelled.append((k, ANNOTATORS[a], label, uid))
                yield (uid, k, ANNOTATORS[a], "label", label, stamp)

    write("INSERT INTO annotations (uid, item_id, annotator, action, label, created_at) VALUES (?,?,?,?,?,?)",
          annotations(), "annotations")
    # the store keeps each annotator's label in force beside every appended annotation: these
    # raw inserts add the rows it would (one label per item and annotator here)
    write("INSERT INTO labels_in_force (item_id, annotator, label, action, annotation_uid, decided_at) "
          "VALUES (?,?,?,'label',?,?)", ((k, a, label, uid, stamp) for k, a, label, uid in labelled),
          f"{len(labelled):,} labels in force")
    c.execute("PRAGMA optimize")
    store.close()


def ensure(path: Path, n: int, log=print) -> Path:
    """The database at `path`, built with `n` items unless it is there already."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        log(f"building {n:,} items into {path} (once; reused by later runs)")
        partial = path.with_name(path.name + ".partial")
        for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
            leftover.unlink(missing_ok=True)
        build(partial, n, log=log)
        partial.rename(path)
    return path


# -- bench_report's database: 40 cells, one judge, one label per item ------------------------------

FORTY_TASKS = [f"bench/task-{k:02d}" for k in range(20)]
FORTY_LANGS = ["en", "zh"]


def build_forty_cells(path: Path, n: int) -> None:
    """bench_report's database: n items over 40 task x language cells without templates, one
    judge's yes/no verdict and one annotator's label on each (from three annotators)."""
    store = Store(path)
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 40, n)
    truth = rng.random(n) < 0.7
    judge = np.where(rng.random(n) < 0.85, truth, ~truth)
    human = np.where(rng.random(n) < 0.9, truth, ~truth)
    stamp = now_iso()
    c = store.conn
    c.execute("BEGIN IMMEDIATE")
    c.executemany(
        "INSERT INTO items (id, task, lang, source_id, fields, reference, content_hash, imported_at) VALUES (?,?,?,?,?,?,?,?)",
        ((k + 1, FORTY_TASKS[cells[k] // 2], FORTY_LANGS[cells[k] % 2], str(k), "{}", None, digest(str(k)), stamp) for k in range(n)),
    )
    c.executemany(
        "INSERT INTO judgments (uid, item_id, judge_name, judge_key, status, verdict, params, created_at) VALUES (?,?,?,?,?,?,?,?)",
        ((f"j{k}", k + 1, "gpt", "key", "verdict", "yes" if judge[k] else "no", "{}", stamp) for k in range(n)),
    )
    c.executemany(
        "INSERT INTO annotations (uid, item_id, annotator, action, label, created_at) VALUES (?,?,?,?,?,?)",
        ((f"a{k}", k + 1, f"ann{k % 3}", "label", "yes" if human[k] else "no", stamp) for k in range(n)),
    )
    # the store keeps each annotator's label in force beside every appended annotation: these
    # raw inserts add the rows it would (one label per item and annotator here)
    c.executemany(
        "INSERT INTO labels_in_force (item_id, annotator, label, action, annotation_uid, decided_at) VALUES (?,?,?,?,?,?)",
        ((k + 1, f"ann{k % 3}", "yes" if human[k] else "no", "label", f"a{k}", stamp) for k in range(n)),
    )
    c.execute("COMMIT")
    store.close()
