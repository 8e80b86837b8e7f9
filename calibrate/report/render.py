"""The agreement report as text: the terminal table (80 columns, a kappa bar from 100),
Markdown, CSV and JSON, and the notes in words every format shares.
"""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from dataclasses import asdict, fields

from calibrate.cells import unparsed_words
from calibrate.escape import markdown_safe, safe, safe_json, spreadsheet_safe
from calibrate.fit import Columns, fit_table, said_once
from calibrate.model import Estimate, counted
from calibrate.reliability_cells import JudgeReliability
from calibrate.report.model import (
    STATISTIC_NAMES,
    AgreementCell,
    Report,
    ReportRow,
    line_rows,
    multiplicity_note,
    report_row,
    rows_of,
    split_estimate,
    undefined_words,
)
from calibrate.stats.score_agreement import (
    RESAMPLING_NOTE,
    STATISTICS,
    ScoreAgreement,
    ScoreCeiling,
)
from calibrate.stats.simulated import APPROXIMATE_MARK, approximate_words, coverage_words


def fmt(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def with_ci(value: float | None, low: float | None, high: float | None, approximate: float | None = None,
            digits: int = 2) -> str:
    """A value with its interval (APPROXIMATE_MARK after an approximate one). A statistic
    undefined on the observed table (e.g. kappa when both raters used one label) can still have
    an interval for its population value, which is defined: it is shown after the dash, as in
    the CSV and JSON, and the line's verdict says what it is (`POPULATION_INTERVAL`)."""
    ci = f"[{low:.{digits}f}, {high:.{digits}f}]" if low is not None else None
    if ci and approximate is not None:
        ci += APPROXIMATE_MARK
    if value is None:
        return f"— {ci}" if ci else "—"
    return f"{value:.{digits}f} {ci}" if ci else f"{value:.{digits}f} (no CI)"


def score_text(row: ReportRow, name: str) -> str:
    """One score statistic of a rubric row with its interval (MAE in score points, one decimal)."""
    return with_ci(getattr(row, name), getattr(row, f"{name}_low"), getattr(row, f"{name}_high"),
                   getattr(row, f"{name}_approximate"), digits=1 if name == "mae" else 2)


def marked(estimate: Estimate) -> str:
    """The mark of an approximate interval, in words."""
    return f"{APPROXIMATE_MARK} {approximate_words(estimate.approximate)}"


def kappa_bar(value: float | None, ci: tuple[float, float] | None, width: int = 21) -> str:
    """κ and its CI on the -1…1 scale: ━ spans the CI, ● marks κ (none where κ is undefined on
    the table), ┊ marks 0."""
    if value is None and not ci:
        return " " * width
    pos = lambda v: int(round((max(-1.0, min(1.0, v)) + 1) / 2 * (width - 1)))  # noqa: E731
    chars = ["·"] * width
    chars[pos(0.0)] = "┊"
    if ci:
        for k in range(pos(ci[0]), pos(ci[1]) + 1):
            chars[k] = "━"
    if value is not None:
        chars[pos(value)] = "●"
    return "".join(chars)


def cell_notes(c: AgreementCell, report: Report) -> list[str]:
    """What a reader must know about a cell beyond its lines: its own figures in words
    (`own_notes`), then the caveats that recur from cell to cell (`general_notes`)."""
    return own_notes(c, report) + general_notes(c)


def own_notes(c: AgreementCell, report: Report) -> list[str]:
    """A cell's own figures in words: the configurations the judge's verdicts come from where
    several, unparsed verdicts and how they were counted, the labels a narrower interval needs,
    the ceiling, ties, the alternative annotator test, reliability."""
    notes = [c.configurations.words()] if c.configurations else []
    mode = report.options.unparsed
    if c.unparsed:
        notes.append(f"{c.unparsed} of {counted(c.judged, 'verdict')} unparsed, {unparsed_words(c.kind, mode)}")
    notes += jury_notes(c)
    if c.truncated:
        notes.append(f"{c.truncated} of the unparsed outputs were cut at the judge's token limit: judge again with a "
                     "higher --max-tokens (another configuration: it asks every item again, not only these)")
    for line in c.lines:
        if line.kappa_range and line.unparsed:
            worst, best = line.kappa_range
            notes.append(f"vs {line.versus}: {counted(line.unparsed, 'labelled item')} with an unparsed verdict: κ between "
                         f"{fmt(worst)} (all wrong) and {fmt(best)} (all right)")
    plans = [f"{line.versus} {line.more_items}" for line in c.lines if line.more_items]
    if plans:
        notes.append(f"more labels for a κ interval of ±{report.options.target_half_width} (80 % assurance): "
                     + ", ".join(plans))
    if c.errors:
        notes.append(f"{counted(c.errors, 'judge error')} (no output) not counted")
    ceiling = c.ceiling
    if ceiling is not None:
        if ceiling.humans.value is None or ceiling.judge.value is None:
            notes.append(f"human ceiling: {ceiling.humans.reason or ceiling.judge.reason}")
        else:
            diff = ceiling.difference
            parts = (("people's", ceiling.humans), ("judge's", ceiling.judge), ("difference's", diff))
            people, judge, difference = (with_ci(*split_estimate(e), e.approximate) for _, e in parts)
            rough = [f"the {name} {coverage_words(e.approximate)}"
                     for name, e in parts if e.approximate]
            notes.append(
                f"human ceiling on {counted(ceiling.n_items, 'item')} labelled by {ceiling.annotators} people: "
                f"{ceiling.human_statistic} {people}; the judge on the same items κ {judge}; difference {difference}"
                + (f": {ceiling.verdict}" if ceiling.verdict else f" ({diff.reason or diff.ci_reason})")
                + (f" ({APPROXIMATE_MARK} approximate intervals: {', '.join(rough)})" if rough else "")
            )
    if c.score_ceiling is not None:
        notes.append(score_ceiling_words(c.score_ceiling))
    if c.ties:
        adjudicator = report.options.gold_from
        notes.append(f"{counted(c.ties, 'item')} tied between annotators {'has' if c.ties == 1 else 'have'} no gold label"
                     + (f" ({adjudicator} did not label them)" if adjudicator else ""))
    alt = c.alt_test
    if alt is not None and alt.ran:
        notes.append(
            f"alternative annotator test (ε = {alt.epsilon}): winning rate ω {alt.winning_rate:.2f}, advantage "
            f"probability ρ {alt.advantage_probability:.2f} over {alt.annotators} annotators: "
            f"{'passes' if alt.passed else 'does not pass'}"
            + (f"; left out: {', '.join(f'{a} ({why})' for a, why in alt.left_out.items())}" if alt.left_out else "")
        )
    if c.reliability is not None:
        notes += reliability_notes(c.reliability)
    return notes


def jury_notes(c: AgreementCell) -> list[str]:
    """What the jury leaves out, and by which rule (`calibrate.reliability_cells.jury_data`): the
    items its judges tie on (no verdict, and not unparsed: `--unparsed` never settles them),
    with how many labelled items each line loses so, and the items only one judge judged (a
    failed call is no judgment; an unparsed output is, and the other judges' labels decide)."""
    if not c.jury_judges:
        return []
    notes = []
    names = " and ".join([", ".join(c.jury_judges[:-1]), c.jury_judges[-1]])
    two = len(c.jury_judges) == 2
    if c.jury_ties:
        notes.append(
            f"{c.jury_ties} of {c.judged} judged items tied ({names} "
            + ("gave different labels" if two else "gave two or more labels the same top count")
            + "): no jury verdict, left out (a tie is not an unparsed output: --unparsed does not settle it)"
            + ("; a jury of two judges gives a verdict only where both agree (or one output is unparsed and the "
               "other's label stands), so its agreement is measured on those items" if two else ""))
        lost = [f"{line.versus} {line.jury_ties}" for line in c.lines if line.jury_ties]
        if lost:
            notes.append("labelled items left out as ties: " + ", ".join(lost))
    if c.one_judge_items:
        # one reason per item: the judges whose calls failed on it together ("j2's and j3's calls failed")
        reasons = [(" and ".join(f"{name}'s" for name in failed) + f" call{'s' if n != 1 or len(failed) > 1 else ''} "
                    "failed", n) for failed, n in sorted(c.one_judge_only.items()) if failed]
        if never := c.one_judge_only.get((), 0):
            them = "them" if never != 1 else "it"
            reasons.append((f"the other judge never judged {them}" if two else f"no other judge judged {them}", never))
        why = reasons[0][0] if len(reasons) == 1 else "; ".join(f"{n}: {words}" for words, n in reasons)
        notes.append(f"{counted(c.one_judge_items, 'item')} left out: judged by one judge only ({why}); a failed call is no "
                     "judgment, while an unparsed output is one: beside it "
                     + ("the other judge's label stands" if two else "the other judges' labels decide"))
    return notes


CEILING_SCORE_STATISTICS = (("spearman", "ρ"), ("mae", "MAE"), ("weighted_kappa", "weighted κ"))
"""The score statistics the human ceiling of scores shows in words (the JSON has all of them)."""


def score_ceiling_words(ceiling: ScoreCeiling) -> str:
    """The human ceiling of a scored cell in words: per score, the people's Spearman, MAE and
    weighted κ beside the judge's on the same items, with the simulated coverage of those marked
    approximate. Its note on how the intervals resample items is left out where none is shown."""
    shown = any(agreement.estimate(stat).ci is not None for side in (ceiling.humans, ceiling.judge)
                for agreement in side.values() for stat, _ in CEILING_SCORE_STATISTICS)
    notes = "".join(f"; {note}" for note in ceiling.notes if shown or not note.startswith(RESAMPLING_NOTE))
    if ceiling.n_items < 2:
        return "human ceiling: fewer than 2 items scored by two or more people and judged" + notes

    def figures(agreement: ScoreAgreement) -> str:
        estimates = [(name, agreement.estimate(stat)) for stat, name in CEILING_SCORE_STATISTICS]
        rough = [f"{name} {coverage_words(e.approximate)}"
                 for name, e in estimates if e.approximate is not None and e.ci is not None]
        return (", ".join(f"{name} {with_ci(*split_estimate(e), e.approximate)}" for name, e in estimates)
                + (f" ({APPROXIMATE_MARK} approximate intervals: {', '.join(rough)})" if rough else ""))

    parts = [f"{dimension}: people {figures(ceiling.humans[dimension])}; the judge {figures(ceiling.judge[dimension])}"
             for dimension in ceiling.humans]
    return (f"human ceiling on {counted(ceiling.n_items, 'item')} scored by {ceiling.annotators} people: "
            + "; ".join(parts) + notes)


def general_notes(c: AgreementCell) -> list[str]:
    """The caveats that recur from cell to cell (the terminal says each once, with the cells it
    applies to): intervals not given and why, approximate intervals, the alternative annotator
    test not run, ECE without an interval."""
    notes = []
    undefined: dict[str, list[str]] = defaultdict(list)
    for line in c.lines:
        if line.stats and line.stats.n and line.stats.agreement.ci_reason:  # too few items: no interval at all
            undefined[str(line.stats.agreement.ci_reason)].append(line.versus)
        elif line.stats and line.stats.kappa.value is not None and line.stats.kappa.ci is None:
            undefined[f"no κ interval: {line.stats.kappa.ci_reason or 'cannot be computed'}"].append(line.versus)
        if line.stats and line.stats.n and line.stats.ac1.approximate is not None:
            undefined[f"AC1's interval {marked(line.stats.ac1)} (few items, nearly all of one label)"].append(
                line.versus)
        notes += score_notes(line)
    notes += [f"vs {', '.join(who)}: {why}" for why, who in undefined.items()]
    alt = c.alt_test
    if alt is not None and not alt.ran and c.lines and not (c.kind and c.kind.scored):
        notes.append(f"alternative annotator test not run: {alt.reason}")
    r = c.reliability
    if r is not None and r.calibration is not None and r.calibration.n:
        notes.append(f"ECE has no interval: {r.calibration.ece.ci_reason}")
    return notes


def score_notes(line) -> list[str]:
    """Per score of a rubric line: the statistics without a value or an interval, and the
    approximate intervals, each reason once with the statistics it applies to."""
    notes = []
    for dimension, scores in line.scores.items():
        reasons: dict[str, list[str]] = defaultdict(list)
        for name in STATISTICS:
            e = scores.estimate(name)
            if e.value is None:
                why = undefined_words(e)
            elif e.ci is None:
                why = f"no interval: {e.ci_reason}"
            elif e.approximate is not None:
                why = f"interval {marked(e)} ({scores.shape} scores)"
            else:
                continue
            reasons[why].append(STATISTIC_NAMES[name])
        notes += [f"vs {line.versus}, {dimension}: {', '.join(names)}: {why}" for why, names in reasons.items()]
    return notes


SHOWN_IDS = 20


def _with_reason(estimate: Estimate) -> str:
    """`with_ci`, and why there is no interval where a value stands alone."""
    missing = estimate.value is not None and estimate.ci is None and estimate.ci_reason
    return with_ci(*split_estimate(estimate)) + (f" ({estimate.ci_reason})" if missing else "")


def reliability_notes(r: JudgeReliability) -> list[str]:
    """The judge's consistency, calibration and bias probes in words (measured against the gold
    label: the adjudicator's, else the majority, else the only annotator's)."""
    notes = []
    if r.consistency is not None:
        alpha = r.consistency.alpha
        ids = ", ".join(map(str, r.unstable_items[:SHOWN_IDS])) + (" …" if len(r.unstable_items) > SHOWN_IDS else "")
        at = f" at {r.temperatures}" if r.temperatures else ""
        by_construction = (" (at temperature 0 repeats agree by construction unless the server samples anyway: "
                           "this says little about consistency)" if r.temperatures == "temperature 0" else "")
        notes.append(
            f"consistency over {r.repeats_words} repeats{at} on {counted(r.consistency.items, 'item')}{by_construction}: "
            "flip rate "
            f"{_with_reason(r.consistency.flip_rate)}; α across repeats "
            + (with_ci(*split_estimate(alpha)) if alpha.value is not None else f"— ({alpha.reason})")
            + (f"; {counted(len(r.unstable_items), 'unstable item')}: {ids}" if r.unstable_items else "; no unstable item"))
    if r.calibration is not None and r.calibration.n:
        cal = r.calibration
        notes.append(f"calibration against people on {counted(cal.n, 'item')}: ECE {cal.ece.value:.3f} (no interval), Brier "
                     f"{_with_reason(cal.brier)}")
    if r.length is not None:
        b = r.length.estimate
        notes.append(f"length bias on {counted(r.length.n, 'item')}: " + (
            f"{b.value:+.2f} log-odds of a judge yes per sd of response length"
            + (f" [{b.ci[0]:+.2f}, {b.ci[1]:+.2f}]" if b.ci else "") + f": {r.length.verdict}"
            if b.value is not None else r.length.verdict))
    for name, probe in r.systems.items():
        family = " (judge and system of one model family)" if r.same_family.get(name) else ""
        notes.append(f"system {name}{family} on {counted(probe.n, 'item')}: judge minus people's yes rate "
                     f"{with_ci(*split_estimate(probe.estimate))}: {probe.verdict}")
    return notes


def cells_without_numbers(report: Report) -> list[str]:
    """Why some cells show no line, in words: nobody labelled their items yet, every labelled
    item's verdict is unparsed (and `--unparsed exclude` leaves them out), or, for the jury,
    every labelled item is a tie or unparsed (a tie is left out whatever `--unparsed` says)."""
    unlabelled = [c for c in report.cells if not c.lines]
    without = [c for c in report.cells if c.lines and not any(line.n for line in c.lines)]
    unparsed = [c for c in without if not any(line.jury_ties for line in c.lines)]
    tied = [c for c in without if c not in unparsed]
    out = []
    if unlabelled:
        out.append(f"judged but no human labels yet ({len(unlabelled)}): "
                   + ", ".join(f"{c.task} {c.lang} ({c.judge})" for c in unlabelled))
    if unparsed:
        out.append(f"labelled, but every labelled item's verdict is unparsed ({len(unparsed)}; see --unparsed): "
                   + ", ".join(f"{c.task} {c.lang} ({c.judge}: {counted(max(line.unparsed for line in c.lines), 'item')})"
                               for c in unparsed))
    if tied:
        out.append(f"labelled, but the jury's judges tie or give no parsed verdict on every labelled item "
                   f"({len(tied)}): " + ", ".join(
                       f"{c.task} {c.lang} ({c.judge}: {max(line.jury_ties for line in c.lines)} tied, "
                       f"{max(line.unparsed for line in c.lines)} unparsed)" for c in tied))
    return out


def render_table(report: Report, console, *, wide: bool = False) -> None:
    """The terminal report: per cell a heading, a compact table fitted to the console's width
    (calibrate.fit; the κ bar from 100 columns), notes in words; `wide` adds a table of the
    judge's error rates."""
    from rich.padding import Padding
    from rich.text import Text

    console.print(Text(f"judge vs human, by {' × '.join(report.options.by)}; unparsed verdicts: {report.options.unparsed}",
                       style="bold"), soft_wrap=False)
    width = console.width
    with_bar = width >= 100
    shown = [c for c in report.cells if any(line.n for line in c.lines)]
    general = {_cell_name(c): general_notes(c) for c in shown}
    repeated = _repeated(general)
    for c in shown:
        console.print()
        console.print(Text(safe(_cell_name(c)), style="bold cyan"))
        if c.kind is not None and c.kind.scored:
            console.print(_scores_table(c, width, wide))
        else:
            console.print(_kappa_table(c, width, with_bar))
            if wide:
                console.print(_details_table(c, width))
                reliability = _reliability_table(c, width)
                if reliability is not None:
                    console.print(reliability)
        for note in own_notes(c, report) + [note for note in general[_cell_name(c)] if note not in repeated]:
            console.print(Padding(Text(safe(note), style="dim"), (0, 0, 0, 2)), soft_wrap=False)
    if repeated:
        console.print()
        console.print(Text("Notes on several cells", style="bold"))
        places = [(where, note) for where, cell in general.items() for note in cell if note in repeated]
        for line in said_once(places):
            console.print(Padding(Text(safe(line), style="dim"), (0, 0, 0, 2)), soft_wrap=False)
    for why in cells_without_numbers(report):
        console.print()
        console.print(Text(safe(why), style="dim"), soft_wrap=False)
    note = multiplicity_note(report)
    if note:
        console.print(Text(note, style="dim italic"), soft_wrap=False)


def _cell_name(c: AgreementCell) -> str:
    return f"{c.task} · {c.lang} · {c.judge}"


def _repeated(notes: dict[str, list[str]]) -> set[str]:
    """The notes that several cells share, said once below them all (calibrate.fit.said_once)."""
    counts: dict[str, int] = defaultdict(int)
    for cell in notes.values():
        for note in set(cell):
            counts[note] += 1
    return {note for note, n in counts.items() if n > 1}


def _kappa_table(c: AgreementCell, width: int, with_bar: bool):
    headers = ["vs", "n", "agree", "κ [95% CI]"] + (["−1 ┊ 1"] if with_bar else []) + ["verdict"]
    body = []
    for line in c.lines:
        if not line.n:
            continue
        row = report_row(c, line)
        cells = [row.versus, str(row.n), fmt(row.agreement), with_ci(row.kappa, row.kappa_low, row.kappa_high)]
        if with_bar:
            ci = (row.kappa_low, row.kappa_high) if row.kappa_low is not None else None
            cells.append(kappa_bar(row.kappa, ci, 21 if width >= 120 else 15))
        body.append([safe(v) for v in (*cells, row.verdict)])
    return fit_table(headers, body, width, Columns(names=("vs",), texts=("verdict",), right=("n", "agree")))


SCORE_COLUMNS = ("spearman", "mae")
"""The score statistics of the terminal table; `--wide` adds the others below it."""


def _scores_table(c: AgreementCell, width: int, wide: bool):
    """A rubric cell: per person and score, Spearman's rho and the MAE with their intervals;
    `wide` adds a table of Pearson, Kendall and the kappas, a statistic a row (80 columns)."""
    from rich.console import Group
    from rich.text import Text

    rows = [row for line in c.lines if line.n for row in line_rows(c, line)]
    headers = ["vs", "n", "scores"] + [f"{STATISTIC_NAMES[name]} [95% CI]" for name in SCORE_COLUMNS]
    body = [[safe(v) for v in (row.versus, str(row.n), row.scores or "", *(score_text(row, n) for n in SCORE_COLUMNS))]
            for row in rows]
    table = fit_table(headers, body, width, Columns(names=("vs", "scores"), right=("n",)))
    if not wide:
        return table
    more = [[safe(v) for v in (row.versus, row.scores or "", STATISTIC_NAMES[name], score_text(row, name))]
            for row in rows for name in STATISTICS if name not in SCORE_COLUMNS]
    return Group(table, Text(), fit_table(["vs", "scores", "statistic", "estimate [95% CI]"], more, width,
                                          Columns(names=("vs", "scores"))))


LENIENCY_WORDS = {"judge more lenient": "lenient", "judge harsher": "harsher", "no evidence of a difference": "no evidence"}


def _details_table(c: AgreementCell, width: int):

    body = []
    for line in c.lines:
        r = report_row(c, line)
        if not line.n or line.stats is None:
            continue
        prevalence = f"{r.prevalence_label} {r.prevalence:.0%}" if r.prevalence is not None else "—"
        leniency = "—" if r.leniency is None else LENIENCY_WORDS.get(r.leniency, r.leniency) + (
            "" if r.homogeneity_p is None else f" (p {r.homogeneity_p:.2f})")
        body.append([safe(v) for v in (
            r.versus, with_ci(r.ac1, r.ac1_low, r.ac1_high, r.ac1_approximate),
            with_ci(r.sensitivity, r.sensitivity_low, r.sensitivity_high),
            with_ci(r.specificity, r.specificity_low, r.specificity_high), prevalence,
            f"{fmt(r.bias_index)}/{fmt(r.prevalence_index)}", leniency)])
    return fit_table(["vs", "AC1 [95% CI]", "sensitivity", "specificity", "prevalence", "BI/PI", "judge vs people"], body,
                     width, Columns(names=("vs",), texts=("judge vs people",)))


def _reliability_table(c: AgreementCell, width: int):
    """--wide: the judge's consistency over repeats, calibration and length probe, one measure
    a row (narrow enough for 80 columns)."""
    r = c.reliability
    if r is None or not c.lines or (r.consistency is None and r.calibration is None and r.length is None):
        return None
    row = report_row(c, c.lines[0])
    body = [["repeats", r.repeats_words]]
    if r.consistency is not None:
        body += [["flip rate", with_ci(row.flip_rate, row.flip_rate_low, row.flip_rate_high)],
                 ["α across repeats", with_ci(row.repeat_alpha, row.repeat_alpha_low, row.repeat_alpha_high)]]
    if r.calibration is not None and r.calibration.n:
        body += [["ECE", f"{fmt(row.ece, 3)} (no CI)"], ["Brier", with_ci(row.brier, row.brier_low, row.brier_high)]]
    if r.length is not None:
        body.append(["length bias (log-odds/sd)", with_ci(row.length_bias, row.length_bias_low, row.length_bias_high)
                     if row.length_bias is not None else "cannot tell"])
    return fit_table(["judge reliability", "estimate [95% CI]"], body, width)


MARKDOWN_COLUMNS = [("system", "system"), ("task", "task"), ("lang", "lang"), ("judge", "judge"), ("vs", "versus"), ("n", "n"),
                    ("agree", "agreement"), ("κ [95% CI]", "kappa"), ("AC1 [95% CI]", "ac1"),
                    ("sensitivity", "sensitivity"), ("specificity", "specificity"), ("unparsed", "unparsed"),
                    ("verdict", "verdict")]
MARKDOWN_SCORE_COLUMNS = [("system", "system"), ("task", "task"), ("lang", "lang"), ("judge", "judge"),
                          ("vs", "versus"), ("n", "n"), ("scores", "scores"),
                          *((f"{STATISTIC_NAMES[name]} [95% CI]", name) for name in STATISTICS)]


def _markdown_table(columns: list[tuple[str, str]], rows: list[ReportRow]) -> str:
    out = ["| " + " | ".join(name for name, _ in columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        values = []
        for _name, attr in columns:
            if attr in STATISTICS:
                values.append(score_text(row, attr))
            elif attr in ("kappa", "ac1"):
                values.append(with_ci(getattr(row, attr), getattr(row, f"{attr}_low"), getattr(row, f"{attr}_high"),
                                      row.ac1_approximate if attr == "ac1" else None))
            else:
                value = getattr(row, attr)
                values.append(fmt(value) if isinstance(value, float) else value)
        out.append("| " + " | ".join(markdown_safe(v) for v in values) + " |")
    return "\n".join(out) + "\n"


def render_markdown(report: Report) -> str:
    out = io.StringIO()
    out.write("# calibrate agreement report\n\n")
    out.write(f"Unparsed verdicts: {report.options.unparsed}. Intervals are 95 %; {APPROXIMATE_MARK} marks an "
              "approximate one (see the notes).\n\n")
    rows = [row for _c, _line, row in rows_of(report)]
    categorical, scored = [r for r in rows if r.scores is None], [r for r in rows if r.scores is not None]
    if categorical:
        out.write(_markdown_table(MARKDOWN_COLUMNS, categorical))
    if scored:
        out.write(("\n" if categorical else "") + _markdown_table(MARKDOWN_SCORE_COLUMNS, scored))
    for c in report.cells:
        notes = cell_notes(c, report)
        if notes:
            out.write(f"\n**{markdown_safe(c.task)} {markdown_safe(c.lang)}, {markdown_safe(c.judge)}**\n\n")
            out.write("".join(f"- {markdown_safe(note)}\n" for note in notes))
        for line in c.lines:
            if line.stats and line.stats.n:
                out.write(f"\nConfusion matrix, {markdown_safe(c.task)} {markdown_safe(c.lang)}, {markdown_safe(c.judge)} (rows) vs {markdown_safe(line.versus)} (columns):\n\n")
                labels = line.stats.labels
                out.write("| | " + " | ".join(markdown_safe(label) for label in labels) + " |\n|---|" + "---|" * len(labels) + "\n")
                for label, counts in zip(labels, line.stats.table, strict=True):
                    out.write(f"| **{markdown_safe(label)}** | " + " | ".join(map(str, counts)) + " |\n")
    note = multiplicity_note(report)
    if note:
        out.write(f"\n_{markdown_safe(note)}_\n")
    return out.getvalue()


CSV_FIELDS = [f.name for f in fields(ReportRow)]




def render_csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_FIELDS)
    for _c, _line, row in rows_of(report):
        writer.writerow([spreadsheet_safe(v) for v in asdict(row).values()])
    return out.getvalue()


def render_json(report: Report) -> str:
    return safe_json(report.as_dict())

