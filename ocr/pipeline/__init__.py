"""The OCR pipeline: ``OCR()``, its results, the det → cls → rec glue and the crops between the stages."""

from . import glue  # noqa: F401  (registers the ocr/det_rec and ocr/det_cls_rec glue)
from .crops import crop_box, reading_order
from .ocr import OCR
from .results import OCRLine, OCRResult

__all__ = ["OCR", "OCRLine", "OCRResult", "crop_box", "reading_order"]
