"""PaddleX's ``POST /ocr`` under ``oarkit serve``: ``{"file": "<base64>", "fileType": 1}`` in, PaddleX's general
OCR result out: ``{"ocrResults": [{"prunedResult": {"rec_texts", "rec_scores", "rec_polys", "rec_boxes",
"dt_polys", ...}}], "dataInfo": {"width", "height", "type": "image"}}``. PDFs (``fileType`` 0) and settings the
pipeline cannot honour are refused by name."""

from __future__ import annotations

from typing import Any

import numpy as np

from oarkit.core.kits import PaddleXRoute, paddlex_params


def _params(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("fileType") == 0:
        raise ValueError("fileType 0 (PDF) is not supported by oarkit serve's /ocr; send each page as an image "
                         "with fileType 1")
    if body.get("fileType") not in (None, 1):
        raise ValueError(f"fileType must be 0 (PDF) or 1 (image), got {body.get('fileType')!r}")
    return paddlex_params({k: v for k, v in body.items() if k != "fileType"}, {}, ("visualize",))


def _result(result: Any, image: np.ndarray) -> dict[str, Any]:
    polys = [np.round(line.box).astype(int).tolist() for line in result.lines]
    boxes = [[min(x for x, _ in p), min(y for _, y in p), max(x for x, _ in p), max(y for _, y in p)] for p in polys]
    pruned = {"text_type": "general", "dt_polys": polys, "rec_texts": [line.text for line in result.lines],
              "rec_scores": [float(line.score) for line in result.lines], "rec_polys": polys, "rec_boxes": boxes}
    height, width = image.shape[:2]
    return {"ocrResults": [{"prunedResult": pruned}],
            "dataInfo": {"width": int(width), "height": int(height), "type": "image"}}


PADDLEX_ROUTE = PaddleXRoute(path="/ocr", image_field="file", params=_params, result=_result)
