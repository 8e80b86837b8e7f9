"""Terminal output that fits the width it is given (the terminal's, or $COLUMNS when piped).

One table layout for every listing and report: columns as wide as their widest cell, as long as
the table fits. When it does not, names (judges, tasks, annotators) lose their middle to "…"
while distinct names stay distinct (`demo-judge` and `demo-judge-2` never look alike), free
text wraps, previews are cut at the end; then the leading key columns become a heading above
each group of rows; and a table that still cannot fit is written as one block of
"column  value" lines per row. No column is ever dropped or squeezed out of sight. Display
widths are terminal cells (a CJK character counts 2; an emoji sequence joined by U+200D is one
character, never cut). Notes that repeat are said once with a count (`said_once`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich import box
from rich.cells import cell_len, split_graphemes
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

GAP = 3  # cells between two columns of the borderless table: padding, rule, padding
NAME_FLOOR = 10  # a name is never shortened below this many cells
TEXT_FLOOR = 14  # free text never wraps narrower than this
ELLIPSIS = "…"


def head(text: str, width: int) -> str:
    """The first cells of `text` that fit `width`, in whole characters as a terminal draws them
    (`_characters`; cut inside, a joiner left at the end would join the "…" after it, half a
    flag would pair with the next)."""
    used = 0
    for start, _, cells in _characters(text):
        used += cells
        if used > width:
            return text[:start]
    return text


def tail(text: str, width: int) -> str:
    """The last cells of `text` that fit `width`, in whole characters (as `head`)."""
    used = 0
    for _, end, cells in reversed(_characters(text)):
        used += cells
        if used > width:
            return text[end:]
    return text


def _characters(text: str) -> list[tuple[int, int, int]]:
    """(start, end, cells) of each character of `text` as a terminal draws it: rich's graphemes
    (an emoji sequence joined by U+200D, a letter with its accents: one), and a flag, two regional
    indicator letters paired from the start of their run, one too."""
    found: list[tuple[int, int, int]] = []
    paired = False  # whether the last one is a regional indicator waiting for its pair
    for start, end, cells in split_graphemes(text)[0]:
        if paired and end - start == 1 and _REGIONAL <= ord(text[start]) < _REGIONAL + 26:
            first = found.pop()
            found.append((first[0], end, first[2] + cells))
            paired = False
            continue
        found.append((start, end, cells))
        paired = end - start == 1 and _REGIONAL <= ord(text[start]) < _REGIONAL + 26
    return found


_REGIONAL = 0x1F1E6  # REGIONAL INDICATOR SYMBOL LETTER A; a flag is two of them


def middle_cut(text: str, width: int) -> str:
    """`text` in at most `width` cells: its start and its end around "…" (names differ at
    their ends as often as at their starts: demo-judge-2, c3/coreference-resolution)."""
    if cell_len(text) <= width:
        return text
    room = max(width - 1, 2)
    return head(text, room - room // 2) + ELLIPSIS + tail(text, room // 2)


def end_cut(text: str, width: int) -> str:
    """`text` in at most `width` cells, cut at the end with "…"."""
    return text if cell_len(text) <= width else head(text, max(width - 1, 1)) + ELLIPSIS


def broken_name(name: str, width: int, indent: int = 0) -> str:
    """`name` (a template id, a judge) with line breaks after its '/', '-', '_' and spaces where a line
    would be wider than `width` cells, the first line starting `indent` cells in (a break before
    the name when not even its first part fits there); a part wider than `width` loses its
    middle (middle_cut). A name is never broken within a word, as a wrap at spaces only would
    break a long name that has none; a space at a break is left out."""
    lines, used = [""], indent
    for part in re.findall(r"[^/_ -]*[/_ -]|[^/_ -]+$", name):
        part = middle_cut(part, max(width, 2))
        if used + cell_len(part) > width and (lines[-1] or used):
            lines.append("")
            used = 0
        lines[-1] += part
        used += cell_len(part)
    return "\n".join(line.rstrip(" ") for line in lines)


def shorten_distinct(values: Sequence[str], width: int) -> dict[str, str] | None:
    """Each value in at most `width` cells (middle_cut), or None when two distinct values would
    then read the same."""
    short = {value: middle_cut(value, width) for value in set(values)}
    return short if len(set(short.values())) == len(short) else None


@dataclass
class Columns:
    """How each column of a table may give way: `names` are shortened in the middle (distinct
    values stay distinct), `texts` wrap at spaces, `previews` are cut at the end to the width
    given; `right` columns are aligned right; the first `keys` columns may become headings."""

    names: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    previews: dict[str, int] = field(default_factory=dict)
    right: tuple[str, ...] = ()
    keys: int = 0


def fit_table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int, how: Columns | None = None,
              title: str | None = None) -> RenderableType:
    """The rows as one renderable no wider than `width` (see the module docstring). Cells are
    plain text, already terminal-safe."""
    how = how or Columns()
    headers = list(headers)
    whole_rows = [[str(cell) for cell in row] for row in rows]
    rows = [[end_cut(cell, how.previews[h]) if h in how.previews else cell for h, cell in zip(headers, row, strict=True)]
            for row in whole_rows]
    parts: list[RenderableType] = [Text(title, style="bold")] if title else []
    whole = _fit(headers, rows, width, how, shorten=False)
    if whole is not None:
        return Group(*parts, _table(headers, *whole, how))
    grouped = _grouped(headers, rows, width, how) if how.keys else None
    if grouped is not None:
        return Group(*parts, *grouped)
    shortened = _fit(headers, rows, width, how)
    if shortened is not None:
        return Group(*parts, _table(headers, *shortened, how))
    return Group(*parts, *_blocks(headers, whole_rows))


def _fit(headers: list[str], rows: list[list[str]], width: int, how: Columns,
         shorten: bool = True) -> tuple[list[int], list[list[str]]] | None:
    """(column widths, rows with previews cut and names shortened, unless not to `shorten`)
    that fit `width` (free text wrapping), or None."""
    natural = [max([cell_len(h), *(cell_len(row[k]) for row in rows)]) for k, h in enumerate(headers)]
    widths = list(natural)
    shorts: dict[int, dict[str, str]] = {}
    floors = {k: max(cell_len(h), NAME_FLOOR if h in how.names else TEXT_FLOOR)
              for k, h in enumerate(headers) if h in how.names or h in how.texts or h in how.previews}

    def total() -> int:
        return sum(widths) + GAP * (len(widths) - 1)

    while total() > width:
        shrinkable = [k for k, floor in floors.items()
                      if widths[k] > floor and (shorten or headers[k] not in how.names)]
        if not shrinkable:
            return None
        k = max(shrinkable, key=lambda j: widths[j])
        if headers[k] in how.texts:
            widths[k] = max(floors[k], widths[k] - (total() - width))
            continue
        if headers[k] in how.previews:
            widths[k] = max(floors[k], widths[k] - (total() - width))
            shorts[k] = {row[k]: end_cut(row[k], widths[k]) for row in rows}
            continue
        short = shorten_distinct([row[k] for row in rows], widths[k] - 1)
        if short is None:
            floors[k] = widths[k]  # shorter, two names would read the same
            continue
        widths[k] -= 1
        shorts[k] = short
    return widths, [[shorts[k][cell] if k in shorts else cell for k, cell in enumerate(row)] for row in rows]


def _table(headers: list[str], widths: list[int], rows: list[list[str]], how: Columns, show_header: bool = True) -> Table:
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, show_header=show_header)
    for header, column_width in zip(headers, widths, strict=True):
        table.add_column(header, width=column_width, no_wrap=header not in how.texts, overflow="fold",
                         justify="right" if header in how.right else "left")
    for row in rows:
        table.add_row(*map(Text, row))
    return table


def _grouped(headers: list[str], rows: list[list[str]], width: int, how: Columns) -> list[RenderableType] | None:
    """The key columns as a heading above each run of rows that share them; the other columns
    aligned across runs, their header written once at the top."""
    rest = headers[how.keys :]
    fitted = _fit(rest, [row[how.keys :] for row in rows], width, how)
    if fitted is None:
        return None
    widths, body = fitted
    out: list[RenderableType] = [_table(rest, widths, [], how)]
    start = 0
    for k, row in enumerate(rows):
        if k + 1 == len(rows) or rows[k + 1][: how.keys] != row[: how.keys]:
            heading = " · ".join(cell for cell in row[: how.keys] if cell)
            out.append(Text(middle_cut(heading, width), style="bold"))
            out.append(_table(rest, widths, body[start : k + 1], how, show_header=False))
            start = k + 1
    return out


def _blocks(headers: list[str], rows: list[list[str]]) -> list[RenderableType]:
    """One block per row: each column's name, then its value (folded within the width, under
    itself)."""
    out: list[RenderableType] = []
    for row in rows:
        block = Table.grid(padding=(0, 2))
        block.add_column(justify="right", style="dim", no_wrap=True)
        block.add_column(overflow="fold")
        for header, cell in zip(headers, row, strict=True):
            block.add_row(header, Text(cell))
        out += [Text(), block]
    return out


def said_once(notes: Sequence[tuple[str, str]], shown: int = 3) -> list[str]:
    """(where, note) pairs as lines, a note that repeats said once with its count and the first
    places it applies to: "note (12: a, b, c and 9 more)"."""
    places: dict[str, list[str]] = {}
    for where, note in notes:
        places.setdefault(note, []).append(where)
    out = []
    for note, where in places.items():
        if len(where) == 1:
            out.append(f"{where[0]}: {note}")
        else:
            more = f" and {len(where) - shown} more" if len(where) > shown else ""
            out.append(f"{note} ({len(where)}: {', '.join(where[:shown])}{more})")
    return out


def hanging(text: str | Text, width: int, first: int = 0, rest: int = 2, style: str = "") -> Text:
    """A paragraph folded at spaces within `width` cells: its first line indented by `first`,
    the lines after it by `rest` (so a wrapped item reads as one)."""
    from rich.console import Console

    paragraph = Text(text, style=style) if isinstance(text, str) else text
    lines = paragraph.wrap(Console(width=width), max(width - max(first, rest), 8))
    out = Text(style=style)
    for k, line in enumerate(lines):
        out.append(" " * (first if k == 0 else rest))
        out.append_text(line)
        if k + 1 < len(lines):
            out.append("\n")
    return out
