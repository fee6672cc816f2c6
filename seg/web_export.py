"""``oarkit export RUN --format web`` for segmenters: the verified ONNX model and ``web/seg.js`` (the Segmenter's
preprocessing, inference mode, argmax class map and its overlay picture) in a static folder."""

from __future__ import annotations

from pathlib import Path

from oarkit.core.export.web import export_web
from oarkit.seg.export import export_source

KIT_SCRIPT = Path(__file__).resolve().parent / "web" / "seg.js"


def web_export(source: str | Path, *, out: str | Path, quantize: str | None = None,
               pretrained: bool | str = True) -> Path:
    """Write the web folder of a segmentation run, model directory or registry name.

    Args:
        source: what ``oarkit export`` takes.
        out: the folder.
        quantize: ``"int8"`` carries the int8 ONNX model (calibrated on the run's training images).
        pretrained: for a registry name, its registered weights (``False``: random weights).
    """
    return export_web(source, out=out, quantize=quantize, export_source=export_source, kit_script=KIT_SCRIPT,
                      pretrained=pretrained)
