"""``DocParser``: page images and PDFs to Markdown and JSON — layout regions, OCR of the page, tables recognised
into HTML, the blocks read in order — like PaddleOCR's PP-StructureV3, on weights that ship offline."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.data import load_image_input
from oarkit.core.errors import DataError

from .assemble import assign_lines, block_text, group_orphans, line_box, reading_rows
from .blocks import DocBlock
from .layout import DEFAULT_LAYOUT, LayoutDetector
from .order import heading_levels, order_blocks
from .pdf import is_pdf, pdf_pages
from .results import DocPage, DocResult

logger = logging.getLogger(__name__)

#: the OCR version a page is read with by default: PP-OCRv6 tiny reads rendered and scanned pages as well as
#: small does here (bench/doc_pipeline.py) in a fifth of the time, which keeps a page under 2 s on 2 threads
DEFAULT_OCR_VERSION = "PP-OCRv6-tiny"
DEFAULT_TABLE = "ocr/slanet_plus"
#: block kinds whose text is their lines' text (figures keep their lines without text; tables get cells)
TEXT_KINDS = ("title", "text", "figure_caption", "table_caption", "header", "footer", "reference", "equation")


class DocParser:
    """Document parsing: ``DocParser()(page) -> DocResult``.

    Example::

        doc = DocParser()
        r = doc("paper.pdf")            # every page; or an image path, an array, a PIL image
        print(r.markdown); r.to_dict(); r.save("out/")

    Args:
        layout: the layout model: a registry name, run directory or export folder of a det model with layout
            classes (CDLA's ten, or PP-DocLayout's labels), or a det predictor already built.
        ocr: an :class:`~oarkit.ocr.OCR` (or anything it is built from: a pipeline folder); ``None``: ``OCR`` of
            ``ocr_version``.
        ocr_version: the PaddleOCR version read with when ``ocr`` is ``None``.
        table: the table-structure model (``ocr/slanet_plus``), a :class:`~oarkit.ocr.table.TableRecognizer`, or
            ``None`` to keep tables as their OCR text.
        layout_threshold: layout boxes scoring below this are left out.
        dpi: the resolution PDF pages are rendered at.
        device: where the models run.
    """

    def __init__(self, layout: str | Path | Any = DEFAULT_LAYOUT, *, ocr: Any = None,
                 ocr_version: str = DEFAULT_OCR_VERSION, table: str | Any | None = DEFAULT_TABLE,
                 layout_threshold: float = 0.5, dpi: float = 144.0, device: str = "cpu") -> None:
        from ..pipeline.ocr import OCR

        self.layout = LayoutDetector(layout, threshold=layout_threshold, device=device)
        if ocr is None:
            ocr = OCR(version=ocr_version, device=device, rec_batch_size=16)
        elif isinstance(ocr, (str, Path)):
            ocr = OCR(ocr, device=device)
        self.ocr = ocr
        if isinstance(table, str):
            from ..table import TableRecognizer

            table = TableRecognizer(table, device=device)
        self.table = table
        self.dpi = dpi

    def __call__(self, inputs: Any | Sequence[Any]) -> DocResult | list[DocResult]:
        """Parse one document (a path to an image or a PDF, an array, a PIL image) or a list of them."""
        if isinstance(inputs, (list, tuple)):
            return [self._document(item) for item in inputs]
        return self._document(inputs)

    def _document(self, item: Any) -> DocResult:
        if isinstance(item, (str, Path)):
            path = Path(item)
            if not path.exists():
                raise DataError(f"{item} does not exist")
            if is_pdf(path):
                pages = [self.parse_page(image, index=i, stem=path.stem)
                         for i, image in enumerate(pdf_pages(path, dpi=self.dpi))]
                return DocResult(pages, str(item))
        image, source = load_image_input(item, taker="DocParser")
        stem = Path(source).stem if source else "document"
        return DocResult([self.parse_page(image, index=0, stem=stem)], source)

    def parse_page(self, image: np.ndarray, *, index: int = 0, stem: str = "document") -> DocPage:
        """One RGB page: layout, OCR, tables, reading order."""
        start = time.perf_counter()
        blocks = self.layout(image)
        lines = self.ocr(image).lines
        orphans = assign_lines(blocks, lines)
        heights = [line_box(ln)[3] - line_box(ln)[1] for b in blocks if b.kind == "text" for ln in b.lines]
        body_height = float(np.median(heights)) if heights else float(np.median(
            [line_box(ln)[3] - line_box(ln)[1] for ln in lines] or [16.0]))
        blocks += group_orphans(orphans, body_height)
        kept: list[DocBlock] = []
        for block in blocks:
            if block.kind == "table":
                self._read_table(block, image)
            elif block.kind in TEXT_KINDS:
                block.text = block_text(block)
                if not block.text and block.kind != "equation":
                    continue  # a text region the OCR found nothing in: a false layout box
            kept.append(block)
        ordered = order_blocks(kept)
        heading_levels(ordered, first_page=index == 0)
        for block in ordered:
            if block.kind in ("figure", "equation") and block.order is not None:
                block.image = f"imgs/{stem}_p{index + 1}_{block.kind}{block.order + 1}.png"
        return DocPage(index, ordered, image, time.perf_counter() - start)

    def _read_table(self, block: DocBlock, page: np.ndarray) -> None:
        block.lines = [ln for row in reading_rows(block.lines) for ln in row]
        if self.table is None:
            block.text = block_text(block)
            return
        pad = 4
        x0, y0 = max(0, int(block.box[0]) - pad), max(0, int(block.box[1]) - pad)
        crop = block.crop(page, pad=pad)
        shifted = [dataclasses.replace(ln, box=np.asarray(ln.box, np.float32) - np.float32([x0, y0]))
                   for ln in block.lines]
        block.table = self.table(crop, ocr_lines=shifted)
        cells = " ".join(" ".join(c.get("text", "") for c in row) for row in _cell_rows(block.table.cells)).strip()
        block.text = cells or block_text(block)  # a structure with no cells filled: the table's lines as text


def _cell_rows(cells: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    rows: dict[int, list[dict[str, Any]]] = {}
    for cell in cells:
        rows.setdefault(int(cell.get("row", 0)), []).append(cell)
    return [sorted(rows[r], key=lambda c: int(c.get("col", 0))) for r in sorted(rows)]
