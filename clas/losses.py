"""Classification losses: cross-entropy for hard or soft targets, with optional label smoothing."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.errors import ConfigError


class CrossEntropyLoss(nn.Module):
    """Cross-entropy over logits for int class targets (N,) or soft targets (N, C), with label smoothing.

    With smoothing ``e`` and ``C`` classes the target is ``(1 - e) * one_hot + e / C``.

    Args:
        label_smoothing: ``e`` in [0, 1).
    """

    def __init__(self, label_smoothing: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= label_smoothing < 1.0:
            raise ConfigError(f"label_smoothing={label_smoothing!r} must be in [0, 1) (0.1 is common)")
        self.label_smoothing = float(label_smoothing)

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if target.is_floating_point():
            if target.shape != logits.shape:
                raise ValueError(f"soft targets {tuple(target.shape)} must match logits {tuple(logits.shape)}")
            target = target.float()
        # float32 for a stable log-softmax when the model runs under bf16/fp16 autocast.
        return F.cross_entropy(logits.float(), target, label_smoothing=self.label_smoothing)

    def extra_repr(self) -> str:
        return f"label_smoothing={self.label_smoothing}"


class SoftTargetCrossEntropy(nn.Module):
    """``mean(sum(-target * log_softmax(logits)))`` for soft targets (N, C), e.g. from Mixup / CutMix."""

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        if target.shape != logits.shape:
            raise ValueError(f"soft targets {tuple(target.shape)} must match logits {tuple(logits.shape)}")
        return torch.sum(-target.float() * F.log_softmax(logits.float(), dim=-1), dim=-1).mean()
