"""Cell contents: OCR lines assigned to the predicted cell boxes.

Rules (each line goes to at most one cell):

1. a line's box is its quad's bounding rectangle;
2. it goes to the cell that holds the largest share of the line's area, when that share is at least
   ``min_inside`` (0.3); ties go to the higher IoU, which prefers the cell of the line's own size;
3. a line no cell holds that much of (a cell box predicted a little too small, a line between two cells) goes to
   the cell whose box is nearest to the line's centre, when that distance is under ``max_gap`` times the line's
   height; otherwise it is left out (text outside the table: a caption, a page number);
4. the lines of one cell are joined in reading order: grouped into visual rows (a line whose vertical centre lies
   within half the row's height of that row joins it), rows top to bottom, lines left to right, joined by a space.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from oarkit.core.errors import DataError


@dataclass(frozen=True)
class TextLine:
    """An OCR line: its axis-aligned box ``x0, y0, x1, y1`` in image pixels and its text."""

    box: tuple[float, float, float, float]
    text: str


def as_text_lines(lines: Sequence[Any]) -> list[TextLine]:
    """OCR lines as :class:`TextLine`: ``OCRLine`` objects (``.box`` 4x2, ``.text``), dicts with ``box`` and
    ``text``, or ``(box, text)`` pairs; a box is a 4x2 quad or ``[x0, y0, x1, y1]``.

    Raises:
        DataError: an item of another kind or a box of another shape.
    """
    out = []
    for i, line in enumerate(lines):
        if isinstance(line, TextLine):
            out.append(line)
            continue
        if hasattr(line, "box") and hasattr(line, "text"):
            box, text = line.box, line.text
        elif isinstance(line, dict) and "box" in line and "text" in line:
            box, text = line["box"], line["text"]
        elif isinstance(line, (tuple, list)) and len(line) >= 2:
            box, text = line[0], line[1]
        else:
            raise DataError(f"ocr_lines[{i}] is a {type(line).__name__}; give OCRLine objects (OCR()(image).lines), "
                            "dicts with 'box' and 'text', or (box, text) pairs")
        points = np.asarray(box, np.float32)
        if points.shape == (4,):
            x0, y0, x1, y1 = points.tolist()
        elif points.ndim == 2 and points.shape[1] == 2 and len(points) >= 2:
            x0, y0 = points.min(0).tolist()
            x1, y1 = points.max(0).tolist()
        else:
            raise DataError(f"ocr_lines[{i}] has a box of shape {list(points.shape)}; a box is a 4x2 quad or "
                            "[x0, y0, x1, y1]")
        out.append(TextLine((x0, y0, x1, y1), str(text)))
    return out


def _overlaps(lines: np.ndarray, cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``[L, C]`` share of each line inside each cell, and their IoU."""
    lx0, ly0, lx1, ly1 = (lines[:, i:i + 1] for i in range(4))
    cx0, cy0, cx1, cy1 = (cells[None, :, i] for i in range(4))
    inter_w = (np.minimum(lx1, cx1) - np.maximum(lx0, cx0)).clip(0)
    inter = inter_w * (np.minimum(ly1, cy1) - np.maximum(ly0, cy0)).clip(0)
    line_area = ((lx1 - lx0) * (ly1 - ly0)).clip(1e-6)
    cell_area = ((cx1 - cx0) * (cy1 - cy0)).clip(1e-6)
    return inter / line_area, inter / (line_area + cell_area - inter)


def _gaps(lines: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """``[L, C]`` distance from each line's centre to each cell box (0 inside)."""
    cx = ((lines[:, 0] + lines[:, 2]) / 2)[:, None]
    cy = ((lines[:, 1] + lines[:, 3]) / 2)[:, None]
    dx = np.maximum(np.maximum(cells[None, :, 0] - cx, cx - cells[None, :, 2]), 0)
    dy = np.maximum(np.maximum(cells[None, :, 1] - cy, cy - cells[None, :, 3]), 0)
    return np.hypot(dx, dy)


def assign_lines(lines: Sequence[TextLine], cell_boxes: np.ndarray, *, min_inside: float = 0.3,
                 max_gap: float = 1.0) -> list[list[int]]:
    """For each cell, the indices of the lines assigned to it (rules 1-3 of the module docstring)."""
    cells = np.asarray(cell_boxes, np.float32).reshape(-1, 4)
    assigned: list[list[int]] = [[] for _ in range(len(cells))]
    if not len(lines) or not len(cells):
        return assigned
    boxes = np.array([line.box for line in lines], np.float32)
    inside, iou = _overlaps(boxes, cells)
    gaps = _gaps(boxes, cells)
    heights = (boxes[:, 3] - boxes[:, 1]).clip(1)
    for i in range(len(lines)):
        best = int(np.lexsort((-iou[i], -inside[i]))[0])
        if inside[i, best] >= min_inside:
            assigned[best].append(i)
            continue
        nearest = int(np.argmin(gaps[i]))
        if gaps[i, nearest] <= max_gap * heights[i]:
            assigned[nearest].append(i)
    return assigned


def join_reading_order(lines: Sequence[TextLine]) -> str:
    """The texts of one cell's lines in reading order (rule 4 of the module docstring)."""
    rows: list[list[TextLine]] = []
    for line in sorted(lines, key=lambda item: (item.box[1] + item.box[3]) / 2):
        centre = (line.box[1] + line.box[3]) / 2
        if rows:
            top = min(item.box[1] for item in rows[-1])
            bottom = max(item.box[3] for item in rows[-1])
            if abs(centre - (top + bottom) / 2) <= (bottom - top) / 2:
                rows[-1].append(line)
                continue
        rows.append([line])
    parts = [line.text.strip() for row in rows for line in sorted(row, key=lambda item: item.box[0])]
    return " ".join(p for p in parts if p)


def cell_texts(lines: Sequence[TextLine], cell_boxes: np.ndarray, **kwargs: float) -> list[str]:
    """The text of every cell, in cell order."""
    return [join_reading_order([lines[i] for i in index]) for index in assign_lines(lines, cell_boxes, **kwargs)]
