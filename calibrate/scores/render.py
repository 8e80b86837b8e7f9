"""`calibrate scores` written out: a terminal table (a block per cell on narrow terminals),
Markdown, JSON, CSV and an HTML page, each with the notes and sections below the table."""

from __future__ import annotations

import csv
import html
import io
import json
from collections import defaultdict

from calibrate.escape import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.fit import hanging
from calibrate.html_page import page
from calibrate.model import counted
from calibrate.names import listing
from calibrate.scores.model import FINAL, JudgeScores, Scores
from calibrate.stats.simulated import APPROXIMATE_MARK, approximate_words

COLUMNS = ["system", "task", "lang", "judge", "items", "judged", "labelled", "C3 rule", "parser (unparsed, errors wrong)",
           "parser (unparsed, errors left out)", "people", "corrected", "Rogan–Gladen", "more labels", "note"]
NUMBER_COLUMNS = ["tied", "c3_rule_accuracy", "parser_unparsed_wrong_accuracy", "parser_unparsed_left_out_accuracy",
                  "people_value", "people_low", "people_high", "corrected_value", "corrected_low", "corrected_high",
                  "rogan_gladen_value", "rogan_gladen_low", "rogan_gladen_high"]
"""The CSV's numbers, between COLUMNS' "more labels" and "note" (so the note stays last): the shown figures as
fractions at full precision, empty where none."""
NO_JUDGE = "(no judge)"
"""The judge column of a cell no judge shown has verdicts in."""
OTHER_BENCHMARKS = ("{judge}'s figures here leave out this row's {n} of benchmarks it does not judge "
                    "(their judges' rows give theirs)")
NO_VERDICTS = "no verdicts on these items by the judges shown: no judge accuracy, raw or corrected"
TIED = ("{} whose labels tie (no majority label): counted unlabelled here, so left out of labelled, "
        "people and corrected (`calibrate status` counts them labelled)")
NO_GOLD = ("{} without a gold label (a test split's): neither right nor wrong, so left out of labelled, people and "
           "every accuracy here (`calibrate report` still compares judges with people on them)")
UNPARSED_READ_AS_NO = (
    "corrected and Rogan–Gladen read this judge's unparsed and error verdicts as not right, like a \"no\": a valid "
    "reading (the labels measure the judge's errors under that same reading), not a parsed verdict")
FAILED_NOT_JUDGED = ("{} (errors: no output, no verdict), not counted as judged; C3 rule and "
                     "parser (unparsed wrong) count them wrong, as C3's statistics count a failed call, and parser "
                     "(unparsed left out) leaves them out")
C3_NO_RECORD = ("C3 rule: {n} another judge shown has a record for and {judge} none count wrong, as C3's "
                "process_results.py counts them; the parser columns leave them out")
C3_OWN_DECISIONS = ("C3 rule: {judge}'s own result files decided {n} otherwise than the label in force ({which}); "
                    "it counts them as its files have them, as C3's process_results.py does (calibrate keeps one "
                    "decision per item: the result files imported last; the other columns count that one)")
