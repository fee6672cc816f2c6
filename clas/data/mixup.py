"""Batch-level Mixup and CutMix with label smoothing, drawn from torch's RNG (reproducible under torch.manual_seed).

Mixup: Zhang et al., "mixup: Beyond Empirical Risk Minimization", https://arxiv.org/abs/1710.09412.
CutMix: Yun et al., "CutMix: Regularization Strategy to Train Strong Classifiers", https://arxiv.org/abs/1905.04899.
The batch is mixed with itself reversed, as in timm's ``Mixup(mode="batch")`` and PaddleClas' batch operators.
"""

from __future__ import annotations

import torch

from oarkit.core.errors import ConfigError


def smooth_one_hot(labels: torch.Tensor, num_classes: int, smoothing: float = 0.0) -> torch.Tensor:
    """One-hot float targets with ``smoothing`` spread evenly over all classes (rows sum to 1)."""
    off = smoothing / num_classes
    targets = torch.full((labels.shape[0], num_classes), off, device=labels.device, dtype=torch.float32)
    return targets.scatter_(1, labels.long().view(-1, 1), 1.0 - smoothing + off)


class MixupCutmix:
    """Mix a batch with its reverse by Mixup or CutMix and return soft targets.

    Args:
        mixup_alpha: Beta(alpha, alpha) parameter of the Mixup ratio; 0 turns Mixup off.
        cutmix_alpha: Beta(alpha, alpha) parameter of the CutMix ratio; 0 turns CutMix off.
        prob: probability of mixing a batch at all.
        switch_prob: with both on, probability of CutMix instead of Mixup.
        label_smoothing: smoothing applied to the one-hot targets before mixing.
        num_classes: number of classes of the soft targets.
    """

    def __init__(
        self,
        mixup_alpha: float = 0.0,
        cutmix_alpha: float = 0.0,
        prob: float = 1.0,
        switch_prob: float = 0.5,
        label_smoothing: float = 0.0,
        *,
        num_classes: int,
    ) -> None:
        if mixup_alpha < 0 or cutmix_alpha < 0:
            raise ConfigError(f"mixup_alpha={mixup_alpha!r}, cutmix_alpha={cutmix_alpha!r} must be >= 0 (0 is off)")
        for name, value in (("prob", prob), ("switch_prob", switch_prob), ("label_smoothing", label_smoothing)):
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{name}={value!r} must be in [0, 1]")
        if num_classes < 1:
            raise ConfigError(f"num_classes={num_classes!r} must be >= 1")
        self.mixup_alpha, self.cutmix_alpha = float(mixup_alpha), float(cutmix_alpha)
        self.prob, self.switch_prob = float(prob), float(switch_prob)
        self.label_smoothing = float(label_smoothing)
        self.num_classes = int(num_classes)

    @property
    def enabled(self) -> bool:
        return self.prob > 0 and (self.mixup_alpha > 0 or self.cutmix_alpha > 0)

    def _beta(self, alpha: float) -> float:
        a = torch.tensor(alpha, dtype=torch.float64)
        return float(torch.distributions.Beta(a, a).sample())

    def __call__(self, images: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mix ``images`` (N, C, H, W) and turn the int ``labels`` (N,) into soft targets (N, num_classes)."""
        if labels.ndim != 1 or labels.is_floating_point():
            raise ValueError(
                f"MixupCutmix expects int class labels of shape (N,), got {labels.dtype} {tuple(labels.shape)}"
            )
        targets = smooth_one_hot(labels, self.num_classes, self.label_smoothing)
        if not self.enabled or float(torch.rand(())) >= self.prob:
            return images, targets
        use_cutmix = self.cutmix_alpha > 0 and (self.mixup_alpha == 0 or float(torch.rand(())) < self.switch_prob)
        if use_cutmix:
            images, lam = self._cutmix(images, self._beta(self.cutmix_alpha))
        else:
            lam = self._beta(self.mixup_alpha)
            images = images * lam + images.flip(0) * (1.0 - lam)
        return images, targets * lam + targets.flip(0) * (1.0 - lam)

    def _cutmix(self, images: torch.Tensor, lam: float) -> tuple[torch.Tensor, float]:
        height, width = images.shape[-2:]
        ratio = (1.0 - lam) ** 0.5
        cut_h, cut_w = int(height * ratio), int(width * ratio)
        cy, cx = int(torch.randint(height, ())), int(torch.randint(width, ()))
        y0, y1 = max(cy - cut_h // 2, 0), min(cy + cut_h // 2, height)
        x0, x1 = max(cx - cut_w // 2, 0), min(cx + cut_w // 2, width)
        mixed = images.clone()
        mixed[..., y0:y1, x0:x1] = images.flip(0)[..., y0:y1, x0:x1]
        # The box is clipped at the borders, so the ratio is what was actually pasted.
        return mixed, 1.0 - (y1 - y0) * (x1 - x0) / float(height * width)
