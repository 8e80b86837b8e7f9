"""The statistics files C3's process_results.py writes, for result files `export c3` wrote, with
calibrate's corrected accuracy beside each category: C3's figures counted as that script counts
them (`c3_statistics`), and the corrected ones cut from `calibrate scores` (`c3_corrected`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from calibrate.formats.c3 import C3_LANGUAGE_NAMES, C3_LAYOUT, c3_right


def c3_statistics(
    results: dict[str, dict[str, list[dict]]], lang: str, corrected: Callable[[], dict[str, dict]]
) -> Iterator[tuple[str, list[dict]]]:
    """C3's statistics files for result files `results` (judge -> relative path -> records),
    keyed as its process_results.py writes them, per judge key (C3 calls its judges dpsk and
    gpt), as (file name, rows), in this order: `combined_<language>_statistic.json`, a list of
    {"data_id": "/<path>/<index>", <judge>: "right" | "wrong"}, and
    `<language>_result_data.json`, a list of {"category", <judge>_correct, "total",
    <judge>_accuracy} (accuracies rounded to 4 places), "overall" first. Beside C3's keys each
    category gets calibrate's corrected accuracy from `corrected()` (category ->
    {"corrected_accuracy", "corrected_ci", "corrected_note", ...}), called once the first file
    is handed over (`export c3` writes that file while the corrected scores are worked out)."""
    judges = list(results)
    combined: dict[str, dict] = {}
    for judge, files in results.items():
        for rel, records in files.items():
            for index, record in enumerate(records):
                data_id = f"/{rel.removesuffix('.json')}/{index}"
                combined.setdefault(data_id, {"data_id": data_id})[judge] = (
                    "right" if c3_right(record.get("check_answer"), lang) else "wrong")
    # as process_results.py counts: per category every data id either judge's files hold, a judge
    # without a record there counted wrong; overall, every data id
    categories: dict[str, dict[str, int]] = {}
    overall = {"total": 0}
    for data_id, entry in combined.items():
        counts = categories.setdefault(data_id.rpartition("/")[0], {"total": 0})
        for tally in (overall, counts):
            tally["total"] += 1
            for judge in judges:
                tally[judge] = tally.get(judge, 0) + (entry.get(judge) == "right")

    def row(name: str, counts: dict[str, int]) -> dict:
        total = counts["total"]
        found: dict = {"category": name}
        found.update({f"{j}_correct": counts.get(j, 0) for j in judges})
        found["total"] = total
        found.update({f"{j}_accuracy": round(counts.get(j, 0) / total, 4) if total else 0.0 for j in judges})
        found.update(by_category.get(name, {}))
        return found

    name = C3_LANGUAGE_NAMES[lang]
    yield f"combined_{name}_statistic.json", list(combined.values())
    by_category = corrected()
    yield f"{name}_result_data.json", [row("overall", overall)] + [row(c, n) for c, n in categories.items()]


def c3_corrected(per_task, overall, lang: str, judges: list[str]) -> dict[str, dict]:
    """Per C3 category ("/<result path>" or "overall"): calibrate's corrected accuracy of the
    exported `judges` (stratified by the judge's verdict, or by the judges' mean verdict when
    several, as C3's final score; see `calibrate scores`), for `c3_statistics`: the value, its
    95 % interval, `corrected_approximate` (the interval's simulated coverage near this setting
    where it is below 93 %, else null), the reason where there is no value, and
    `corrected_people_decided`: the generation items it counts by their label, the unlabelled ones
    estimated from those labels (in `overall`; else null). `per_task` and
    `overall` are one system's `calibrate scores` cells (ScoreCell), cut by task and language and
    by language alone."""
    categories = {part.task: "/" + part.responses for part in C3_LAYOUT[lang]}
    named = [(categories[c.task], c) for c in per_task if c.lang == lang and c.task in categories]
    named += [("overall", c) for c in overall if c.lang == lang]
    out: dict[str, dict] = {}
    for name, cell in named:
        chosen = [j for j in cell.judges if j.judge in judges]
        if len(judges) > 1 and cell.final is not None:
            estimate, decided = cell.final.corrected, cell.final.decided
        elif len(chosen) == 1:
            estimate, decided = chosen[0].corrected, chosen[0].decided
        else:
            continue
        out[name] = {
            "corrected_accuracy": round(estimate.value, 4) if estimate.value is not None else None,
            "corrected_ci": [round(v, 4) for v in estimate.ci] if estimate.ci else None,
            "corrected_method": "stratified by the judges' mean verdict" if len(judges) > 1 else
                                "stratified by the judge's verdict",
            "corrected_approximate": estimate.approximate,
            "corrected_note": estimate.reason,
            # the generation items counted in it by their label (the unlabelled ones estimated from those labels)
            "corrected_people_decided": decided.as_dict() if decided else None,
            "people_accuracy": round(cell.people.value, 4) if cell.people.value is not None else None,
            "labelled": cell.labelled,
        }
    return out