RULE_EXPLAINED = (
    "judged: the items with a verdict in force by the judge (by any judge shown, in its (no judge) and mean rows), "
    "its unparsed outputs included; a failed judgment is no verdict, so it is not judged. "
    "C3 rule: C3's own statistics script (split on \"The answer is: \" / \"最终答案为：\", right iff the rest starts "
    "with yes/是), so a bold, full-width-colon or space-less \"yes\" counts as wrong; it divides as that script "
    "does, by the items any judge shown has a record for (a verdict or an error), counting wrong an item the judge "
    "has none for: shown the two judges of a C3 run (--judge dpsk --judge gpt where there are more), it gives C3's "
    "own figures, one judge alone what the script gives on that judge's files alone, and a third judge's records "
    "count for the others too; it leaves out the items C3's evaluate.py passes over and counts a judge's generation "
    "decisions as its own result files hold them. Parser: calibrate's tolerant parser, over the judge's own "
    "records. Corrected: the accuracy of the labelled items within each judge verdict, weighted by how often the "
    "judge gave it (stratified by the verdict; for C3's final score by the judges' mean verdict), with a 95 % "
    "Bayesian interval for the accuracy over the cell's items (Jeffreys prior per verdict, exact posterior): with one "
    "judge it covered 93 % or more in simulation from 20 labels on, all-correct label sets included "
    "(tests/bench/correction_coverage.py). Rogan–Gladen from the judge's sensitivity and specificity on labelled "
    "items, Wald interval; PPI++ (Angelopoulos et al. 2023) is in the JSON only, as it covered down to 74 % at "
    "20 labels and gives no interval when the labels are all correct. " + APPROXIMATE_MARK + " after an interval: "
    "it covered less than 93 % in simulation near this setting (the note gives the figure). Every interval needs "
    "10 random labels. Labels are taken as a random sample of their cell (a test flags cells where they clearly "
    "are not); a row pooling several judged cells (a system overall) is corrected only when each cell has its own "
    "number, as those numbers weighted by the cells' shares of the items, with no Rogan–Gladen; its people column "
    "likewise weighs each cell's labelled accuracy by its share (none while a cell has no labels). A judge's raw and "
    "corrected figures in such a row cover the cells of the benchmarks it judges and need its verdicts in each of "
    "them: else they are — and the note names the cells without. A row that also holds items people decide (C3's "
    "generation phenomena) counts them in its corrected figure, as its accuracies do: by their label, the "
    "unlabelled ones estimated from the labelled ones as a stratum of their own (the accuracies count them wrong), "
    "so they widen the interval until they are labelled (a note says how many); Rogan–Gladen is not given there. "
    "Unparsed and error verdicts count as not right in corrected and Rogan–Gladen (the "
    "labels measure the judge's errors under that reading, so both stay valid; a note marks the rows). Items "
    "whose labels tie have no majority label and count as unlabelled (a note says how many). Items without a gold label (a test split's) are neither "
    "right nor wrong: left out of every accuracy (a note says how many). Items people "
    "decide (C3's generation phenomena) count in each judge's accuracy by their human "
    "label, as wrong while unlabelled, as in C3's statistics; they are not judge evidence: corrected, Rogan–Gladen "
    "and more labels use only the items the judge judged.")


class Footnotes:
    """Long reasons said once below the table and referred to by number in it."""

    def __init__(self):
        self.texts: list[str] = []

    def ref(self, text: str | None) -> str:
        if not text:
            return ""
        if text not in self.texts:
            self.texts.append(text)
        return f"[{self.texts.index(text) + 1}]"

    def lines(self) -> list[str]:
        return [f"[{k}] {text}" for k, text in enumerate(self.texts, 1)]


class InlineNotes(Footnotes):
    """Reasons written in full where they apply (for CSV, which has no place below a table)."""

    def ref(self, text: str | None) -> str:
        return f"{text}. " if text else ""


def _estimate_text(value: float | None, ci, approximate: float | None = None) -> str:
    if value is None:
        return "—"
    text = f"{value:.0%}"
    return text + (f" [{ci[0]:.0%}, {ci[1]:.0%}]" + (APPROXIMATE_MARK if approximate is not None else "") if ci else "")


def _approximate_note(what: str, approximate: float | None) -> str | None:
    return f"{what}: {APPROXIMATE_MARK} {approximate_words(approximate)}" if approximate is not None else None


def rows(scores: Scores, notes: Footnotes) -> list[list[str]]:
    """One row per cell and judge (and a final row per cell with several judges, a row saying so
    for a cell without verdicts), as terminal-safe text (escape.safe: names come from data);
    reasons go to `notes`."""
    return [[safe(value) for value in row] for row, _ in _rows(scores, notes)]


def _numbers(*estimates) -> list[float | None]:
    """Value, low and high of each estimate (None where there is none)."""
    return [x for e in estimates for x in ((e.value, *(e.ci or (None, None))) if e is not None else (None,) * 3)]


