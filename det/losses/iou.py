"""The GIoU loss PP-YOLOE and PicoDet regress boxes with, as PaddleDetection's ``GIoULoss``
(``ppdet/modeling/losses/iou_loss.py``: epsilon 1e-10 in the union and the enclosing area).

"Generalized Intersection over Union", Rezatofighi et al., 2019, https://arxiv.org/abs/1902.09630.
"""

from __future__ import annotations

import torch
from torch import nn


def giou_loss(pred: torch.Tensor, target: torch.Tensor, eps: float = 1e-10) -> torch.Tensor:
    """``1 - GIoU`` of matching xyxy boxes ``pred`` and ``target`` [..., 4]: [..., 1]."""
    x1, y1, x2, y2 = pred.unbind(-1)
    x1g, y1g, x2g, y2g = target.unbind(-1)
    overlap = (torch.minimum(x2, x2g) - torch.maximum(x1, x1g)).clamp(min=0) * \
        (torch.minimum(y2, y2g) - torch.maximum(y1, y1g)).clamp(min=0)
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - overlap + eps
    iou = overlap / union
    area_c = (torch.maximum(x2, x2g) - torch.minimum(x1, x1g)) * (torch.maximum(y2, y2g) - torch.minimum(y1, y1g)) + eps
    return (1 - (iou - (area_c - union) / area_c)).unsqueeze(-1)


class GIoULoss(nn.Module):
    """``loss_weight * (1 - GIoU)`` per box pair, reduced by ``reduction`` (``none``, ``sum`` or ``mean``)."""

    def __init__(self, *, loss_weight: float = 1.0, eps: float = 1e-10, reduction: str = "none") -> None:
        super().__init__()
        if reduction not in ("none", "sum", "mean"):
            raise ValueError(f"GIoULoss reduction={reduction!r} must be 'none', 'sum' or 'mean'")
        self.loss_weight, self.eps, self.reduction = loss_weight, eps, reduction

    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        loss = giou_loss(pred, target, self.eps)
        if self.reduction == "sum":
            loss = loss.sum()
        elif self.reduction == "mean":
            loss = loss.mean()
        return loss * self.loss_weight
