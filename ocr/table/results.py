"""What ``TableRecognizer`` returns per table: the structure, the cells with boxes, grid places and texts, and the
HTML / Markdown of the whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .structure import GridCell, is_plain_grid, tokens_to_html


@dataclass
class TableResult:
    """One recognised table.

    Attributes:
        structure: the structure tokens (``<thead>``, ``<tr>``, ``<td``, `` colspan="2"``, ``>``, ``</td>``, ...).
        cells: one dict per cell, in HTML order: ``box`` ``[x0, y0, x1, y1]`` and ``polygon`` (4 corners) in
            image pixels, ``row``, ``col``, ``rowspan``, ``colspan``, ``text``.
        score: the mean probability of the structure tokens.
        source: the image's path, when it came from a file.
    """

    structure: list[str]
    cells: list[dict[str, Any]] = field(default_factory=list)
    score: float = 0.0
    source: str | None = None

    @property
    def html(self) -> str:
        """``<table>...</table>`` with every cell's text (HTML-escaped) and its spans."""
        return tokens_to_html(self.structure, [c["text"] for c in self.cells])

    @property
    def num_rows(self) -> int:
        return max((c["row"] + c["rowspan"] for c in self.cells), default=0)

    @property
    def num_cols(self) -> int:
        return max((c["col"] + c["colspan"] for c in self.cells), default=0)

    def _grid(self) -> list[GridCell]:
        return [GridCell(c["row"], c["col"], c["rowspan"], c["colspan"]) for c in self.cells]

    def to_markdown(self) -> str:
        """A pipe table when the table is a plain grid (no merged cells, equal rows; the first row is the header),
        else :attr:`html` (Markdown has no merged cells)."""
        if not is_plain_grid(self._grid()):
            return self.html
        rows: list[list[str]] = [[] for _ in range(self.num_rows)]
        for c in sorted(self.cells, key=lambda c: (c["row"], c["col"])):
            rows[c["row"]].append(" ".join(c["text"].split()).replace("|", "\\|"))
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        cells = [{**c, "box": np.round(np.asarray(c["box"], float), 1).tolist(),
                  "polygon": np.round(np.asarray(c["polygon"], float), 1).tolist()} for c in self.cells]
        return {"source": self.source, "html": self.html, "structure": list(self.structure), "cells": cells,
                "score": round(float(self.score), 5), "num_rows": self.num_rows, "num_cols": self.num_cols}
