"""Segmentation metrics from one confusion matrix, kept as a summable tensor so ranks reduce it with one all_reduce."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from oarkit.core.engine.metric import Metric
from oarkit.core.errors import ConfigError


class SegmentationMetric(Metric):
    """mIoU, per-class IoU and Dice, pixel accuracy, mean class accuracy and Cohen's kappa.

    State (int64, summed across ranks by :meth:`~oarkit.core.engine.metric.Metric.reduce`): ``confusion`` [C, C],
    rows the true class, columns the predicted one; ignored pixels are not counted. Means are over the classes
    that occur (in the labels or the predictions); a class that never occurs has IoU and Dice ``None``.

    Args:
        num_classes: number of classes ``C``.
        ignore_index: the label of pixels left out.
    """

    main_indicator = "miou"
    higher_is_better = True
    full_scale = 1.0  # mIoU is a fraction, as PaddleSeg reports it: an export tolerance of 1 point is 0.01 mIoU

    def __init__(self, num_classes: int, ignore_index: int = 255) -> None:
        if num_classes < 1:
            raise ConfigError(f"num_classes={num_classes!r} must be >= 1")
        self.num_classes, self.ignore_index = int(num_classes), int(ignore_index)
        super().__init__()

    def reset(self) -> None:
        self.state = {"confusion": torch.zeros(self.num_classes, self.num_classes, dtype=torch.int64)}

    @torch.no_grad()
    def update(self, outputs: torch.Tensor, batch: Any) -> None:
        """Add a batch: ``outputs`` are logits (N, C, H, W) or predicted labels (N, H, W); ``batch[1]`` the labels."""
        labels = batch[1] if isinstance(batch, (tuple, list)) else batch
        pred = outputs.argmax(dim=1) if outputs.ndim == 4 else outputs
        if pred.shape != labels.shape:
            raise ValueError(f"SegmentationMetric got predictions {tuple(pred.shape)} for labels {tuple(labels.shape)}")
        labels = labels.to(pred.device).long()
        valid = labels != self.ignore_index
        truth, pred = labels[valid], pred[valid].long()
        if truth.numel() and (truth.min() < 0 or truth.max() >= self.num_classes):
            raise ValueError(f"labels must be in [0, {self.num_classes}) or {self.ignore_index}, got "
                             f"{int(truth.min())}..{int(truth.max())}")
        counts = torch.bincount(truth * self.num_classes + pred, minlength=self.num_classes**2)
        self.state["confusion"] += counts.view(self.num_classes, self.num_classes).cpu()

    def compute(self) -> dict[str, Any]:
        """``miou``, ``acc``, ``class_acc``, ``kappa``, ``mdice`` in [0, 1], ``class_iou`` and ``class_dice``
        (lists, ``None`` for absent classes), ``num_pixels``."""
        cm = self.state["confusion"].double()
        tp = cm.diag()
        truth, predicted = cm.sum(dim=1), cm.sum(dim=0)
        union = truth + predicted - tp
        total = float(cm.sum())
        present = union > 0
        iou = torch.where(present, tp / union.clamp(min=1), torch.zeros_like(tp))
        dice = torch.where(present, 2 * tp / (truth + predicted).clamp(min=1), torch.zeros_like(tp))
        recall_present = truth > 0
        expected = float((truth * predicted).sum()) / total**2 if total else 0.0
        observed = float(tp.sum()) / total if total else 0.0
        return {
            "miou": float(iou[present].mean()) if present.any() else 0.0,
            "acc": observed,
            "class_acc": float((tp / truth.clamp(min=1))[recall_present].mean()) if recall_present.any() else 0.0,
            "kappa": (observed - expected) / (1 - expected) if expected < 1 else 0.0,
            "mdice": float(dice[present].mean()) if present.any() else 0.0,
            "class_iou": [float(v) if p else None for v, p in zip(iou, present)],
            "class_dice": [float(v) if p else None for v, p in zip(dice, present)],
            "num_pixels": int(total),
        }

    def plot_confusion(self, path: str | os.PathLike, label_names: Sequence[str] | None = None) -> str:
        """Save the row-normalised confusion matrix and the per-class IoU as one PNG; return its path.

        The figure grows with the number of classes up to about 20 inches wide; every class is named up to 50
        classes, every k-th one beyond; cell values are written up to 20 classes and IoU values up to 30.
        Classes that never occur are marked ``absent`` rather than drawn as an IoU of 0.
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        c = self.num_classes
        names = [str(n) for n in label_names] if label_names is not None else [str(i) for i in range(c)]
        if len(names) != c:
            raise ValueError(f"label_names has {len(names)} names for {c} classes")
        cm = self.state["confusion"].double()
        rows = (cm / cm.sum(dim=1, keepdim=True).clamp(min=1)).numpy()
        results = self.compute()
        side = min(max(5.0, 3.5 + 0.28 * c), 13.0)
        bars_width = max(4.5, 0.55 * side)
        fig = Figure(figsize=(side + 1.5 + bars_width, side), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        ax, bars = fig.subplots(1, 2, gridspec_kw={"width_ratios": [side + 1.5, bars_width]})
        image = ax.imshow(rows, cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02, label="fraction of the true class")
        step = math.ceil(c / 50)  # at most 50 names per axis; beyond, every step-th class
        ticks = list(range(0, c, step))
        tick_names = [names[i] for i in ticks]
        font = 9 if c <= 10 else 8 if c <= 30 else 7
        ax.set_xticks(ticks, labels=tick_names, rotation=90, fontsize=font)
        ax.set_yticks(ticks, labels=tick_names, fontsize=font)
        if c <= 20:
            cell_font = 12 if c <= 5 else 9 if c <= 10 else 7
            for i in range(c):
                for j in range(c):
                    if rows[i, j] > 0.005:
                        ax.text(j, i, f"{rows[i, j]:.2f}", ha="center", va="center", fontsize=cell_font,
                                color="white" if rows[i, j] > 0.5 else "black")
        named = "" if step == 1 else f" (one class in {step} named)"
        ax.set_xlabel(f"predicted{named}")
        ax.set_ylabel("true")
        ax.set_title(f"Pixel confusion — {results['num_pixels']:,} pixels, {c} classes")
        # The bars list the classes top to bottom in the matrix's order.
        ious = results["class_iou"]
        bars.barh(range(c), [v or 0.0 for v in ious], color="tab:blue", height=0.8)
        bars.set_ylim(c - 0.5, -0.5)
        bars.set_yticks(ticks, labels=tick_names, fontsize=font)
        for i, v in enumerate(ious):
            if v is None:
                bars.text(0.01, i, "absent", va="center", fontsize=7, color="grey")
            elif c <= 30:
                bars.text(min(v + 0.01, 0.88), i, f"{v:.2f}", va="center", fontsize=7)
        bars.set_xlim(0, 1)
        bars.set_xlabel("IoU")
        bars.grid(axis="x", alpha=0.3)
        bars.set_title(f"IoU per class — mIoU {results['miou']:.4f}, pixel accuracy {results['acc']:.4f}")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
        return str(path)
