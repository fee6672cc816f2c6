"""PaddleX's ``POST /semantic-segmentation`` under ``oarkit serve``: ``{"image": "<base64>"}`` in,
``{"labelMap": [...], "size": [height, width]}`` out: the class of every pixel, row by row, at the image's own
resolution (PaddleX's basic-serving semantic-segmentation schema; ``targetSize`` is refused)."""

from __future__ import annotations

from typing import Any

from oarkit.core.kits import PaddleXRoute, paddlex_params


def _params(body: dict[str, Any]) -> dict[str, Any]:
    if body.get("targetSize") in (-1, [-1, -1]):  # PaddleX's "the image's own size", which is what we answer
        body = {k: v for k, v in body.items() if k != "targetSize"}
    return paddlex_params(body, {}, ("visualize",))


def _result(result: Any, image: Any) -> dict[str, Any]:
    height, width = result.label_map.shape
    return {"labelMap": result.label_map.reshape(-1).astype(int).tolist(), "size": [int(height), int(width)]}


PADDLEX_ROUTE = PaddleXRoute(path="/semantic-segmentation", image_field="image", params=_params, result=_result)
