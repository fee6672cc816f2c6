"""Segmentation metrics from one confusion matrix, kept as a summable tensor so ranks reduce it with one all_reduce."""

from __future__ import annotations

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
        """Save the row-normalised confusion matrix and the per-class IoU as one PNG; return its path."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        c = self.num_classes
        names = [str(n) for n in label_names] if label_names is not None else [str(i) for i in range(c)]
        if len(names) != c:
            raise ValueError(f"label_names has {len(names)} names for {c} classes")
        cm = self.state["confusion"].double()
        rows = (cm / cm.sum(dim=1, keepdim=True).clamp(min=1)).numpy()
        results = self.compute()
        side = min(4.0 + 0.35 * c, 24.0)
        fig = Figure(figsize=(side * 2 + 1.5, side), dpi=100)
        FigureCanvasAgg(fig)
        ax, bars = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
        image = ax.imshow(rows, cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="fraction of the true class")
        if c <= 50:
            ax.set_xticks(range(c), labels=names, rotation=90, fontsize=8)
            ax.set_yticks(range(c), labels=names, fontsize=8)
        if c <= 20:
            for i in range(c):
                for j in range(c):
                    if rows[i, j] > 0.005:
                        ax.text(j, i, f"{rows[i, j]:.2f}", ha="center", va="center", fontsize=7,
                                color="white" if rows[i, j] > 0.5 else "black")
        ax.set_xlabel("predicted")
        ax.set_ylabel("true")
        ax.set_title(f"Pixel confusion — {results['num_pixels']:,} pixels")
        ious = [v or 0.0 for v in results["class_iou"]]
        bars.barh(range(c)[::-1], ious, color="tab:blue")
        bars.set_yticks(range(c)[::-1], labels=names if c <= 50 else [""] * c, fontsize=8)
        bars.set_xlim(0, 1)
        bars.set_xlabel("IoU")
        bars.set_title(f"mIoU {results['miou']:.4f}, pixel accuracy {results['acc']:.4f}")
        fig.tight_layout()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
        return str(path)
