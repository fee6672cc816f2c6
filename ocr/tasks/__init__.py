"""The OCR tasks: ``ocr/det`` (DB detection), ``ocr/rec`` (CTC recognition), ``ocr/cls`` (line orientation)."""

from .cls import ClsExport, TextOrientationTask
from .det import DetExport, TextDetectionTask
from .rec import RecExport, TextRecognitionTask, guidance_targets

__all__ = ["ClsExport", "DetExport", "RecExport", "TextDetectionTask", "TextOrientationTask", "TextRecognitionTask",
           "guidance_targets"]
