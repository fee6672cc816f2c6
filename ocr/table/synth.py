"""Tables rendered with known content, for tests and benchmarks: the picture, its ground-truth HTML (PubTabNet's
form: ``<thead>`` for the header rows, ``<tbody>`` for the rest, ``colspan`` / ``rowspan`` attributes), every cell's
box and grid place, and every text line's box as a perfect OCR would return it.

Documents' style: black text on white, 1 px rules; ``ruled`` draws every cell border, otherwise only the booktabs
rules (above the table, under the header where no cell spans across it, below the table, and a shorter rule under
a header cell spanning columns). Header rows are bold.
"""

from __future__ import annotations

import html as html_lib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from ..render.fonts import font_for, load_font
from .matcher import TextLine
from .structure import place_cells


@dataclass(frozen=True)
class SynthCell:
    """A cell to render: its text (``\n`` breaks it into lines, joined by a space in the truth) and spans."""

    text: str
    rowspan: int = 1
    colspan: int = 1


@dataclass
class RenderedTable:
    """A rendered table and what is known about it.

    Attributes:
        image: RGB uint8 picture.
        html: the ground-truth ``<table>`` with cell texts.
        cells: per cell: ``box`` ``[x0, y0, x1, y1]``, ``row``, ``col``, ``rowspan``, ``colspan``, ``text``.
        lines: each text line with its tight box (what an exact OCR would give; a cell may hold several).
    """

    image: np.ndarray
    html: str
    cells: list[dict[str, Any]] = field(default_factory=list)
    lines: list[TextLine] = field(default_factory=list)

    @property
    def is_plain_grid(self) -> bool:
        return all(c["rowspan"] == 1 and c["colspan"] == 1 for c in self.cells)


def _as_cell(item: SynthCell | str) -> SynthCell:
    return item if isinstance(item, SynthCell) else SynthCell(str(item))


def table_html(rows: Sequence[Sequence[SynthCell | str]], header_rows: int = 1) -> str:
    """The ground-truth HTML of ``rows`` (the first ``header_rows`` in ``<thead>``)."""
    parts = ["<table>"]
    for r, row in enumerate(rows):
        if r == 0 and header_rows:
            parts.append("<thead>")
        if r == header_rows:
            parts.append("<tbody>")
        parts.append("<tr>")
        for cell in map(_as_cell, row):
            attrs = (f' colspan="{cell.colspan}"' if cell.colspan > 1 else "") + \
                    (f' rowspan="{cell.rowspan}"' if cell.rowspan > 1 else "")
            parts.append(f"<td{attrs}>{html_lib.escape(' '.join(cell.text.split(chr(10))))}</td>")
        parts.append("</tr>")
        if r == header_rows - 1:
            parts.append("</thead>")
    if len(rows) > header_rows:
        parts.append("</tbody>")
    parts.append("</table>")
    return "".join(parts)


def render_table(rows: Sequence[Sequence[SynthCell | str]], *, header_rows: int = 1, ruled: bool = True,
                 font_size: int = 18, pad: tuple[int, int] = (12, 8), margin: int = 16) -> RenderedTable:
    """Render a table given row by row in HTML's order (a cell spanned into from above is not repeated).

    Args:
        rows: the cells of each row, texts or :class:`SynthCell` with spans.
        header_rows: rows of the header (bold, in ``<thead>``).
        ruled: every cell border drawn, else booktabs rules only.
        font_size: text size in pixels (Noto Sans).
        pad: horizontal and vertical padding inside a cell.
        margin: white border around the table.
    """
    cells = [[_as_cell(c) for c in row] for row in rows]
    flat = [c for row in cells for c in row]
    places = place_cells([[(c.rowspan, c.colspan) for c in row] for row in cells])
    header = [p.row < header_rows for p in places]
    n_rows = max(p.row + p.rowspan for p in places)
    n_cols = max(p.col + p.colspan for p in places)

    def font(i: int):
        return load_font(font_for(flat[i].text, bold=header[i]), font_size)

    parts = [c.text.split("\n") if c.text else [] for c in flat]
    ascent, descent = load_font("latin", font_size).getmetrics()
    line_h = ascent + descent
    widths, heights = [40.0] * n_cols, [float(line_h + 2 * pad[1])] * n_rows
    for i, p in sorted(enumerate(places), key=lambda item: (item[1].colspan, item[1].rowspan)):
        need = max((font(i).getlength(t) for t in parts[i]), default=0) + 2 * pad[0]
        have = sum(widths[p.col:p.col + p.colspan])
        if need > have:
            widths[p.col + p.colspan - 1] += need - have
        need = len(parts[i]) * line_h + 2 * pad[1]
        have = sum(heights[p.row:p.row + p.rowspan])
        if need > have:
            heights[p.row + p.rowspan - 1] += need - have
    xs = np.concatenate([[0], np.cumsum(np.ceil(widths))]).astype(int) + margin
    ys = np.concatenate([[0], np.cumsum(np.ceil(heights))]).astype(int) + margin
    image = Image.new("RGB", (int(xs[-1]) + margin + 1, int(ys[-1]) + margin + 1), "white")
    draw = ImageDraw.Draw(image)
    out_cells, lines = [], []
    for i, p in enumerate(places):
        x0, y0, x1, y1 = xs[p.col], ys[p.row], xs[p.col + p.colspan], ys[p.row + p.rowspan]
        if ruled:
            draw.rectangle([x0, y0, x1, y1], outline="black", width=1)
        top = y0 + (y1 - y0 - len(parts[i]) * line_h) / 2
        for k, text in enumerate(parts[i]):
            f = font(i)
            tx, ty = x0 + pad[0], top + k * line_h
            draw.text((tx, ty), text, font=f, fill="black")
            bx0, by0, bx1, by1 = draw.textbbox((tx, ty), text, font=f)
            lines.append(TextLine((float(bx0), float(by0), float(bx1), float(by1)), text))
        out_cells.append({"box": [float(x0), float(y0), float(x1), float(y1)], "row": p.row, "col": p.col,
                          "rowspan": p.rowspan, "colspan": p.colspan, "text": " ".join(parts[i])})
    if not ruled:
        for y in (ys[0], ys[-1]):
            draw.line([(xs[0], y), (xs[-1], y)], fill="black", width=1)
        if 0 < header_rows < n_rows:  # the header rule, broken where a cell spans across it
            crossed = {p.col + j for p in places if p.row < header_rows < p.row + p.rowspan for j in range(p.colspan)}
            for c in range(n_cols):
                if c not in crossed:
                    draw.line([(xs[c], ys[header_rows]), (xs[c + 1], ys[header_rows])], fill="black", width=1)
        for i, p in enumerate(places):  # booktabs' \cmidrule under a spanning header cell
            if header[i] and p.colspan > 1 and p.row + p.rowspan < header_rows:
                y = ys[p.row + p.rowspan]
                draw.line([(xs[p.col] + pad[0] // 2, y), (xs[p.col + p.colspan] - pad[0] // 2, y)], fill="black",
                          width=1)
    return RenderedTable(np.asarray(image), table_html(cells, header_rows), out_cells, lines)
