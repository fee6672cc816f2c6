"""The blocks of a parsed page: what the layout model found, the OCR lines inside, the text, the place in the
reading order, and a table's structure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: the kinds a block is filed under, whatever the layout model calls them (CDLA's ten classes are these names)
KINDS = ("title", "text", "figure", "figure_caption", "table", "table_caption", "header", "footer", "reference",
         "equation")
#: other layout models' labels (PP-DocLayout, PubLayNet, DocLayNet) -> a kind
LABEL_KINDS = {
    "doc_title": "title", "paragraph_title": "title", "section-header": "title", "title": "title",
    "abstract": "text", "content": "text", "list": "text", "list-item": "text", "footnote": "text",
    "aside_text": "text", "algorithm": "text", "vision_footnote": "text", "page-footer": "footer",
    "page-header": "header", "number": "footer", "image": "figure", "picture": "figure", "chart": "figure",
    "seal": "figure", "header_image": "header", "footer_image": "footer", "figure_title": "figure_caption",
    "chart_title": "figure_caption", "caption": "figure_caption", "table_title": "table_caption",
    "formula": "equation", "formula_number": "equation",
}
#: kinds that are never part of the body's reading order
OUTSIDE_BODY = ("header", "footer")


def kind_of(label: str) -> str:
    """The kind of a layout model's label (``paragraph_title`` -> ``title``); an unknown label reads as text."""
    key = label.strip().lower()
    if key in KINDS:
        return key
    return LABEL_KINDS.get(key, LABEL_KINDS.get(key.replace(" ", "_"), "text"))


@dataclass
class DocBlock:
    """One block of a page.

    Attributes:
        kind: one of :data:`KINDS`.
        box: ``[x0, y0, x1, y1]`` pixels of the page.
        score: the layout model's confidence (1.0 for a block grouped from OCR lines no layout box held).
        label: the layout model's own label (``paragraph_title``); ``ocr`` for a grouped block.
        order: the place in the body's reading order, from 0; ``None`` for headers and footers.
        text: the block's text (a table's cells row by row).
        lines: the OCR lines inside, in reading order (:class:`~oarkit.ocr.pipeline.results.OCRLine`).
        table: a table's :class:`~oarkit.ocr.table.TableResult` (``None`` elsewhere).
        level: a title's heading level (1 for the document title, 2 for the others; 0 elsewhere).
        image: where :meth:`DocResult.save <oarkit.ocr.doc.results.DocResult.save>` wrote a figure's or an
            equation's crop, relative to the output folder.
    """

    kind: str
    box: list[float]
    score: float = 1.0
    label: str = ""
    order: int | None = None
    text: str = ""
    lines: list[Any] = field(default_factory=list, repr=False)
    table: Any = None
    level: int = 0
    image: str | None = None

    @property
    def in_body(self) -> bool:
        return self.kind not in OUTSIDE_BODY

    @property
    def area(self) -> float:
        return max(0.0, self.box[2] - self.box[0]) * max(0.0, self.box[3] - self.box[1])

    def crop(self, page: np.ndarray, pad: int = 0) -> np.ndarray:
        """The block's pixels of ``page`` (``pad`` pixels around it, inside the page)."""
        h, w = page.shape[:2]
        x0, y0 = max(0, int(self.box[0]) - pad), max(0, int(self.box[1]) - pad)
        x1, y1 = min(w, int(np.ceil(self.box[2])) + pad), min(h, int(np.ceil(self.box[3])) + pad)
        return page[y0:y1, x0:x1]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"class": self.kind, "label": self.label, "box": [round(float(v), 1) for v in self.box],
                               "score": round(float(self.score), 4), "order": self.order, "text": self.text}
        if self.kind == "title":
            out["level"] = self.level
        if self.table is not None:
            out["table"] = self.table.to_dict()
        if self.image is not None:
            out["image"] = self.image
        return out
