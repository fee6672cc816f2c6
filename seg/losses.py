"""Segmentation losses, as in PaddleSeg's ``paddleseg/models/losses``: each takes ``(logits, labels)``.

``logits`` are ``(N, C, H, W)`` and ``labels`` ``(N, H, W)`` class indices, with ``ignore_index`` pixels counting
for nothing. Which loss, and which coefficient, applies to which of a model's outputs is the task's business
(:class:`~oarkit.seg.task.SegmentationTask`); :class:`MixedLoss` sums several losses on one output.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.errors import ConfigError


def _one_hot(labels: torch.Tensor, num_classes: int, ignore_index: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(N, C, H, W)`` one-hot targets (zero at ignored pixels) and the ``(N, 1, H, W)`` valid mask."""
    valid = labels != ignore_index
    safe = torch.where(valid, labels, torch.zeros_like(labels))
    onehot = F.one_hot(safe, num_classes).permute(0, 3, 1, 2).to(torch.float32)
    mask = valid.unsqueeze(1).to(torch.float32)
    return onehot * mask, mask


class CrossEntropyLoss(nn.Module):
    """Pixel-wise cross-entropy, averaged over the pixels that are not ignored.

    Args:
        weight: one weight per class (class-balanced training); the mean is then weighted too, as in
            ``torch.nn.functional.cross_entropy``.
        ignore_index: the label to leave out.
        label_smoothing: label smoothing in [0, 1).
    """

    def __init__(self, weight: Sequence[float] | None = None, ignore_index: int = 255,
                 label_smoothing: float = 0.0) -> None:
        super().__init__()
        if not 0.0 <= label_smoothing < 1.0:
            raise ConfigError(f"label_smoothing={label_smoothing!r} must lie in [0, 1)")
        self.register_buffer("weight", None if weight is None else torch.tensor(list(weight), dtype=torch.float32))
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        if self.weight is not None and self.weight.numel() != logits.shape[1]:
            raise ConfigError(f"CrossEntropyLoss has {self.weight.numel()} class weights for {logits.shape[1]} classes")
        if not (labels != self.ignore_index).any():
            return logits.sum() * 0.0  # every pixel ignored: a zero that keeps the graph
        weight = None if self.weight is None else self.weight.to(logits.device)  # losses live outside the model
        return F.cross_entropy(logits.float(), labels, weight=weight, ignore_index=self.ignore_index,
                               label_smoothing=self.label_smoothing)


class OhemCrossEntropyLoss(nn.Module):
    """Online hard example mining: cross-entropy over the pixels whose true-class probability is below a threshold.

    The threshold is ``thresh``, raised to the ``min_kept``-th smallest true-class probability when that is larger,
    so at least ``min_kept`` pixels count. With ``min_kept`` at or above the number of valid pixels, every valid
    pixel counts (PaddleSeg's rule).

    Args:
        thresh: probability under which a pixel is "hard".
        min_kept: the smallest number of pixels kept per batch.
        ignore_index: the label to leave out.
    """

    def __init__(self, thresh: float = 0.7, min_kept: int = 10000, ignore_index: int = 255) -> None:
        super().__init__()
        if not 0 < thresh <= 1 or min_kept < 0:
            raise ConfigError(f"OhemCrossEntropyLoss needs 0 < thresh <= 1 and min_kept >= 0, got {thresh}, {min_kept}")
        self.thresh, self.min_kept, self.ignore_index = float(thresh), int(min_kept), ignore_index

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        valid = labels != self.ignore_index
        num_valid = int(valid.sum())
        if num_valid == 0:
            return logits.sum() * 0.0
        keep = valid
        if self.min_kept < num_valid:
            with torch.no_grad():
                safe = torch.where(valid, labels, torch.zeros_like(labels))
                prob = logits.softmax(dim=1).gather(1, safe.unsqueeze(1)).squeeze(1)
                prob = torch.where(valid, prob, torch.ones_like(prob))
                threshold = self.thresh
                if self.min_kept > 0:
                    kth = prob.flatten().kthvalue(min(self.min_kept, prob.numel())).values
                    threshold = max(threshold, float(kth))
                keep = valid & (prob < threshold)
        loss = F.cross_entropy(logits, torch.where(keep, labels, torch.full_like(labels, self.ignore_index)),
                               ignore_index=self.ignore_index, reduction="sum")
        return loss / keep.sum().clamp(min=1)


