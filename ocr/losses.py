"""OCR losses (PaddleOCR's ``DBLoss``, ``CTCLoss``, ``NRTRLoss``, ``SARLoss`` and ``MultiLoss``).

DB: balanced BCE with 3:1 hard-negative mining on the shrink map (times ``alpha``), masked L1 on the threshold map
(times ``beta``) and Dice on the approximate binary map. CTC over the recognizer's per-step logits; a guidance
head (NRTR for PP-OCRv4, SAR for PP-OCRv3) adds cross-entropy over its autoregressive predictions in training.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BalanceBCELoss(nn.Module):
    """Binary cross-entropy over positives and the hardest ``negative_ratio`` x as many negatives."""

    def __init__(self, negative_ratio: float = 3.0, eps: float = 1e-6) -> None:
        super().__init__()
        self.negative_ratio, self.eps = float(negative_ratio), float(eps)

    def forward(self, pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positive = gt * mask
        negative = (1 - gt) * mask
        positive_count = int(positive.sum())
        negative_count = min(int(negative.sum()), int(positive_count * self.negative_ratio))
        loss = F.binary_cross_entropy(pred.clamp(self.eps, 1 - self.eps), gt, reduction="none")
        positive_loss = (positive * loss).sum()
        negative_loss = (negative * loss).flatten()
        negative_loss = negative_loss.topk(negative_count).values if negative_count > 0 else negative_loss[:0]
        return (positive_loss + negative_loss.sum()) / (positive_count + negative_count + self.eps)


class MaskL1Loss(nn.Module):
    """Mean absolute error inside a mask."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = float(eps)

    def forward(self, pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return ((pred - gt).abs() * mask).sum() / (mask.sum() + self.eps)


class DiceLoss(nn.Module):
    """``1 - 2 |P ∩ G| / (|P| + |G|)`` inside a mask."""

    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = float(eps)

    def forward(self, pred: torch.Tensor, gt: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        intersection = (pred * gt * mask).sum()
        union = (pred * mask).sum() + (gt * mask).sum() + self.eps
        return 1 - 2.0 * intersection / union


class DBLoss(nn.Module):
    """The DB loss: ``alpha * BCE(shrink) + beta * L1(threshold) + Dice(binary)``.

    Args:
        alpha: weight of the shrink-map loss (PaddleOCR: 5).
        beta: weight of the threshold-map loss (PaddleOCR: 10).
        negative_ratio: hard negatives per positive in the balanced BCE (PaddleOCR's ``ohem_ratio``: 3).
    """

    def __init__(self, alpha: float = 5.0, beta: float = 10.0, negative_ratio: float = 3.0) -> None:
        super().__init__()
        self.alpha, self.beta = float(alpha), float(beta)
        self.bce = BalanceBCELoss(negative_ratio)
        self.l1 = MaskL1Loss()
        self.dice = DiceLoss()

    def forward(self, maps: torch.Tensor, targets: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``maps``: ``[B, 3, H, W]`` (shrink probability, threshold, binary); ``targets``: ``shrink_map``,
        ``shrink_mask``, ``threshold_map``, ``threshold_mask``, each ``[B, H, W]``."""
        maps = maps.float()
        shrink, threshold, binary = maps[:, 0], maps[:, 1], maps[:, 2]
        loss_shrink = self.alpha * self.bce(shrink, targets["shrink_map"], targets["shrink_mask"])
        loss_threshold = self.beta * self.l1(threshold, targets["threshold_map"], targets["threshold_mask"])
        loss_binary = self.dice(binary, targets["shrink_map"], targets["shrink_mask"])
        total = loss_shrink + loss_threshold + loss_binary
        return {"loss": total, "loss_shrink": loss_shrink.detach(), "loss_threshold": loss_threshold.detach(),
                "loss_binary": loss_binary.detach()}


class CTCLoss(nn.Module):
    """CTC over ``[B, T, C]`` logits (blank 0), summed per sample and averaged over the batch (PaddleOCR)."""

    def forward(self, logits: torch.Tensor, labels: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        log_probs = logits.float().log_softmax(dim=2).transpose(0, 1)  # [T, B, C]
        steps = torch.full((logits.shape[0],), logits.shape[1], dtype=torch.long, device=logits.device)
        loss = F.ctc_loss(log_probs, labels, steps, lengths.long(), blank=0, reduction="none", zero_infinity=True)
        return loss.mean()


class SequenceCELoss(nn.Module):
    """Cross-entropy of an autoregressive guidance head (NRTR, SAR) against its target sequence, ignoring padding.

    Args:
        ignore_index: the padding class of the targets.
        smoothing: label smoothing (PaddleOCR's NRTR: 0.1).
    """

    def __init__(self, ignore_index: int = 0, smoothing: float = 0.0) -> None:
        super().__init__()
        self.ignore_index, self.smoothing = int(ignore_index), float(smoothing)

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        steps = min(logits.shape[1], targets.shape[1])
        return F.cross_entropy(logits[:, :steps].float().reshape(-1, logits.shape[-1]),
                               targets[:, :steps].reshape(-1).long(), ignore_index=self.ignore_index,
                               label_smoothing=self.smoothing)
