"""Terminal output fitted to a width: names shortened but distinct, CJK counted as two cells,
headings per group, blocks when nothing else fits, notes said once."""

from __future__ import annotations

import io

from rich.cells import cell_len
from rich.console import Console

from calibrate.fit import (
    Columns,
    broken_name,
    fit_table,
    hanging,
    head,
    middle_cut,
    said_once,
    shorten_distinct,
    tail,
)

HEADERS = ["task", "lang", "judge", "n", "threshold", "accepts", "bound", "agree"]
ROWS = [["c3/coreference-detection", "en", "demo-judge", "12", "0.850", "80% (10)", "0.912", "0.950"],
        ["c3/coreference-detection", "en", "demo-judge-2", "12", "—", "—", "—", "—"],
        ["c3/pause", "zh", "demo-judge", "3", "—", "—", "—", "—"]]
TRUST = Columns(names=("task", "judge"), right=("n", "threshold", "accepts", "bound", "agree"), keys=2)


def drawn(renderable, width: int) -> list[str]:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(renderable)
    return console.file.getvalue().splitlines()


def test_a_table_that_fits_is_drawn_whole():
    lines = drawn(fit_table(HEADERS, ROWS, 120, TRUST), 120)
    assert lines[0].split() == HEADERS and "c3/coreference-detection   en     demo-judge-2" in lines[3]


def test_too_narrow_keys_become_headings_and_no_column_is_lost():
    lines = drawn(fit_table(HEADERS, ROWS, 80, TRUST), 80)
    assert max(map(cell_len, lines)) <= 80
    assert lines[0].split() == HEADERS[2:] and lines[2] == "c3/coreference-detection · en"
    assert lines[4].split()[0] == "demo-judge-2" and lines[5] == "c3/pause · zh"


def test_shortened_names_stay_distinct():
    assert middle_cut("demo-judge-2", 8) == "demo…e-2" and middle_cut("short", 8) == "short"
    short = shorten_distinct(["demo-judge", "demo-judge-2"], 9)
    assert short is not None and len(set(short.values())) == 2
    assert shorten_distinct(["judge-a-long-name-1", "judge-b-long-name-1"], 3) is None, "would read the same"
    lines = drawn(fit_table(HEADERS, ROWS, 60, TRUST), 60)
    judges = [line.split()[0] for line in lines if line.startswith("demo")]
    assert max(map(cell_len, lines)) <= 60 and len(set(judges)) == 2 and "demo-judge" in judges


def test_cjk_counts_two_cells_and_nothing_fits_gives_a_block_per_row():
    rows = [["最终答案为是否的任务名称很长很长", "zh", "评审模型甲", "5"]]
    lines = drawn(fit_table(["task", "lang", "judge", "n"], rows, 30), 30)
    assert max(map(cell_len, lines)) <= 30 and len(lines) == 6, "a blank line, then one line per column (task folded)"
    assert [line.split()[0] for line in (lines[1], *lines[3:])] == ["task", "lang", "judge", "n"]
    assert "".join(line.split()[-1] for line in lines[1:3]) == rows[0][0], "folded, not cut"


def test_free_text_wraps_and_previews_are_cut():
    rows = [["1", "a long note that has to wrap over several lines", '{"content": "a long json preview"}']]
    lines = drawn(fit_table(["id", "note", "fields"], rows, 40, Columns(texts=("note",), previews={"fields": 20})), 40)
    assert max(map(cell_len, lines)) <= 40 and len(lines) > 3 and "…" in lines[2]


def test_notes_said_once_with_a_count_and_hanging_indent():
    notes = [(f"cell {k}", "no items have both a judge confidence and a human label") for k in range(70)]
    assert said_once([*notes, ("cell x", "other")]) == [
        "no items have both a judge confidence and a human label (70: cell 0, cell 1, cell 2 and 67 more)",
        "cell x: other"]
    text = hanging("word " * 30, 40, 2, 4).plain.splitlines()
    assert text[0].startswith("  word") and all(line.startswith("    word") for line in text[1:])
    assert max(map(cell_len, text)) <= 40


def test_a_cut_keeps_a_flag_whole():
    flags = "\U0001f1e9\U0001f1ea\U0001f1eb\U0001f1f7\U0001f1fa\U0001f1f8"  # DE FR US: two letters each
    for width in range(1, 10):  # a half flag left would pair with the next letter: another country's flag
        first, last = head("x" + flags, width)[1:], tail(flags + "x", width)[:-1]
        assert len(first) % 2 == 0 and flags.startswith(first), (width, first)
        assert len(last) % 2 == 0 and flags.endswith(last), (width, last)
        assert cell_len(first) <= width - 1 and cell_len(last) <= width - 1


def test_a_name_breaks_between_its_words_and_parts_never_inside_them():
    name = "judge from the evaluation team A of the speech lab"
    assert broken_name(name, 23).splitlines() == ["judge from the", "evaluation team A of", "the speech lab"]
    assert broken_name("c3-official/en/heterograph", 20).splitlines() == ["c3-official/en/", "heterograph"]
