"""PaddleX's ``POST /object-detection`` under ``oarkit serve``: ``{"image": "<base64>", "threshold": 0.5}`` in,
``{"detectedObjects": [{"bbox": [x1, y1, x2, y2], "categoryId", "categoryName", "score"}, ...]}`` out (PaddleX's
basic-serving object-detection schema; a per-class threshold dict is refused)."""

from __future__ import annotations

from typing import Any

from oarkit.core.kits import PaddleXRoute, paddlex_params


def _params(body: dict[str, Any]) -> dict[str, Any]:
    if isinstance(body.get("threshold"), dict):
        raise ValueError("threshold per class is not supported by oarkit serve; send one number for every class")
    return paddlex_params(body, {"threshold": "threshold"}, ("visualize",))


def _result(result: Any, image: Any) -> dict[str, Any]:
    return {"detectedObjects": [{"bbox": [float(v) for v in box], "categoryId": int(c), "categoryName": str(n),
                                 "score": float(s)}
                                for box, s, c, n in zip(result.boxes, result.scores, result.class_ids,
                                                        result.labels)]}


PADDLEX_ROUTE = PaddleXRoute(path="/object-detection", image_field="image", params=_params, result=_result)
