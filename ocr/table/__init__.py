"""Table recognition (PaddleOCR ppstructure's table module): SLANet-plus's structure tokens and cell boxes, cell
texts from OCR lines, HTML / Markdown out, and the TEDS metric.

``TableRecognizer()(crop)`` -> :class:`TableResult` (``.html``, ``.cells``, ``.structure``, ``.to_markdown()``);
``teds(pred_html, true_html)`` scores it; :func:`render_table` makes tables with known content.
"""

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
