"""Detection metrics: COCO mAP (through faster-coco-eval) and Pascal VOC mAP (11-point or area), with PR curves.

Both keep one result per image (its detections and ground truth in the image's own pixels) in ``Metric.results``,
gathered from every rank before ``compute()``; the images are sorted by id, so the number does not depend on how
the evaluation was sharded or batched.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from oarkit.core.engine.metric import Metric
from oarkit.core.errors import ConfigError

logger = logging.getLogger(__name__)

#: COCO's summary numbers, in the order of ``COCOeval.stats``
COCO_KEYS = ("map", "map50", "map75", "map_small", "map_medium", "map_large")


def image_results(outputs: Sequence[dict[str, torch.Tensor]], targets: Sequence[dict[str, Any]]) -> list[dict]:
    """One picklable entry per image: detections and ground truth mapped back to the image's own pixels.

    Args:
        outputs: per image ``{"boxes" [K, 4] (input pixels), "scores" [K], "labels" [K]}``.
        targets: the batch's target dicts (``boxes``, ``labels``, ``iscrowd``, ``image_id``, ``scale`` as
            ``(sy, sx)`` input over original pixels, ``orig_size`` as ``(h, w)``).
    """
    entries = []
    for out, tgt in zip(outputs, targets):
        sy, sx = (float(v) for v in tgt["scale"])
        factor = np.array([sx, sy, sx, sy], np.float64)
        gt_boxes = tgt["boxes"].detach().cpu().double().numpy().reshape(-1, 4) / factor
        entries.append({
            "image_id": int(tgt["image_id"]),
            "size": [int(v) for v in tgt["orig_size"]],
            "boxes": out["boxes"].detach().cpu().double().numpy().reshape(-1, 4) / factor,
            "scores": out["scores"].detach().cpu().double().numpy().reshape(-1),
            "labels": out["labels"].detach().cpu().numpy().astype(np.int64).reshape(-1),
            "gt_boxes": gt_boxes,
            "gt_labels": tgt["labels"].detach().cpu().numpy().astype(np.int64).reshape(-1),
            "gt_ignore": tgt["iscrowd"].detach().cpu().numpy().astype(bool).reshape(-1),
        })
    return entries


class DetectionMetric(Metric):
    """Shared parts: per-image results, sorted and de-duplicated by image id before computing."""

    main_indicator = "map"
    full_scale = 1.0  # mAP is a fraction: an export tolerance of 1 point is 0.01 mAP

    def __init__(self, num_classes: int, class_names: Sequence[str] | None = None) -> None:
        if num_classes < 1:
            raise ConfigError(f"a detection metric needs at least one class, got num_classes={num_classes}")
        self.num_classes = int(num_classes)
        self.class_names = list(class_names or [f"class_{i}" for i in range(num_classes)])
        #: per class, ``(recall [R], precision [R])`` of the last ``compute()`` (for :meth:`plot_pr_curves`)
        self.pr_curves: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        super().__init__()

    def reset(self) -> None:
        self.results = []
        self.pr_curves = {}

    def update(self, outputs: Any, batch: Any) -> None:
        self.results.extend(image_results(outputs, batch[1]))

    def images(self) -> list[dict]:
        """The results, one per image id (a sharded sampler may repeat images to even out ranks), by id."""
        return sorted({r["image_id"]: r for r in self.results}.values(), key=lambda r: r["image_id"])

    def per_class(self, ap: Sequence[float | None]) -> dict[str, float]:
        """``ap/<class name>`` for every class with ground truth."""
        return {f"ap/{self.class_names[c]}": float(v) for c, v in enumerate(ap) if v is not None}

    def plot_pr_curves(self, path: str | os.PathLike, title: str = "precision-recall") -> str:
        """Save the per-class precision-recall curves of the last ``compute()`` as one PNG; return its path."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6.4, 5.2))
        for c, (recall, precision) in sorted(self.pr_curves.items()):
            ax.plot(recall, precision, linewidth=1.4, label=self.class_names[c])
        if self.pr_curves:
            grid = np.linspace(0, 1, 101)
            mean = np.mean([np.interp(grid, r, p, right=0.0) for r, p in self.pr_curves.values()], axis=0)
            ax.plot(grid, mean, color="black", linewidth=2.4, label="mean")
        ax.set(xlim=(0, 1), ylim=(0, 1.02), xlabel="recall", ylabel="precision", title=title)
        ax.grid(alpha=0.3)
        if self.pr_curves:
            ax.legend(loc="lower left", fontsize=8, ncol=1 + len(self.pr_curves) // 12)
        fig.tight_layout()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return str(path)


class COCOMetric(DetectionMetric):
    """COCO box mAP: ``map`` (IoU 0.5:0.95), ``map50``, ``map75``, ``map_small/medium/large`` (-1, as COCO's
    tools print it, when no ground-truth box has that size) and ``ap/<class>``.

    Ground truth marked ``iscrowd`` (COCO) or ``difficult`` (VOC) is ignored as COCO ignores crowds. The PR
    curves are those at IoU 0.5, all areas, 100 detections.
    """

    def compute(self) -> dict[str, Any]:
        from faster_coco_eval import COCO, COCOeval_faster

        images = self.images()
        gt: dict[str, Any] = {"images": [], "annotations": [],
                              "categories": [{"id": c, "name": n} for c, n in enumerate(self.class_names)]}
        dets = []
        for r in images:
            h, w = r["size"]
            gt["images"].append({"id": r["image_id"], "height": h, "width": w})
            for box, label, crowd in zip(r["gt_boxes"], r["gt_labels"], r["gt_ignore"]):
                bw, bh = float(box[2] - box[0]), float(box[3] - box[1])
                gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": r["image_id"],
                                          "category_id": int(label), "bbox": [float(box[0]), float(box[1]), bw, bh],
                                          "area": bw * bh, "iscrowd": int(crowd)})
            for box, score, label in zip(r["boxes"], r["scores"], r["labels"]):
                dets.append([r["image_id"], box[0], box[1], box[2] - box[0], box[3] - box[1], score, label])
        if not gt["annotations"]:
            logger.warning("COCO mAP of %d images without ground truth is 0", len(images))
            return {**dict.fromkeys(COCO_KEYS, 0.0), "num_images": len(images)}
        coco = COCO(gt)
        result = coco.loadRes(np.asarray(dets, np.float64).reshape(-1, 7)) if dets else coco.loadRes([])
        evaluator = COCOeval_faster(coco, result, "bbox", print_function=logger.debug)
        evaluator.run()
        stats = [float(v) for v in evaluator.stats[: len(COCO_KEYS)]]  # -1: no ground truth of that size
        precision = evaluator.eval["precision"]  # [IoU 10, recall 101, class, area 4, max dets 3]
        recall_grid = np.linspace(0, 1, precision.shape[1])
        ap: list[float | None] = []
        self.pr_curves = {}
        present = {int(a["category_id"]) for a in gt["annotations"] if not a["iscrowd"]}
        for c in range(self.num_classes):
            if c not in present:
                ap.append(None)
                continue
            p = precision[:, :, c, 0, -1]
            ap.append(float(p[p > -1].mean()) if (p > -1).any() else 0.0)
            curve = precision[0, :, c, 0, -1]
            self.pr_curves[c] = (recall_grid, np.where(curve > -1, curve, 0.0))
        return {**dict(zip(COCO_KEYS, stats)), **self.per_class(ap), "num_images": len(images)}


