"""Document parsing (PaddleOCR's ``ppstructure``, PP-StructureV3's pipeline): :class:`DocParser` finds a page's
layout regions with a det model found through the task registry, reads the page with OCR, recognises tables into
HTML, orders the blocks by XY-cut and writes Markdown, HTML and JSON (:class:`DocResult`)."""

from .blocks import KINDS, DocBlock, kind_of
from .layout import DEFAULT_LAYOUT, LayoutDetector
from .order import order_blocks, xy_cut
from .parser import DEFAULT_OCR_VERSION, DocParser
from .pdf import is_pdf, pdf_pages
from .results import DocPage, DocResult

__all__ = ["DEFAULT_LAYOUT", "DEFAULT_OCR_VERSION", "KINDS", "DocBlock", "DocPage", "DocParser", "DocResult",
           "LayoutDetector", "is_pdf", "kind_of", "order_blocks", "pdf_pages", "xy_cut"]
