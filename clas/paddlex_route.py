"""PaddleX's ``POST /image-classification`` under ``oarkit serve``: ``{"image": "<base64>", "topk": 5}`` in,
``{"categories": [{"id", "name", "score"}, ...]}`` out (PaddleX's basic-serving image-classification schema)."""

from __future__ import annotations

from typing import Any

from oarkit.core.kits import PaddleXRoute, paddlex_params


def _result(result: Any, image: Any) -> dict[str, Any]:
    return {"categories": [{"id": int(c), "name": str(n), "score": float(s)}
                           for c, n, s in zip(result.class_ids, result.labels, result.scores)]}


PADDLEX_ROUTE = PaddleXRoute(path="/image-classification", image_field="image",
                             params=lambda body: paddlex_params(body, {"topk": "topk"}, ("visualize",)),
                             result=_result)
