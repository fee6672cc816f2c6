"""``oarkit export RUN --format web`` for classifiers: the verified ONNX model and ``web/clas.js`` (the
Classifier's preprocessing, softmax and top-k, and its top-k bar picture) in a static folder."""

from __future__ import annotations

from pathlib import Path

from oarkit.clas.export import export_source
from oarkit.core.export.web import export_web

KIT_SCRIPT = Path(__file__).resolve().parent / "web" / "clas.js"


def web_export(source: str | Path, *, out: str | Path, quantize: str | None = None, pretrained: bool | str = True,
               topk: int = 5) -> Path:
    """Write the web folder of a classification run, model directory or registry name.

    Args:
        source: what ``oarkit export`` takes.
        out: the folder.
        quantize: ``"int8"`` carries the int8 ONNX model (calibrated on the run's training images).
        pretrained: for a registry name, its registered weights (``False``: random weights).
        topk: classes the page returns per image (the Classifier's default).
    """
    return export_web(source, out=out, quantize=quantize, export_source=export_source, kit_script=KIT_SCRIPT,
                      pretrained=pretrained, deploy_extra={"topk": int(topk)})
