"""From structure tokens to the table's grid and HTML: where each cell sits (row, column, spans) and the HTML with
cell texts filled in."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Sequence
from dataclasses import dataclass

_SPAN = re.compile(r'\s*(colspan|rowspan)="?(\d+)"?')


@dataclass(frozen=True)
class GridCell:
    """A cell's place in the grid: its top-left row and column and how many it spans."""

    row: int
    col: int
    rowspan: int = 1
    colspan: int = 1


def cell_rows(tokens: Sequence[str]) -> list[list[tuple[int, int]]]:
    """``(rowspan, colspan)`` of every cell, row by row, in token order (a cell outside a ``<tr>`` opens one)."""
    rows: list[list[tuple[int, int]]] = []
    open_row = False
    spans: dict[str, int] | None = None
    for token in tokens:
        if token == "<tr>":
            rows.append([])
            open_row = True
        elif token == "</tr>":
            open_row = False
        elif token in ("<td></td>", "<td"):
            if not open_row:
                rows.append([])
                open_row = True
            if token == "<td></td>":
                rows[-1].append((1, 1))
            else:
                spans = {"rowspan": 1, "colspan": 1}
        elif spans is not None and _SPAN.fullmatch(token):
            key, value = _SPAN.fullmatch(token).groups()
            spans[key] = max(1, int(value))
        elif token == ">" and spans is not None:
            rows[-1].append((spans["rowspan"], spans["colspan"]))
            spans = None
    return rows


def place_cells(rows: Sequence[Sequence[tuple[int, int]]]) -> list[GridCell]:
    """Grid positions of cells given row by row as ``(rowspan, colspan)``, as HTML lays them out: each cell takes
    the first column of its row that no cell above spans into."""
    taken: set[tuple[int, int]] = set()
    out: list[GridCell] = []
    for r, row in enumerate(rows):
        c = 0
        for rowspan, colspan in row:
            while (r, c) in taken:
                c += 1
            out.append(GridCell(r, c, rowspan, colspan))
            taken.update((r + i, c + j) for i in range(rowspan) for j in range(colspan))
            c += colspan
    return out


def grid_cells(tokens: Sequence[str]) -> list[GridCell]:
    """The grid position of every cell of a token sequence, in token order."""
    return place_cells(cell_rows(tokens))


def tokens_to_html(tokens: Sequence[str], texts: Sequence[str] | None = None) -> str:
    """``<table>...</table>`` from structure tokens, the ``i``-th cell holding ``texts[i]`` (HTML-escaped)."""
    out = ["<table>"]
    i = 0
    texts = list(texts or [])

    def text() -> str:
        return html_lib.escape(texts[i]) if i < len(texts) else ""

    for token in tokens:
        if token == "<td></td>":
            out.append(f"<td>{text()}</td>")
            i += 1
        elif token == "</td>":
            out.append(f"{text()}</td>")
            i += 1
        else:
            out.append(token)
    out.append("</table>")
    return "".join(out)


def is_plain_grid(cells: Sequence[GridCell]) -> bool:
    """True when no cell spans and every row has the same number of cells."""
    if not cells or any(c.rowspan > 1 or c.colspan > 1 for c in cells):
        return False
    per_row: dict[int, int] = {}
    for c in cells:
        per_row[c.row] = per_row.get(c.row, 0) + 1
    return len(set(per_row.values())) == 1


def row_segments(tokens: Sequence[str]) -> list[tuple[int, int]]:
    """``(start, end)`` token ranges of each ``<tr> ... </tr>``, in order."""
    out, start = [], None
    for i, token in enumerate(tokens):
        if token == "<tr>":
            start = i
        elif token == "</tr>" and start is not None:
            out.append((start, i + 1))
            start = None
    return out


def drop_edge_rows(tokens: Sequence[str], texts: Sequence[str]) -> tuple[list[str], list[int]]:
    """Tokens without the empty rows at the top and bottom of the table: rows whose cells all have
    no text and that no cell spans into or out of (SLANet reads the white band above a borderless table's top rule
    as a row of its own), and the indices of the cells kept."""
    tokens, texts = list(tokens), list(texts)
    cells = grid_cells(tokens)
    segments = row_segments(tokens)
    everything = list(range(len(cells)))
    if len(segments) != len({c.row for c in cells}) or len(segments) < 2:
        return tokens, everything
    rows = [[i for i, c in enumerate(cells) if c.row == r] for r in range(len(segments))]

    def empty(r: int) -> bool:
        spanned = any(c.row < r < c.row + c.rowspan for c in cells)
        return bool(rows[r]) and not spanned and all(not texts[i].strip() and cells[i].rowspan == 1 for i in rows[r])

    drop: set[int] = set()
    r = 0
    while r < len(rows) - 1 and empty(r):
        drop.add(r)
        r += 1
    r = len(rows) - 1
    while r > 0 and r not in drop and empty(r):
        drop.add(r)
        r -= 1
    if not drop or len(drop) == len(rows):
        return tokens, everything
    removed = {i for r in drop for i in range(*segments[r])}
    kept_cells = [i for r in range(len(rows)) if r not in drop for i in rows[r]]
    return [t for i, t in enumerate(tokens) if i not in removed], sorted(kept_cells)
