"""Classification and distribution losses of the GFL-style heads (PP-YOLOE, PicoDet), as PaddleDetection computes
them (``ppdet/modeling/heads/ppyoloe_head.py``, ``losses/varifocal_loss.py``, ``losses/gfocal_loss.py``).

- Varifocal loss ("VarifoNet", Zhang et al., 2021, https://arxiv.org/abs/2008.13367): binary cross-entropy on
  probabilities against IoU-aware targets, positives weighted by their target, negatives by
  ``alpha * p^gamma``.
- Distribution focal loss ("Generalized Focal Loss", Li et al., 2020, https://arxiv.org/abs/2006.04388):
  cross-entropy of the discrete distance distribution against the two integers around the target distance.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def varifocal_loss(pred_score: torch.Tensor, gt_score: torch.Tensor, label: torch.Tensor, *, alpha: float = 0.75,
                   gamma: float = 2.0) -> torch.Tensor:
    """PP-YOLOE's summed varifocal loss: ``pred_score`` probabilities, ``gt_score`` soft targets and the one-hot
    ``label`` of the positives, all [B, L, C]."""
    weight = alpha * pred_score.pow(gamma) * (1 - label) + gt_score * label
    with torch.autocast(pred_score.device.type, enabled=False):  # binary_cross_entropy refuses half precision
        return F.binary_cross_entropy(pred_score.float(), gt_score.float(), weight=weight.float().detach(),
                                      reduction="sum")


def varifocal_loss_iou_weighted(pred: torch.Tensor, target: torch.Tensor, *, alpha: float = 0.75,
                                gamma: float = 2.0) -> torch.Tensor:
    """PicoDet's varifocal loss on probabilities (``use_sigmoid=False``, ``iou_weighted=True``), summed over
    classes: [N]."""
    positive = (target > 0).to(pred.dtype)
    focal_weight = target * positive + alpha * (pred - target).abs().pow(gamma) * (1 - positive)
    with torch.autocast(pred.device.type, enabled=False):
        loss = F.binary_cross_entropy(pred.float(), target.float(), reduction="none")
    return (loss * focal_weight.detach()).sum(dim=1)


def distribution_focal_loss(pred_dist: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of ``pred_dist`` [..., reg_max + 1] logits against the two bins around ``target`` [...]."""
    left = target.floor().long()
    right = left + 1
    weight_left = right.to(target.dtype) - target
    weight_right = 1 - weight_left
    flat = pred_dist.reshape(-1, pred_dist.shape[-1])
    loss_left = F.cross_entropy(flat, left.reshape(-1), reduction="none").reshape(target.shape)
    loss_right = F.cross_entropy(flat, right.reshape(-1).clamp(max=pred_dist.shape[-1] - 1),
                                 reduction="none").reshape(target.shape)
    return loss_left * weight_left + loss_right * weight_right