def _rows(scores: Scores, notes: Footnotes) -> list[tuple[list[str], list]]:
    """Each row's text (COLUMNS) and numbers (NUMBER_COLUMNS)."""
    out = []
    for cell in scores.cells:
        people = cell.people
        people_text = _estimate_text(people.value, people.ci) if cell.labelled else "—"
        why_not = people.reason if people.value is None else people.ci_reason  # no figure, or no interval
        people_note = notes.ref(f"people: {why_not}") if cell.labelled and why_not else ""
        people_note += notes.ref(TIED.format(counted(cell.tied, "labelled item")) if cell.tied else None)
        people_note += notes.ref(NO_GOLD.format(counted(cell.no_gold, "judged or labelled item")) if cell.no_gold else None)
        people_numbers = _numbers(people if cell.labelled else None)
        if not cell.judges and cell.final is None:
            out.append(([cell.system, cell.task, cell.lang, NO_JUDGE, str(cell.items), str(cell.judged),
                         str(cell.labelled), "—", "", "", people_text, "—", "", "", people_note + notes.ref(NO_VERDICTS)],
                        [cell.tied, None, None, None, *people_numbers, *_numbers(None, None)]))
        for j in cell.judges:
            note = people_note + notes.ref(j.configurations.words() if j.configurations else None)
            note += notes.ref(j.corrected.reason)
            note += notes.ref(OTHER_BENCHMARKS.format(judge=j.judge, n=counted(j.other_benchmarks, "item")) if j.other_benchmarks else None)
            note += notes.ref(UNPARSED_READ_AS_NO if (j.unparsed or j.errors) and j.corrected.value is not None else None)
            note += notes.ref(FAILED_NOT_JUDGED.format(counted(j.errors, "failed judgment")) if j.errors else None)
            note += notes.ref(C3_NO_RECORD.format(judge=j.judge, n=counted(j.c3_no_record, "item")) if j.c3_no_record
                              else None)
            note += notes.ref(C3_OWN_DECISIONS.format(judge=j.judge, n=counted(len(j.c3_own_decisions), "generation item"),
                                                      which=listing(j.c3_own_decisions, 3)) if j.c3_own_decisions else None)
            note += notes.ref(_approximate_note("corrected", j.corrected.approximate))
            note += notes.ref(j.decided.words() if j.decided else None)
            if j.rogan_gladen.reason and j.rogan_gladen.reason != j.corrected.reason:
                note += notes.ref(f"Rogan–Gladen: {j.rogan_gladen.reason}")
            note += notes.ref(_approximate_note("Rogan–Gladen", j.rogan_gladen.approximate))
            if j.plan.reason and j.plan.reason != j.corrected.reason:
                note += notes.ref(f"more labels: {j.plan.reason}")
            more = str(j.plan.more) if j.plan.more is not None else "—"
            out.append(([
                cell.system, cell.task, cell.lang, j.judge, str(cell.items), str(j.judged), str(cell.labelled),
                j.c3_rule.text() if j.c3_rule else "—", j.parser_unparsed_wrong.text(), _left_out_text(j),
                people_text, _estimate_text(j.corrected.value, j.corrected.ci, j.corrected.approximate),
                _estimate_text(j.rogan_gladen.value, j.rogan_gladen.ci, j.rogan_gladen.approximate), more, note,
            ], [cell.tied, j.c3_rule.value if j.c3_rule else None, j.parser_unparsed_wrong.value,
                j.parser_unparsed_left_out.value, *people_numbers, *_numbers(j.corrected, j.rogan_gladen)]))
        if cell.final is not None:
            f = cell.final
            out.append(([
                cell.system, cell.task, cell.lang, FINAL, str(cell.items), str(cell.judged), str(cell.labelled),
                f"{f.raw:.0%}" if f.raw is not None else "—", "", "", people_text,
                _estimate_text(f.corrected.value, f.corrected.ci, f.corrected.approximate), "", "",
                people_note + notes.ref(f.corrected.reason)
                + notes.ref(_approximate_note("corrected", f.corrected.approximate))
                + notes.ref(f.decided.words() if f.decided else None),
            ], [cell.tied, f.raw, None, None, *people_numbers, *_numbers(f.corrected, None)]))
    return out


def _left_out_text(j: JudgeScores) -> str:
    """The parser's accuracy without the judge's unparsed and error verdicts, naming what it
    leaves out ("40/80 50% without 20 errors")."""
    gone = " and ".join(counted(n, *what) for n, what in ((j.unparsed, ("unparsed", "unparsed")), (j.errors, ("error",)))
                        if n)
    accuracy = j.parser_unparsed_left_out
    return f"{accuracy.text()} without {gone}" if gone and accuracy.n else accuracy.text()


def _ranking_lines(scores: Scores) -> list[str]:
    lines = []
    unranked: dict[str, list[str]] = defaultdict(list)
    for scope, ranking in scores.rankings:
        if len(ranking.order) > 1:
            separated = {(p.a, p.b): p.separated for p in ranking.pairs}
            lines.append(f"{scope}: " + ranking.order[0] + "".join(
                f" {'>' if separated[(a, b)] else NOT_SEPARATED} {b}" for a, b in zip(ranking.order, ranking.order[1:], strict=False)))
            for p in ranking.pairs:
                d = p.difference
                lines.append(f"  {p.a} − {p.b}: {_estimate_text(d.value, d.ci)}"
                             f" ({'a real difference' if p.separated else 'the interval includes 0: no difference shown'})")
        for name, why in sorted(ranking.unranked.items()):
            unranked[why].append(f"{name} in {scope}")
    for why, where in unranked.items():
        lines.append(f"not ranked ({why}): {listing(where, 4)}")
    if any(len(r.order) > 1 for _, r in scores.rankings):
        lines.append(f"a > b: the interval of a − b excludes 0; a {NOT_SEPARATED} b: it includes 0, so the two are not "
                     "separated (no difference shown, which is not the same as none); each difference's interval is "
                     "that of the two corrected accuracies' posteriors, taken as independent (conservative when the "
                     "systems answered the same items); each is at 95 % on its own, so with many pairs some separate "
                     "by chance")
    return lines or ["(no scope with two or more systems)"]


