"""``oarkit export RUN --format web`` for detectors: the verified ONNX model (NMS inside) and ``web/det.js`` (the
Detector's resize and normalisation, its score threshold, boxes back in image pixels, labelled boxes drawn) in a
static folder."""

from __future__ import annotations

from pathlib import Path

from oarkit.core.export.web import export_web
from oarkit.det.export import export_source

KIT_SCRIPT = Path(__file__).resolve().parent / "web" / "det.js"


def web_export(source: str | Path, *, out: str | Path, quantize: str | None = None, pretrained: bool | str = True,
               threshold: float = 0.5) -> Path:
    """Write the web folder of a detection run, model directory or registry name.

    Args:
        source: what ``oarkit export`` takes.
        out: the folder.
        quantize: ``"int8"`` carries the int8 ONNX model (calibrated on the run's training images).
        pretrained: for a registry name, its registered weights (``False``: random weights).
        threshold: detections scoring below this are left out (the Detector's default; the page's
            ``predict(image, {threshold})`` takes another).
    """
    return export_web(source, out=out, quantize=quantize, export_source=export_source, kit_script=KIT_SCRIPT,
                      pretrained=pretrained, deploy_extra={"threshold": float(threshold)})