class DiceLoss(nn.Module):
    """``1 - mean_c (2 |P_c ∩ G_c| + s) / (|P_c| + |G_c| + s)`` over softmax probabilities, batch-wide per class.

    Args:
        smooth: the smoothing term ``s``.
        weight: per-class weights of the dice terms (default equal).
        ignore_index: the label to leave out.
    """

    def __init__(self, smooth: float = 1.0, weight: Sequence[float] | None = None, ignore_index: int = 255) -> None:
        super().__init__()
        self.smooth, self.ignore_index = float(smooth), ignore_index
        self.weight = None if weight is None else [float(w) for w in weight]

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        onehot, mask = _one_hot(labels, logits.shape[1], self.ignore_index)
        probs = logits.float().softmax(dim=1) * mask
        dims = (0, 2, 3)
        intersection = (probs * onehot).sum(dims)
        cardinality = (probs + onehot).sum(dims)
        dice = (2 * intersection + self.smooth) / (cardinality + self.smooth)
        if self.weight is not None:
            w = dice.new_tensor(self.weight)
            return 1 - (dice * w).sum() / w.sum()
        return 1 - dice.mean()


class BCELoss(nn.Module):
    """Binary cross-entropy with logits: one channel against a 0/1 label, or C channels against one-hot labels.

    Args:
        pos_weight: weight of the positive term (foreground-heavy training).
        ignore_index: the label to leave out.
    """

    def __init__(self, pos_weight: float | None = None, ignore_index: int = 255) -> None:
        super().__init__()
        self.pos_weight, self.ignore_index = pos_weight, ignore_index

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        if logits.shape[1] == 1:
            mask = (labels != self.ignore_index).unsqueeze(1).float()
            target = torch.where(labels == self.ignore_index, torch.zeros_like(labels), labels).unsqueeze(1).float()
            if target.max() > 1:
                raise ValueError("BCELoss on a single-channel output needs labels 0 and 1 (and the ignore index)")
        else:
            target, mask = _one_hot(labels, logits.shape[1], self.ignore_index)
            mask = mask.expand_as(target)
        pos = None if self.pos_weight is None else logits.new_tensor(self.pos_weight)
        loss = F.binary_cross_entropy_with_logits(logits, target, pos_weight=pos, reduction="none")
        return (loss * mask).sum() / mask.sum().clamp(min=1)


def _lovasz_grad(gt_sorted: torch.Tensor) -> torch.Tensor:
    """Gradient of the Lovasz extension of the Jaccard loss with respect to the sorted errors."""
    gts = gt_sorted.sum()
    intersection = gts - gt_sorted.cumsum(0)
    union = gts + (1 - gt_sorted).cumsum(0)
    jaccard = 1.0 - intersection / union
    if gt_sorted.numel() > 1:
        jaccard[1:] = jaccard[1:] - jaccard[:-1]
    return jaccard


class LovaszSoftmaxLoss(nn.Module):
    """The Lovasz-softmax loss, a convex surrogate of 1 - IoU averaged over classes.

    "The Lovász-Softmax loss: A tractable surrogate for the optimization of the intersection-over-union measure in
    neural networks", Berman et al., CVPR 2018, https://arxiv.org/abs/1705.08790.

    Args:
        ignore_index: the label to leave out.
        classes: ``"present"`` (classes in the labels) or ``"all"``.
    """

    def __init__(self, ignore_index: int = 255, classes: str = "present") -> None:
        super().__init__()
        if classes not in ("present", "all"):
            raise ConfigError(f"LovaszSoftmaxLoss classes={classes!r} must be 'present' or 'all'")
        self.ignore_index, self.classes = ignore_index, classes

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        c = logits.shape[1]
        probs = logits.float().softmax(dim=1).permute(0, 2, 3, 1).reshape(-1, c)
        labels = labels.reshape(-1)
        valid = labels != self.ignore_index
        probs, labels = probs[valid], labels[valid]
        if labels.numel() == 0:
            return logits.sum() * 0.0
        losses = []
        for cls in range(c):
            fg = (labels == cls).float()
            if self.classes == "present" and fg.sum() == 0:
                continue
            errors = (fg - probs[:, cls]).abs()
            errors_sorted, perm = errors.sort(descending=True)
            losses.append(torch.dot(errors_sorted, _lovasz_grad(fg[perm])))
        return torch.stack(losses).mean() if losses else logits.sum() * 0.0


class MixedLoss(nn.Module):
    """A weighted sum of losses on the same output (PaddleSeg's ``MixedLoss``), e.g. CE 0.8 + Lovasz 0.2.

    Args:
        losses: the losses.
        coefs: one coefficient per loss.
    """

    def __init__(self, losses: Sequence[nn.Module], coefs: Sequence[float]) -> None:
        super().__init__()
        if len(losses) != len(coefs) or not losses:
            raise ConfigError(f"MixedLoss needs as many coefs as losses, got {len(coefs)} for {len(losses)}")
        self.losses = nn.ModuleList(losses)
        self.coefs = [float(c) for c in coefs]

    def forward(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return sum(c * loss(logits, labels) for c, loss in zip(self.coefs, self.losses))
