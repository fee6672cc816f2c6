"""Detection post-processing shared by the task, the predictor and the export wrapper: multiclass NMS with
fixed-size outputs.

One function, :func:`multiclass_nms`, turns decoded boxes ``[B, N, 4]`` and class scores ``[B, N, C]`` into
``max_detections`` rows per image plus a count, with the same code in eager PyTorch and in an exported graph:

- the candidates are the ``pre_nms_top_k`` (at most 1000) best ``(box, class)`` pairs of each image: measured with
  torch 2.14.1, ``torchvision.ops.batched_nms`` on more than 1000 boxes fails under ``torch.onnx.export(dynamo=True)``
  (a data-dependent guard), and so does a score threshold before NMS;
- one ``torchvision.ops.nms`` over every image and class at once, each (image, class) pair shifted to its own
  coordinate range, exports as ``TopK + NonMaxSuppression``;
- the score threshold comes after NMS. It changes nothing: NMS visits boxes by descending score, so a box under
  the threshold can only suppress boxes under it too;
- the survivors are scattered into a mask and the best ``max_detections`` of each image taken with ``topk``, so
  every output has a fixed shape and ``num`` says how many rows of each image are real (rows past it hold zeros).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import torch
import torchvision

from oarkit.core.errors import ConfigError

#: the most candidates per image that NMS sees (the export limit measured above)
MAX_PRE_NMS = 1000


@dataclass(frozen=True)
class NMSConfig:
    """Settings of :func:`multiclass_nms` (PaddleDetection's ``MultiClassNMS``: ``score_threshold``,
    ``nms_threshold``, ``nms_top_k``, ``keep_top_k``).

    Attributes:
        score_threshold: detections scoring below this are dropped.
        iou_threshold: boxes of one class overlapping a better one by more than this are suppressed.
        pre_nms_top_k: candidates per image before NMS (at most 1000, see the module docstring).
        max_detections: rows per image after NMS (COCO scores 100).
    """

    score_threshold: float = 0.01
    iou_threshold: float = 0.6
    pre_nms_top_k: int = MAX_PRE_NMS
    max_detections: int = 100

    def __post_init__(self) -> None:
        if not 0 < self.pre_nms_top_k <= MAX_PRE_NMS:
            raise ConfigError(f"pre_nms_top_k={self.pre_nms_top_k} must lie in [1, {MAX_PRE_NMS}]: NMS on more "
                              "candidates does not export (torch.onnx.export, dynamo=True)")
        if self.max_detections < 1:
            raise ConfigError(f"max_detections={self.max_detections} must be at least 1")
        if not 0 < self.iou_threshold <= 1 or not 0 <= self.score_threshold < 1:
            raise ConfigError(f"iou_threshold={self.iou_threshold} must lie in (0, 1] and score_threshold="
                              f"{self.score_threshold} in [0, 1)")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def multiclass_nms(boxes: torch.Tensor, scores: torch.Tensor, config: NMSConfig = NMSConfig()
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-class NMS of a batch, with fixed-size outputs (see the module docstring).

    Args:
        boxes: ``[B, N, 4]`` boxes ``x1, y1, x2, y2`` in input pixels.
        scores: ``[B, N, C]`` class probabilities.
        config: thresholds and sizes.

    Returns:
        ``(boxes [B, K, 4], scores [B, K], labels [B, K] int64, num [B] int64)`` with ``K`` the smaller of
        ``max_detections`` and the candidate count; each image's rows are sorted by descending score and rows from
        ``num`` on are zeros.
    """
    batch, n, num_classes = scores.shape
    boxes, scores = boxes.float(), scores.float()
    k = min(config.pre_nms_top_k, n * num_classes)
    top_scores, flat = scores.reshape(batch, n * num_classes).topk(k, dim=1)  # [B, k], sorted
    box_index, labels = flat // num_classes, flat % num_classes
    cand = torch.gather(boxes, 1, box_index.unsqueeze(-1).expand(batch, k, 4))  # [B, k, 4]
    # Each (image, class) pair gets its own range of coordinates, so one NMS never mixes them.
    span = cand.abs().max() + 1.0
    group = torch.arange(batch, device=boxes.device).unsqueeze(1) * num_classes + labels
    shifted = (cand + (group.to(cand.dtype) * span).unsqueeze(-1)).reshape(batch * k, 4)
    keep = torchvision.ops.nms(shifted, top_scores.reshape(batch * k), config.iou_threshold)
    kept = torch.zeros(batch * k, dtype=torch.bool, device=boxes.device)
    kept[keep] = True
    kept = kept.reshape(batch, k) & (top_scores >= config.score_threshold)
    masked = torch.where(kept, top_scores, torch.full_like(top_scores, -1.0))
    out_k = min(config.max_detections, k)
    best, order = masked.topk(out_k, dim=1)  # kept rows first, by score
    valid = best >= 0
    out_boxes = torch.gather(cand, 1, order.unsqueeze(-1).expand(batch, out_k, 4)) * valid.unsqueeze(-1)
    out_scores = best.clamp(min=0.0)
    out_labels = torch.gather(labels, 1, order) * valid
    return out_boxes, out_scores, out_labels, valid.sum(dim=1)


def split_detections(boxes: torch.Tensor, scores: torch.Tensor, labels: torch.Tensor, num: torch.Tensor
                     ) -> list[dict[str, torch.Tensor]]:
    """Fixed-size outputs of :func:`multiclass_nms` as one ``{"boxes", "scores", "labels"}`` dict per image."""
    return [{"boxes": b[:c], "scores": s[:c], "labels": lab[:c].long()}
            for b, s, lab, c in zip(boxes, scores, labels, num.tolist())]
