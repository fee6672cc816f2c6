"""Reading order by recursive XY-cut: a region is split into columns where a vertical band of white runs through
all its blocks, else into rows where a horizontal one does, and each part is read in turn (columns left to right,
rows top to bottom). Full-width titles and figures break a column cut, so a two-column body under a title reads
title, left column, right column. Headers and footers stay out of the body; captions follow (or precede) the
figure or table they belong to."""

from __future__ import annotations

from collections.abc import Sequence

from .assemble import reading_rows
from .blocks import DocBlock

#: pixels a block's box is shrunk by on each side before cutting (layout boxes are drawn a little loose)
SLACK = 2.0


def _split(boxes: Sequence[list[float]], items: list[int], axis: int) -> list[list[int]]:
    """``items`` in groups separated by gaps along ``axis`` (0: x, 1: y), in that axis's order."""
    spans = sorted(items, key=lambda i: boxes[i][axis])
    groups: list[list[int]] = []
    end = float("-inf")
    for i in spans:
        start, stop = boxes[i][axis] + SLACK, boxes[i][axis + 2] - SLACK
        if groups and start < end:
            groups[-1].append(i)
        else:
            groups.append([i])
        end = max(end, stop)
    return groups


def _spanning(boxes: Sequence[list[float]], items: list[int]) -> list[int]:
    """The fewest widest blocks whose removal lets the others fall into columns (a full-width title or figure
    over a two-column body); empty when no such set exists (a single column)."""
    rest = sorted(items, key=lambda i: boxes[i][2] - boxes[i][0], reverse=True)
    removed: list[int] = []
    while len(rest) >= 2 and len(removed) < len(items) // 2:
        removed.append(rest.pop(0))
        if len(_split(boxes, rest, 0)) > 1:
            return removed
    return []


def _centre_y(box: list[float]) -> float:
    return (box[1] + box[3]) / 2


def xy_cut(boxes: Sequence[list[float]], items: list[int] | None = None) -> list[int]:
    """The indices of ``boxes`` (``[x0, y0, x1, y1]``) in reading order."""
    items = list(range(len(boxes))) if items is None else items
    if len(items) <= 1:
        return items
    columns = _split(boxes, items, 0)
    if len(columns) > 1:
        return [i for column in columns for i in xy_cut(boxes, column)]
    spanning = _spanning(boxes, items)
    if spanning:  # cut across at each spanning block; the bands between them are read on their own
        spanning.sort(key=lambda i: _centre_y(boxes[i]))
        bands: list[list[int]] = [[] for _ in range(len(spanning) + 1)]
        for i in items:
            if i not in spanning:
                bands[sum(_centre_y(boxes[s]) < _centre_y(boxes[i]) for s in spanning)].append(i)
        order: list[int] = []
        for k, band in enumerate(bands):
            order += xy_cut(boxes, band)
            if k < len(spanning):
                order.append(spanning[k])
        return order
    rows = _split(boxes, items, 1)
    if len(rows) > 1:
        return [i for row in rows for i in xy_cut(boxes, row)]
    return sorted(items, key=lambda i: (boxes[i][1], boxes[i][0]))  # overlapping blocks: top to bottom


def _gap(caption: DocBlock, target: DocBlock) -> float:
    """How far a caption lies from a figure or table: the vertical gap, plus a penalty when they do not overlap
    sideways."""
    dy = max(target.box[1] - caption.box[3], caption.box[1] - target.box[3], 0.0)
    overlap = min(caption.box[2], target.box[2]) - max(caption.box[0], target.box[0])
    return dy + (0.0 if overlap > 0 else 1e4)


def _keep_captions(ordered: list[DocBlock]) -> list[DocBlock]:
    """Move each caption next to its nearest figure (figure_caption) or table (table_caption): before it when
    drawn above, after it when drawn below."""
    targets = {"figure_caption": "figure", "table_caption": "table"}
    for caption in [b for b in ordered if b.kind in targets]:
        candidates = [b for b in ordered if b.kind == targets[caption.kind]]
        if not candidates:
            continue
        target = min(candidates, key=lambda t: _gap(caption, t))
        if _gap(caption, target) >= 1e4:
            continue
        ordered.remove(caption)
        at = ordered.index(target)
        above = (caption.box[1] + caption.box[3]) / 2 < (target.box[1] + target.box[3]) / 2
        ordered.insert(at if above else at + 1, caption)
    return ordered


def order_blocks(blocks: list[DocBlock]) -> list[DocBlock]:
    """Number the body blocks in reading order (``order`` 0, 1, ...) and set the headers' and footers' to
    ``None``; returns the body blocks in that order, then headers and footers top to bottom."""
    body = [b for b in blocks if b.in_body]
    ordered = _keep_captions([body[i] for i in xy_cut([b.box for b in body])])
    for n, block in enumerate(ordered):
        block.order = n
    outside = sorted((b for b in blocks if not b.in_body), key=lambda b: (b.box[1], b.box[0]))
    for block in outside:
        block.order = None
    return ordered + outside


def heading_levels(blocks: Sequence[DocBlock], *, first_page: bool) -> None:
    """Set each title's heading level: on the first page, the first title whose lines stand 1.2x taller than the
    other titles' is the document's title (level 1); every other title is a section heading (level 2)."""
    titles = [b for b in blocks if b.kind == "title" and b.order is not None]
    for block in titles:
        block.level = 2
    if not first_page or not titles:
        return
    heights = [_line_height(b) for b in titles]
    tallest = max(range(len(titles)), key=lambda i: heights[i])
    others = [h for i, h in enumerate(heights) if i != tallest]
    if not others or heights[tallest] >= 1.2 * sorted(others)[len(others) // 2]:
        titles[tallest].level = 1


def _line_height(block: DocBlock) -> float:
    """A block's height per row of its lines (the layout box is tighter around text than OCR boxes are)."""
    return (block.box[3] - block.box[1]) / max(1, len(reading_rows(block.lines)))
