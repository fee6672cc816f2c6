"""What every oarkit detector shares: the target format, padded ground truths, anchor grids and box decoding.

See :mod:`oarkit.det.models` for the contract. The helpers mirror PaddleDetection's
``ppdet/modeling/assigners/utils.py`` (``pad_gt``, ``generate_anchors_for_grid_cell``) and ``bbox_utils.py``
(``batch_distance2bbox``) so that the ports assign and decode exactly as Paddle does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.errors import DataError

Target = dict[str, torch.Tensor]
#: ``(boxes [B, N, 4] xyxy input pixels, scores [B, N, C])``: what ``decode`` gives the shared post-processing
Decoded = tuple[torch.Tensor, torch.Tensor]


def check_targets(targets: Sequence[Target] | None, batch_size: int) -> list[Target]:
    """The targets of a training batch, checked: one dict per image with ``boxes`` [n, 4] and ``labels`` [n].

    Raises:
        DataError: missing, of another length than the batch, or with malformed entries.
    """
    if targets is None:
        raise DataError("a detector in train mode takes model(images, targets) with one dict(boxes=[n, 4] xyxy "
                        "pixels, labels=[n] int64) per image; call model.eval() for predictions")
    if len(targets) != batch_size:
        raise DataError(f"got {len(targets)} targets for {batch_size} images: give one dict per image")
    for i, t in enumerate(targets):
        if "boxes" not in t or "labels" not in t:
            raise DataError(f"target {i} has keys {sorted(t)}; it needs 'boxes' ([n, 4] xyxy) and 'labels' ([n])")
        if t["boxes"].ndim != 2 or t["boxes"].shape[-1] != 4 or t["labels"].shape[0] != t["boxes"].shape[0]:
            raise DataError(f"target {i}: boxes {list(t['boxes'].shape)} must be [n, 4] and labels "
                            f"{list(t['labels'].shape)} [n]")
    return list(targets)


def pad_targets(targets: Sequence[Target], device: torch.device, dtype: torch.dtype = torch.float32
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad per-image targets to ``(labels [B, n, 1] int64, boxes [B, n, 4], mask [B, n, 1])``, Paddle's ``pad_gt``
    (mask 1.0 for a real box, 0.0 for padding)."""
    num_max = max((len(t["boxes"]) for t in targets), default=0)
    labels = torch.zeros(len(targets), num_max, 1, dtype=torch.long, device=device)
    boxes = torch.zeros(len(targets), num_max, 4, dtype=dtype, device=device)
    mask = torch.zeros(len(targets), num_max, 1, dtype=dtype, device=device)
    for i, t in enumerate(targets):
        n = len(t["boxes"])
        if n:
            labels[i, :n, 0] = t["labels"].to(device).long()
            boxes[i, :n] = t["boxes"].to(device, dtype)
            mask[i, :n] = 1.0
    return labels, boxes, mask


def anchor_points_and_strides(sizes: Sequence[tuple[int, int]], strides: Sequence[int], offset: float = 0.5, *,
                              device: torch.device | None = None, dtype: torch.dtype = torch.float32
                              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Grid-unit anchor points [N, 2] (``x + offset, y + offset`` per cell, level after level) and their strides
    [N, 1] for feature maps of ``sizes`` (height, width)."""
    points, stride_list = [], []
    for (h, w), stride in zip(sizes, strides):
        ys, xs = torch.meshgrid(torch.arange(h, device=device, dtype=dtype) + offset,
                                torch.arange(w, device=device, dtype=dtype) + offset, indexing="ij")
        points.append(torch.stack([xs, ys], dim=-1).reshape(-1, 2))
        stride_list.append(torch.full((h * w, 1), float(stride), device=device, dtype=dtype))
    return torch.cat(points), torch.cat(stride_list)


def grid_cell_anchors(sizes: Sequence[tuple[int, int]], strides: Sequence[int], cell_size: float = 5.0,
                      offset: float = 0.5, *, device: torch.device | None = None, dtype: torch.dtype = torch.float32
                      ) -> tuple[torch.Tensor, torch.Tensor, list[int], torch.Tensor]:
    """Paddle's ``generate_anchors_for_grid_cell``: square anchor boxes [N, 4] of ``cell_size * stride`` pixels
    around pixel-unit anchor points [N, 2], the anchors per level and the strides [N, 1]."""
    points, stride_tensor = anchor_points_and_strides(sizes, strides, offset, device=device, dtype=dtype)
    points = points * stride_tensor
    half = cell_size * stride_tensor * 0.5
    anchors = torch.cat([points - half, points + half], dim=-1)
    return anchors, points, [h * w for h, w in sizes], stride_tensor


def distance2bbox(points: torch.Tensor, distance: torch.Tensor) -> torch.Tensor:
    """xyxy boxes from points [..., 2] and left/top/right/bottom distances [..., 4] (``batch_distance2bbox``)."""
    lt, rb = distance.chunk(2, dim=-1)
    return torch.cat([points - lt, points + rb], dim=-1)


def bbox2distance(points: torch.Tensor, bbox: torch.Tensor, max_dis: float, eps: float = 0.01) -> torch.Tensor:
    """Left/top/right/bottom distances of xyxy boxes from points, clipped to ``[0, max_dis - eps]``."""
    return torch.cat([points - bbox[..., :2], bbox[..., 2:] - points], dim=-1).clamp(0, max_dis - eps)


class DetectionModel(nn.Module):
    """Base of the kit's native detectors: the contract's ``decode`` and the epoch switch of their assigners.

    A subclass sets ``num_classes`` and ``static_assigner_epoch`` (training epochs that use the warm-up ATSS
    assigner before the task-aligned one; 0 for none) and implements ``forward`` and ``decode``.
    """

    num_classes: int
    static_assigner_epoch: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Tell the model the (0-based) training epoch: the assigner switch reads it (Paddle's ``epoch_id``)."""
        self.epoch = int(epoch)

    def decode(self, raw: Any) -> Decoded:
        """Boxes [B, N, 4] (xyxy input pixels) and scores [B, N, C] of the eval outputs ``raw``, before NMS."""
        raise NotImplementedError

    def distill_layers(self) -> dict[str, str]:
        """The head's layers whose outputs knowledge distillation matches, in train and eval mode alike, each with
        what it returns: ``"class"`` (per-class sigmoid logits ``[B, C, H, W]``), ``"bins"`` (distance-bin logits
        ``[B, 4 * (reg_max + 1), H, W]``) or ``"class+bins"`` (both, the classes first). ``{}``: none declared."""
        return {}

    def losses_to_dict(self, **losses: torch.Tensor) -> dict[str, torch.Tensor]:
        """The train-mode result: every named loss as a 0-d tensor, their weighted total under ``loss`` first."""
        out = {k: v.reshape(()) if v.numel() == 1 else v.sum() for k, v in losses.items()}
        return {"loss": out.pop("loss"), **out}