def voc_ap(recall: np.ndarray, precision: np.ndarray, map_type: str) -> float:
    """Average precision of one class: ``11point`` (VOC2007) or ``area`` (VOC2010+, every recall change)."""
    if map_type == "11point":
        return float(np.mean([precision[recall >= t].max() if (recall >= t).any() else 0.0
                              for t in np.linspace(0, 1, 11)]))
    mrec = np.concatenate([[0.0], recall, [1.0]])
    mpre = np.concatenate([[0.0], precision, [0.0]])
    mpre = np.maximum.accumulate(mpre[::-1])[::-1]
    steps = np.where(mrec[1:] != mrec[:-1])[0]
    return float(np.sum((mrec[steps + 1] - mrec[steps]) * mpre[steps + 1]))


class VOCMetric(DetectionMetric):
    """Pascal VOC mAP at one IoU threshold: ``map`` (mean of ``ap/<class>`` over classes with ground truth).

    Args:
        num_classes: the class count.
        class_names: names for ``ap/<class>`` and the picture.
        map_type: ``11point`` (VOC2007, PaddleDetection's default) or ``area``.
        iou_threshold: a detection matches a ground-truth box of its class at this IoU or more.
    """

    def __init__(self, num_classes: int, class_names: Sequence[str] | None = None, *, map_type: str = "11point",
                 iou_threshold: float = 0.5) -> None:
        if map_type not in ("11point", "area"):
            raise ConfigError(f"VOC map_type={map_type!r} must be '11point' or 'area'")
        self.map_type, self.iou_threshold = map_type, float(iou_threshold)
        super().__init__(num_classes, class_names)

    def compute(self) -> dict[str, Any]:
        from oarkit.core.export.compare import box_iou

        images = self.images()
        ap: list[float | None] = []
        self.pr_curves = {}
        for c in range(self.num_classes):
            scored: list[tuple[float, bool]] = []
            positives = 0
            for r in images:
                gt_mask = r["gt_labels"] == c
                gt, ignore = r["gt_boxes"][gt_mask], r["gt_ignore"][gt_mask]
                positives += int((~ignore).sum())
                mine = r["labels"] == c
                boxes, scores = r["boxes"][mine], r["scores"][mine]
                order = np.argsort(-scores, kind="stable")
                iou = box_iou(torch.from_numpy(boxes[order]), torch.from_numpy(gt)).numpy() if len(gt) else None
                used = np.zeros(len(gt), bool)
                for rank, i in enumerate(order):
                    if iou is None:
                        scored.append((float(scores[i]), False))
                        continue
                    j = int(iou[rank].argmax())
                    if iou[rank, j] >= self.iou_threshold:
                        if ignore[j]:
                            continue  # a difficult box neither counts nor penalises
                        scored.append((float(scores[i]), not used[j]))
                        used[j] = True
                    else:
                        scored.append((float(scores[i]), False))
            if positives == 0:
                ap.append(None)
                continue
            scored.sort(key=lambda t: -t[0])
            hits = np.array([t[1] for t in scored], bool)
            tp, fp = np.cumsum(hits), np.cumsum(~hits)
            recall = tp / positives if len(hits) else np.zeros(0)
            precision = tp / np.maximum(tp + fp, 1) if len(hits) else np.zeros(0)
            ap.append(voc_ap(recall, precision, self.map_type))
            self.pr_curves[c] = (recall, precision)
        values = [v for v in ap if v is not None]
        return {"map": float(np.mean(values)) if values else 0.0, **self.per_class(ap), "num_images": len(images)}
