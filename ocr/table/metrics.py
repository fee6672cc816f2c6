"""Cell accuracy: the share of ground-truth cells recognised at the right grid place, with the right spans and
text (whitespace-normalised)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _key(cell: Mapping[str, Any]) -> tuple[int, int, int, int]:
    return int(cell["row"]), int(cell["col"]), int(cell.get("rowspan", 1)), int(cell.get("colspan", 1))


def cell_accuracy(pred_cells: Sequence[Mapping[str, Any]], true_cells: Sequence[Mapping[str, Any]], *,
                  structure_only: bool = False) -> float:
    """Correct cells over ground-truth cells (1.0 when there are none and none are predicted).

    Args:
        pred_cells: ``TableResult.cells`` (dicts with ``row``, ``col``, ``rowspan``, ``colspan``, ``text``).
        true_cells: the same fields for the truth (``RenderedTable.cells``).
        structure_only: a cell counts when its place and spans are right, whatever its text.
    """
    if not true_cells:
        return 1.0 if not pred_cells else 0.0
    predicted = {_key(c): " ".join(str(c.get("text", "")).split()) for c in pred_cells}
    correct = 0
    for cell in true_cells:
        key = _key(cell)
        if key in predicted and (structure_only or predicted[key] == " ".join(str(cell.get("text", "")).split())):
            correct += 1
    return correct / len(true_cells)
