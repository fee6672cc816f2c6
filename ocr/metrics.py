"""OCR metrics: detection precision / recall / hmean at polygon IoU 0.5 (PaddleOCR's ``DetectionIoUEvaluator``,
with shapely), recognition line accuracy, normalised edit distance and character error rate, orientation accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from shapely.geometry import Polygon

from oarkit.core.engine.metric import Metric


def edit_distance(a: Sequence[Any], b: Sequence[Any]) -> int:
    """The Levenshtein distance between two strings, or any two sequences of comparable items (insertions,
    deletions, substitutions: 1 each)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def character_error_rate(predictions: Sequence[str], references: Sequence[str]) -> float:
    """Edits needed to turn the predictions into the references, over the references' characters."""
    edits = sum(edit_distance(p, r) for p, r in zip(predictions, references))
    return edits / max(1, sum(len(r) for r in references))


def _polygon(points: np.ndarray) -> Polygon:
    poly = Polygon(np.asarray(points, dtype=np.float64).reshape(-1, 2))
    return poly if poly.is_valid else poly.buffer(0)


def match_detections(gt: Sequence[np.ndarray], ignores: Sequence[bool], pred: Sequence[np.ndarray], *,
                     iou_threshold: float = 0.5, area_precision: float = 0.5) -> dict[str, int]:
    """Count one image's matches as ICDAR's evaluation does.

    Predictions lying mostly (``area_precision``) inside a don't-care region are left out; the rest match
    ground-truth regions one to one, greedily in order, where their IoU passes ``iou_threshold``.

    Returns:
        ``{"gt": cared ground truth, "pred": cared predictions, "matched": matches}``.
    """
    gt_polys = [_polygon(g) for g in gt]
    pred_polys = [_polygon(p) for p in pred]
    dont_care = [i for i, ig in enumerate(ignores) if ig]
    pred_dont_care = set()
    for j, p in enumerate(pred_polys):
        if p.area <= 0:
            pred_dont_care.add(j)
            continue
        for i in dont_care:
            if p.intersection(gt_polys[i]).area / p.area > area_precision:
                pred_dont_care.add(j)
                break
    gt_matched, pred_matched = set(), set()
    matched = 0
    for i, g in enumerate(gt_polys):
        if i in dont_care:
            continue
        for j, p in enumerate(pred_polys):
            if j in pred_dont_care or j in pred_matched or i in gt_matched:
                continue
            union = g.union(p).area
            if union > 0 and g.intersection(p).area / union > iou_threshold:
                gt_matched.add(i)
                pred_matched.add(j)
                matched += 1
    return {"gt": len(gt_polys) - len(dont_care), "pred": len(pred_polys) - len(pred_dont_care), "matched": matched}


class DetMetric(Metric):
    """Text-detection precision, recall and hmean (main indicator) over every image.

    ``update`` takes the task's outputs (per image: ``{"boxes": [N, 4, 2]}`` in source coordinates) and the batch
    (``polys`` and ``ignores`` per image); each image's counts are kept and gathered across ranks.
    """

    main_indicator = "hmean"
    full_scale = 1.0  # a fraction, as PaddleOCR reports it

    def __init__(self, iou_threshold: float = 0.5) -> None:
        self.iou_threshold = float(iou_threshold)
        super().__init__()

    def reset(self) -> None:
        self.results = []

    def update(self, outputs: Any, batch: Any) -> None:
        for out, gt, ignores in zip(outputs, batch["polys"], batch["ignores"]):
            self.results.append(match_detections(gt, ignores, list(out["boxes"]), iou_threshold=self.iou_threshold))

    def compute(self) -> dict[str, Any]:
        gt = sum(r["gt"] for r in self.results)
        pred = sum(r["pred"] for r in self.results)
        matched = sum(r["matched"] for r in self.results)
        precision = matched / pred if pred else 0.0
        recall = matched / gt if gt else 0.0
        hmean = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "hmean": hmean, "num_images": len(self.results)}


class RecMetric(Metric):
    """Recognition line accuracy (main indicator), normalised edit distance (PaddleOCR's ``norm_edit_dis``:
    1 minus the mean of ``distance / max(len)``) and character error rate.

    ``update`` takes decoded lines (objects with ``.text``) and the batch's ``texts``.

    Args:
        ignore_space: compare without spaces (PaddleOCR's default).
    """

    main_indicator = "acc"
    full_scale = 1.0  # a fraction, as PaddleOCR reports it
    tie_breaker = "norm_edit_dis"
    tie_breaker_higher_is_better = True

    def __init__(self, ignore_space: bool = True) -> None:
        self.ignore_space = bool(ignore_space)
        super().__init__()

    def reset(self) -> None:
        self.results = []

    def update(self, outputs: Any, batch: Any) -> None:
        for out, ref in zip(outputs, batch["texts"]):
            pred = out.text if hasattr(out, "text") else str(out)
            if self.ignore_space:
                pred, ref = pred.replace(" ", ""), ref.replace(" ", "")
            self.results.append((pred, ref))

    def compute(self) -> dict[str, Any]:
        n = len(self.results)
        if n == 0:
            return {"acc": 0.0, "norm_edit_dis": 0.0, "cer": 0.0, "num_lines": 0}
        correct = sum(p == r for p, r in self.results)
        ned = sum(edit_distance(p, r) / max(len(p), len(r), 1) for p, r in self.results) / n
        cer = character_error_rate([p for p, _ in self.results], [r for _, r in self.results])
        return {"acc": correct / n, "norm_edit_dis": 1 - ned, "cer": cer, "num_lines": n}


class ClsMetric(Metric):
    """Orientation accuracy: ``update`` takes ``[B, 2]`` scores and the batch's ``labels``."""

    main_indicator = "acc"
    full_scale = 1.0  # a fraction, as PaddleOCR reports it

    def reset(self) -> None:
        self.state = {"correct": torch.zeros(()), "total": torch.zeros(())}

    def update(self, outputs: Any, batch: Any) -> None:
        pred = outputs.argmax(dim=1).cpu()
        self.state["correct"] += (pred == batch["labels"].cpu()).sum()
        self.state["total"] += len(pred)

    def compute(self) -> dict[str, Any]:
        total = float(self.state["total"])
        return {"acc": float(self.state["correct"]) / total if total else 0.0, "num_lines": int(total)}
