"""Rendered document pages with known content: a header, a title, headings, paragraphs in one or two columns, a
figure with its caption, a ruled or borderless table with its caption, a footer, each block's class, box, text,
reading order and (for tables) HTML written down, so that document parsing is measured against the truth.

The text is random English words in the installed Noto Sans (never a machine's own fonts); the layout follows
what journals and reports look like, so the CDLA layout model sees what it was trained on.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from .corpus import ENGLISH_WORDS
from .fonts import load_font

INK = (20, 20, 20)
GREY = (110, 110, 110)


@dataclass
class TruthBlock:
    """One block of a rendered page as it was drawn.

    Attributes:
        kind: the CDLA class (``title``, ``text``, ``figure``, ``figure_caption``, ``table``, ``table_caption``,
            ``header``, ``footer``).
        box: ``[x0, y0, x1, y1]`` pixels.
        text: the block's text (lines joined by spaces; a table's cells row by row).
        order: its place in the reading order; ``None`` for headers and footers, which are not in the body.
        html: a table's ``<table>`` markup.
        cells: a table's cell texts, row by row.
    """

    kind: str
    box: list[float]
    text: str = ""
    order: int | None = None
    html: str = ""
    cells: list[list[str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.kind, "box": [round(v, 1) for v in self.box], "order": self.order,
                               "text": self.text}
        if self.html:
            out["html"] = self.html
        return out


@dataclass
class RenderedDocument:
    """A rendered page and its blocks (body blocks in reading order, then headers and footers)."""

    image: np.ndarray
    blocks: list[TruthBlock]

    @property
    def body(self) -> list[TruthBlock]:
        """The blocks in the reading order."""
        return sorted((b for b in self.blocks if b.order is not None), key=lambda b: b.order)


class _Page:
    """A canvas that writes blocks down as it draws them."""

    def __init__(self, size: tuple[int, int], rng: random.Random) -> None:
        self.h, self.w = size
        self.image = Image.new("RGB", (self.w, self.h), (255, 255, 255))
        self.draw = ImageDraw.Draw(self.image)
        self.rng = rng
        self.blocks: list[TruthBlock] = []
        self.order = 0

    def add(self, kind: str, box: list[float], text: str = "", *, body: bool = True, **extra: Any) -> TruthBlock:
        block = TruthBlock(kind, [float(v) for v in box], text, self.order if body else None, **extra)
        self.order += int(body)
        self.blocks.append(block)
        return block

    def words(self, n: int) -> list[str]:
        return [self.rng.choice(ENGLISH_WORDS) for _ in range(n)]

    def text_line(self, xy: tuple[float, float], text: str, size: int, *, bold: bool = False,
                  fill: tuple[int, int, int] = INK) -> list[float]:
        """Draw one line; returns its ink box."""
        font = load_font("latin-bold" if bold else "latin", size)
        self.draw.text(xy, text, font=font, fill=fill)
        x0, y0, x1, y1 = self.draw.textbbox(xy, text, font=font)
        return [x0, y0, x1, y1]

    def paragraph(self, x: float, y: float, width: float, n_words: int, size: int) -> float:
        """A paragraph of ``n_words`` words wrapped to ``width``; returns the y below it."""
        font = load_font("latin", size)
        words = self.words(n_words)
        words[0] = words[0].capitalize()
        lines, current = [], ""
        for word in words:
            trial = f"{current} {word}".strip()
            if current and font.getlength(trial) > width:
                lines.append(current)
                current = word
            else:
                current = trial
        lines.append(current + ".")
        step = int(size * 1.5)
        boxes = [self.text_line((x, y + i * step), line, size) for i, line in enumerate(lines)]
        self.add("text", _union(boxes), " ".join(lines))
        return y + len(lines) * step

    def heading(self, x: float, y: float, text: str, size: int) -> float:
        self.add("title", self.text_line((x, y), text, size, bold=True), text)
        return y + int(size * 1.9)

    def figure(self, x: float, y: float, width: float, height: float, number: int, size: int) -> float:
        """A bar chart in a frame and its caption below; returns the y below the caption."""
        self.draw.rectangle([x, y, x + width, y + height], outline=(70, 70, 70), width=2)
        bars = [self.rng.uniform(0.2, 0.95) for _ in range(self.rng.randint(5, 8))]
        bar_w = width / (2 * len(bars) + 1)
        for i, v in enumerate(bars):
            bx = x + bar_w * (2 * i + 1)
            colour = tuple(self.rng.randint(40, 200) for _ in range(3))
            self.draw.rectangle([bx, y + height - v * (height - 12), bx + bar_w, y + height - 3], fill=colour)
        self.add("figure", [x, y, x + width, y + height])
        caption = f"Figure {number}: " + " ".join(self.words(self.rng.randint(4, 7))) + "."
        box = self.text_line((x, y + height + 8), caption, size, fill=(40, 40, 40))
        self.add("figure_caption", box, caption)
        return box[3] + int(size * 1.6)

    def table(self, x: float, y: float, width: float, number: int, size: int, *, ruled: bool) -> float:
        """A caption, then a table (header row, 3-5 body rows, 3-4 columns; ruled tables merge two header cells
        over the numeric columns); returns the y below it."""
        caption = f"Table {number}: " + " ".join(self.words(self.rng.randint(3, 6))) + "."
        cap_box = self.text_line((x, y), caption, size, fill=(40, 40, 40))
        self.add("table_caption", cap_box, caption)
        y = cap_box[3] + int(size * 0.8)
        n_cols, n_rows = self.rng.randint(3, 4), self.rng.randint(3, 5)
        header = [self.rng.choice(("Name", "Item", "Region", "Model")), *self.rng.sample(
            ("Count", "Score", "Price", "Share", "Rate", "Total"), n_cols - 1)]
        rows = [header] + [[self.rng.choice(ENGLISH_WORDS).capitalize()]
                           + [f"{self.rng.uniform(1, 99):.1f}" for _ in range(n_cols - 1)] for _ in range(n_rows)]
        row_h, col_w = int(size * 2.0), width / n_cols
        font_h, font = load_font("latin-bold", size), load_font("latin", size)
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                self.draw.text((x + c * col_w + 8, y + r * row_h + (row_h - size) / 2 - 2), cell,
                               font=font_h if r == 0 else font, fill=INK)
        bottom, right = y + len(rows) * row_h, x + width
        if ruled:
            for r in range(len(rows) + 1):
                self.draw.line([x, y + r * row_h, right, y + r * row_h], fill=(30, 30, 30), width=1)
            for c in range(n_cols + 1):
                self.draw.line([x + c * col_w, y, x + c * col_w, bottom], fill=(30, 30, 30), width=1)
        else:  # three-line table: rules above and below the header and at the bottom only
            for line_y in (y, y + row_h, bottom):
                self.draw.line([x, line_y, right, line_y], fill=(30, 30, 30), width=2 if line_y != y + row_h else 1)
        html = "<table><thead><tr>" + "".join(f"<td>{c}</td>" for c in rows[0]) + "</tr></thead><tbody>" + "".join(
            "<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows[1:]) + "</tbody></table>"
        self.add("table", [x, y, right, bottom], " ".join(" ".join(row) for row in rows), html=html, cells=rows)
        return bottom + int(size * 1.6)


def _union(boxes: list[list[float]]) -> list[float]:
    return [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)]


def render_document(seed: int = 0, *, columns: int = 2, table: str | None = "ruled", figure: bool = True,
                    size: tuple[int, int] = (1300, 1000), body_size: int = 17) -> RenderedDocument:
    """A page with a header, a title, an abstract, section headings and paragraphs in ``columns`` columns, a
    figure with its caption below, a table (``ruled``, ``borderless`` or ``None``) with its caption above, and a
    footer with the page number.

    Args:
        seed: draws the words, numbers and where the figure and table go.
        columns: 1 or 2 body columns.
        table: the table's style, or ``None`` for no table.
        figure: whether the page has a figure.
        size: ``(height, width)`` pixels.
        body_size: the body text's pixel size (headings, captions, header and footer are sized from it).

    Returns:
        The page and its blocks, the body blocks numbered in reading order.
    """
    if columns not in (1, 2):
        raise ValueError(f"columns must be 1 or 2, got {columns}")
    if table not in ("ruled", "borderless", None):
        raise ValueError(f"table must be 'ruled', 'borderless' or None, got {table!r}")
    rng = random.Random(seed)
    page = _Page(size, rng)
    margin = int(page.w * 0.08)
    small = max(10, int(body_size * 0.8))
    # header: running title at the left and the page number at the right, a rule under them; not in the body
    journal = "Proceedings of " + " ".join(w.capitalize() for w in page.words(2))
    page.add("header", page.text_line((margin, 28), journal, small, fill=GREY), journal, body=False)
    y = 28 + int(small * 2.2)
    page.draw.line([margin, y - 6, page.w - margin, y - 6], fill=(160, 160, 160), width=1)
    title = " ".join(w.capitalize() for w in page.words(rng.randint(4, 6)))
    y = page.heading(margin, y + 14, title, int(body_size * 1.8)) + 4
    y = page.paragraph(margin, y, page.w - 2 * margin, rng.randint(30, 45), body_size) + int(body_size * 1.2)
    gutter = int(page.w * 0.04)
    col_w = (page.w - 2 * margin - (columns - 1) * gutter) / columns
    bottom_limit = page.h - int(body_size * 5)
    section, figures, tables = 1, 1, 1
    placed_figure, placed_table = not figure, table is None
    for col in range(columns):
        x, cy = margin + col * (col_w + gutter), y
        while cy < bottom_limit - body_size * 8:
            if not placed_figure and (col == 0 or columns == 1) and section == 2:
                fig_h = int(col_w * 0.45)
                cy = page.figure(x + col_w * 0.1, cy, col_w * 0.8, fig_h, figures, small)
                placed_figure, figures = True, figures + 1
                continue
            if not placed_table and (col == columns - 1) and cy > y + body_size * 10:
                cy = page.table(x, cy, col_w, tables, small + 1, ruled=table == "ruled")
                placed_table, tables = True, tables + 1
                continue
            cy = page.heading(x, cy, f"{section} " + " ".join(w.capitalize() for w in page.words(2)),
                              int(body_size * 1.2))
            section += 1
            remaining = (bottom_limit - cy) / (body_size * 1.5)
            lines = min(rng.randint(4, 8), int(remaining) - 1)
            if lines < 2:
                break
            words_per_line = max(3, int(col_w / (body_size * 0.55) / 6))
            cy = page.paragraph(x, cy, col_w, lines * words_per_line, body_size) + int(body_size * 1.0)
    number = str(rng.randint(1, 300))
    font = load_font("latin", small)
    page.add("footer", page.text_line(((page.w - font.getlength(number)) / 2, page.h - 40), number, small,
                                      fill=GREY), number, body=False)
    return RenderedDocument(np.asarray(page.image), page.blocks)
