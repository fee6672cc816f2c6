"""Table recognition (PaddleOCR ppstructure's table module): SLANet-plus's structure tokens and cell boxes, cell
texts from OCR lines, HTML / Markdown out, and the TEDS metric.

``TableRecognizer()(crop)`` -> :class:`TableResult` (``.html``, ``.cells``, ``.structure``, ``.to_markdown()``);
``teds(pred_html, true_html)`` scores it; :func:`render_table` makes tables with known content.
"""

from typing import Any

from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.kits import TaskEntry, register_task

from . import slanet  # noqa: F401  (registers ocr/slanet_plus)
from .decode import DecodedTable, decode, preprocess
from .metrics import cell_accuracy
from .recognizer import TableRecognizer
from .results import TableResult
from .slanet import SLANet
from .synth import RenderedTable, SynthCell, render_table
from .teds import teds

__all__ = ["DecodedTable", "RenderedTable", "SLANet", "SynthCell", "TableRecognizer", "TableResult", "cell_accuracy",
           "decode", "preprocess", "render_table", "teds"]


def _predictor(source: Any, device: str = "cpu") -> TableRecognizer:
    return TableRecognizer(source, device=device)


# `oarkit predict ocr/slanet_plus TABLE.png`: a table crop in, its TableResult.to_dict() out (nothing trains it)
register_task(TaskEntry(task_id="ocr/table", task_class=None, predictor=_predictor, input_suffixes=IMAGE_SUFFIXES))
