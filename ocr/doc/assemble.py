"""OCR lines into blocks: each line to the block that holds its centre, lines no block holds grouped into
paragraphs of their own, and a block's lines joined into its text in reading order."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from .blocks import DocBlock

_CJK = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uff00-\uffef]")


def line_box(line: Any) -> list[float]:
    """An OCR line's quad as ``[x0, y0, x1, y1]``."""
    quad = np.asarray(line.box, dtype=np.float32).reshape(-1, 2)
    return [float(quad[:, 0].min()), float(quad[:, 1].min()), float(quad[:, 0].max()), float(quad[:, 1].max())]


def _holds(box: list[float], x: float, y: float) -> bool:
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


def assign_lines(blocks: list[DocBlock], lines: Sequence[Any]) -> list[Any]:
    """Put each line into the smallest block that holds its centre; returns the lines no block holds."""
    orphans = []
    by_area = sorted(blocks, key=lambda b: b.area)
    for line in lines:
        x0, y0, x1, y1 = line_box(line)
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        home = next((b for b in by_area if _holds(b.box, cx, cy)), None)
        if home is None:
            orphans.append(line)
        else:
            home.lines.append(line)
    return orphans


def group_orphans(lines: Sequence[Any], body_height: float) -> list[DocBlock]:
    """Lines no layout box held, as blocks: a line joins the group above it when it starts within a line's height
    below it and overlaps it sideways; a group whose lines are 1.3x the body's line height or taller is a title."""
    groups: list[list[Any]] = []
    for line in sorted(lines, key=lambda ln: line_box(ln)[1]):
        x0, y0, x1, y1 = line_box(line)
        for group in groups:
            gx0, _, gx1, gy1 = line_box(group[-1])
            height = gy1 - line_box(group[-1])[1]
            if 0 <= y0 - gy1 + height * 0.3 <= height * 1.3 and min(x1, gx1) - max(x0, gx0) > 0:
                group.append(line)
                break
        else:
            groups.append([line])
    blocks = []
    for group in groups:
        boxes = [line_box(ln) for ln in group]
        height = float(np.median([b[3] - b[1] for b in boxes]))
        kind = "title" if len(group) <= 2 and height >= 1.3 * body_height else "text"
        box = [min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes)]
        blocks.append(DocBlock(kind, box, 1.0, "ocr", lines=list(group)))
    return blocks


def reading_rows(lines: Sequence[Any]) -> list[list[Any]]:
    """Lines in rows (top to bottom), each row left to right; two lines share a row when their vertical extents
    overlap by half the smaller height."""
    boxed = sorted(((line_box(ln), ln) for ln in lines), key=lambda item: (item[0][1] + item[0][3]) / 2)
    rows: list[list[tuple[list[float], Any]]] = []
    top = bottom = 0.0  # the last row's vertical extent
    for box, line in boxed:
        _, y0, _, y1 = box
        if rows and min(y1, bottom) - max(y0, top) >= 0.5 * min(y1 - y0, bottom - top):
            rows[-1].append((box, line))
            top, bottom = min(top, y0), max(bottom, y1)
        else:
            rows.append([(box, line)])
            top, bottom = y0, y1
    return [[line for _, line in sorted(row, key=lambda item: item[0][0])] for row in rows]


def join_text(parts: Sequence[str]) -> str:
    """Texts of consecutive lines as one paragraph: a word broken by a hyphen at a line's end is joined again,
    Chinese and Japanese lines are joined without a space, others with one."""
    out = ""
    for part in (p.strip() for p in parts):
        if not part:
            continue
        if not out:
            out = part
        elif out.endswith("-") and len(out) > 1 and out[-2].isalpha() and part[:1].islower():
            out = out[:-1] + part
        elif _CJK.match(out[-1]) and _CJK.match(part[0]):
            out += part
        else:
            out += " " + part
    return out


def block_text(block: DocBlock) -> str:
    """A block's lines read row by row as one text; the lines are kept in that order."""
    rows = reading_rows(block.lines)
    block.lines = [ln for row in rows for ln in row]
    return join_text([join_text([ln.text for ln in row]) for row in rows])
