"""How well a page was parsed, against the blocks it was rendered from: text CER over matched blocks and the
reading order's normalised edit distance (OmniDocBench's two text measures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..metrics import edit_distance


def _overlap(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over the smaller box (a caption inside a loose layout box still matches it)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return max(0.0, w) * max(0.0, h) / max(smaller, 1e-6)


def match_blocks(predicted: Sequence[Any], truth: Sequence[Any], *, threshold: float = 0.5) -> dict[int, int]:
    """Truth index -> predicted index, greedily by overlap (each block matched once)."""
    pairs = sorted(((_overlap(t.box, p.box), ti, pi) for ti, t in enumerate(truth) for pi, p in enumerate(predicted)),
                   reverse=True)
    matched: dict[int, int] = {}
    used: set[int] = set()
    for score, ti, pi in pairs:
        if score < threshold:
            break
        if ti not in matched and pi not in used:
            matched[ti] = pi
            used.add(pi)
    return matched


def normalised_edit_distance(a: Sequence[Any], b: Sequence[Any]) -> float:
    """Levenshtein distance between two sequences over the longer one's length (0 when both are empty)."""
    if not a and not b:
        return 0.0
    return edit_distance(a, b) / max(len(a), len(b))


def text_cer(predicted: Sequence[Any], truth: Sequence[Any], *, kinds: Sequence[str] = ("title", "text")) -> float:
    """Character errors of the truth's ``kinds`` blocks against the predicted blocks they match (a missed block
    counts all its characters), over the truth's characters."""
    truth = [t for t in truth if t.kind in kinds]
    matched = match_blocks(predicted, truth)
    edits = sum(edit_distance(predicted[matched[i]].text, t.text) if i in matched else len(t.text)
                for i, t in enumerate(truth))
    return edits / max(1, sum(len(t.text) for t in truth))


def reading_order_distance(predicted: Sequence[Any], truth: Sequence[Any]) -> float:
    """The normalised edit distance between the body's truth order and the order the matched predicted blocks
    were read in (blocks no prediction matched count as missing from the predicted sequence)."""
    body = [t for t in truth if t.order is not None]
    matched = match_blocks(predicted, body)
    read = sorted((predicted[p].order, t) for t, p in matched.items() if predicted[p].order is not None)
    expected = sorted(range(len(body)), key=lambda i: body[i].order)
    return normalised_edit_distance([t for _, t in read], expected)