NOT_SEPARATED = "≈"
"""Between two systems in a ranking whose difference's interval includes 0."""


def _no_interval(estimate) -> str:
    return f" ({estimate.ci_reason})" if estimate.ci_reason else ""


def _pair_lines(scores: Scores) -> list[str]:
    lines = []
    for p in scores.judge_pairs:
        k = p.kappa
        kappa = (f"κ {k.value:.2f}" + (f" [{k.ci[0]:.2f}, {k.ci[1]:.2f}]" if k.ci else _no_interval(k))
                 if k.value is not None else f"κ — ({k.reason})")
        t = p.tracks_people
        tracks = (f"agreement with people {p.a} − {p.b}: {t.value:+.0%}"
                  + (f" [{t.ci[0]:+.0%}, {t.ci[1]:+.0%}]" if t.ci else _no_interval(t))
                  + f" (n={p.n_labelled} labelled)" if t.value is not None else f"agreement with people: — ({t.reason})")
        left_out = f" ({counted(p.left_out, 'item')} with an unparsed or error verdict left out)" if p.left_out else ""
        lines.append(f"{p.scope}: {p.a} vs {p.b}, n={p.n}{left_out}: {kappa}; {tracks}")
    return lines or ["(no items judged by two judges)"]


DIFFERENCES_SHOWN = 10
"""Outputs the C3 rule and the parser read differently shown in the text formats (the JSON lists every one)."""


def _difference_lines(scores: Scores) -> list[str]:
    """The first DIFFERENCES_SHOWN outputs the two columns read differently, then how many more
    there are and where they are all listed: at thousands of items they would bury the rest."""
    found = scores.rule_differences
    if len(found) <= DIFFERENCES_SHOWN:
        return found or ["(no output is read differently)"]
    more = len(found) - DIFFERENCES_SHOWN
    return [*found[:DIFFERENCES_SHOWN],
            f"… and {counted(more, 'more output')} ({len(found)} in all): calibrate scores --format json "
            "lists every one (why_the_c3_rule_differs)"]


def sections(scores: Scores, notes: Footnotes) -> list[tuple[str, list[str]]]:
    """The parts below the table, as (title, lines) of terminal-safe text."""
    return [(title, [safe(line) for line in lines]) for title, lines in _sections(scores, notes)]


def _sections(scores: Scores, notes: Footnotes) -> list[tuple[str, list[str]]]:
    return [
        ("Notes", notes.lines() or ["(none)"]),
        ("Ranking of systems (corrected accuracy, 95 % interval of each difference)", _ranking_lines(scores)),
        ("Judge against judge", _pair_lines(scores)),
        *([("Why the C3-rule column differs from the parser column", _difference_lines(scores))]
          if any(j.c3_rule is not None for c in scores.cells for j in c.judges) else []),  # outside C3: no such column
        ("How the columns are computed", [
            RULE_EXPLAINED,
            f"more labels: random labels that would bring the corrected interval under ±{scores.target:g}, projected "
            "from the accuracy within each judge verdict so far (Cochran's post-stratified variance; 1/2 for a verdict "
            "with no label yet), under 10 labels at least those that bring the cell to 10; a plan, not a promise: at "
            "20 labels those accuracies rest on a few items each and move as labels come in",
            *scores.notes]),
    ]


def render_table(scores: Scores, console) -> None:
    from rich.table import Table
    from rich.text import Text

    notes = Footnotes()
    if console.width < WIDE_TABLE:
        _render_cards(rows(scores, notes), console)
    else:
        table = Table(title="benchmark scores per system", show_lines=False)
        for n, column in enumerate(COLUMNS):
            table.add_column(column, overflow="fold", no_wrap=n < 3)
        for row in rows(scores, notes):
            table.add_row(*[Text(v) for v in row])
        console.print(table)
    for title, lines in sections(scores, notes):
        console.print(hanging(title, console.width, style="bold"), soft_wrap=False)
        for line in lines:
            console.print(hanging(line, console.width, 2, 4), soft_wrap=False)


WIDE_TABLE = 180
"""Terminal width from which the scores are one table; narrower terminals get a block per cell."""


def _render_cards(table_rows: list[list[str]], console) -> None:
    """The table's rows as a block per cell (a heading line, then a line or two per judge),
    for terminals too narrow for fifteen columns."""
    from rich.text import Text

    console.print(Text("benchmark scores per system", style="bold"))
    heading = None
    for (system, task, lang, judge, items, _judged, labelled, rule, parser, left_out, people, corrected, rg, more,
         note) in table_rows:
        if (system, task, lang) != heading:
            heading = (system, task, lang)
            console.print(hanging(Text.assemble((f"{system} · {task} · {lang}", "bold cyan"),
                                                f"   {counted(int(items), 'item')}, {labelled} labelled, people {people}"),
                                  console.width), soft_wrap=False)
        if judge == NO_JUDGE:
            console.print(hanging(f"{judge} {note}", console.width, 2, 4), soft_wrap=False)
            continue
        first = [f"C3 rule {rule}"] if rule != "—" or not parser else []
        if parser:
            first.append(f"parser {parser}" + (f" ({left_out})" if left_out != parser else ""))
        second = [f"corrected {corrected}"] + ([f"R–G {rg}"] if rg else []) + ([f"+labels {more}"] if more else [])
        console.print(hanging(f"{judge}: " + " · ".join(first), console.width, 2, 4), soft_wrap=False)
        console.print(hanging(" · ".join(second) + (f" {note}" if note else ""), console.width, 4, 6), soft_wrap=False)


def render_markdown(scores: Scores) -> str:
    out = ["# Benchmark scores per system", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    notes = Footnotes()
    out += ["| " + " | ".join(markdown_safe(v) for v in row) + " |" for row in rows(scores, notes)]
    for title, lines in sections(scores, notes):
        out += ["", f"## {title}", ""] + [f"- {markdown_safe(line)}" for line in lines]
    return "\n".join(out) + "\n"


def render_json(scores: Scores) -> str:
    # numpy numbers become plain ones first; safe_json then writes unsafe characters as \u escapes
    return safe_json(json.loads(json.dumps(scores.as_dict(), default=float))) + "\n"


def render_csv(scores: Scores) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(COLUMNS[:-1] + NUMBER_COLUMNS + COLUMNS[-1:])
    for row, numbers in _rows(scores, InlineNotes()):
        text = [spreadsheet_safe(safe(v)) for v in row]
        writer.writerow(text[:-1] + ["" if x is None else x for x in numbers] + text[-1:])
    return buffer.getvalue()


def csv_leaves_out(scores: Scores) -> str | None:
    """What the CSV, a row per cell and judge, cannot hold of these scores, and where it is
    (said on stderr, so a spreadsheet user knows the rest exists), or None when nothing is left."""
    parts = [what for what, found in (
        ("the ranking of systems (rankings)", scores.rankings),
        ("judge against judge (judge_pairs)", scores.judge_pairs),
        ("the outputs the C3 rule and the parser read differently (why_the_c3_rule_differs)", scores.rule_differences),
        ("the notes on tasks left out (notes)", scores.notes)) if found]
    return f"the CSV has a row per cell and judge; `--format json` also has {'; '.join(parts)}" if parts else None


HTML_ORDER = [COLUMNS.index(name) for name in (
    "system", "task", "lang", "judge", "corrected", "people", "Rogan–Gladen", "more labels", "note", "items", "judged",
    "labelled", "C3 rule", "parser (unparsed, errors wrong)", "parser (unparsed, errors left out)")]
"""The HTML table's columns: the corrected score, what a benchmark publishes, beside its cell and judge, where a
window narrower than the table shows it; the counts and the C3 rule and parser figures after (the last, a
sentence, wraps)."""


def render_html(scores: Scores) -> str:
    e = html.escape
    # a header wraps between its words only: "Rogan–Gladen" kept whole on a phone (a browser may break after "–")
    head = "".join("<th>" + " ".join(f"<span class='whole'>{e(w)}</span>" if "–" in w else e(w) for w in c.split(" "))
                   + "</th>" for c in (COLUMNS[k] for k in HTML_ORDER))
    notes = Footnotes()
    body = "".join("<tr>" + "".join(f"<td>{e(row[k])}</td>" for k in HTML_ORDER) + "</tr>" for row in rows(scores, notes))
    parts = "".join(f"<h2>{e(t)}</h2><ul>" + "".join(f"<li>{e(line)}</li>" for line in lines) + "</ul>"
                    for t, lines in sections(scores, notes))
    return page("Benchmark scores per system", f"<div class='wide'><table class='scores'><thead><tr>{head}</tr></thead>"
                                               f"<tbody>{body}</tbody></table></div>{parts}")


RENDERERS = {"markdown": render_markdown, "json": render_json, "csv": render_csv, "html": render_html}
