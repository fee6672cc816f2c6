"""Classification metric: top-k accuracy and a confusion matrix, kept as summable tensors for all_reduce."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from oarkit.core.engine.metric import Metric
from oarkit.core.errors import ConfigError


class ClassificationMetric(Metric):
    """Top-k accuracy, per-class accuracy and the confusion matrix of single-label classification.

    State (all int64, summed across ranks by :meth:`reduce`): ``confusion`` [C, C] (rows: true class, columns:
    predicted), ``topk_correct`` [len(topk)] and ``total`` [].

    Args:
        num_classes: number of classes ``C``.
        topk: the k of the reported ``top{k}`` accuracies; those above ``C`` are left out.
    """

    main_indicator = "top1"
    higher_is_better = True

    def __init__(self, num_classes: int, topk: Sequence[int] = (1, 5)) -> None:
        if num_classes < 1:
            raise ConfigError(f"num_classes={num_classes!r} must be >= 1")
        self.num_classes = int(num_classes)
        self.topk = tuple(sorted({int(k) for k in topk if 1 <= int(k) <= num_classes} | {1}))
        super().__init__()

    def reset(self) -> None:
        self.state = {
            "confusion": torch.zeros(self.num_classes, self.num_classes, dtype=torch.int64),
            "topk_correct": torch.zeros(len(self.topk), dtype=torch.int64),
            "total": torch.zeros((), dtype=torch.int64),
        }

    @torch.no_grad()
    def update(self, outputs: torch.Tensor, batch: Any) -> None:
        """Add a batch: ``outputs`` are logits (N, C), ``batch`` is ``(images, labels)`` with int labels (N,)."""
        logits, labels = outputs, batch[1]
        if labels.is_floating_point() and labels.ndim == 2:  # soft targets: score against their argmax
            labels = labels.argmax(dim=1)
        labels = labels.to(logits.device).long().view(-1)
        if logits.ndim != 2 or logits.shape[1] != self.num_classes or logits.shape[0] != labels.shape[0]:
            raise ValueError(
                f"ClassificationMetric({self.num_classes} classes) got logits {tuple(logits.shape)} for "
                f"{labels.shape[0]} labels; expected ({labels.shape[0]}, {self.num_classes})"
            )
        if labels.numel() and (labels.min() < 0 or labels.max() >= self.num_classes):
            raise ValueError(f"labels must be in [0, {self.num_classes}), got {labels.min()}..{labels.max()}")
        top = logits.topk(self.topk[-1], dim=1).indices  # (N, kmax), best first
        hits = top.eq(labels[:, None]).cumsum(dim=1)  # hits[:, k-1] is 1 when the label is in the top k
        correct = torch.stack([hits[:, k - 1].sum() for k in self.topk])
        pairs = labels * self.num_classes + top[:, 0]
        confusion = torch.bincount(pairs, minlength=self.num_classes**2).view(self.num_classes, self.num_classes)
        self.state["confusion"] += confusion.cpu()
        self.state["topk_correct"] += correct.cpu()
        self.state["total"] += labels.numel()

    def compute(self) -> dict[str, Any]:
        """``top{k}`` in percent, ``per_class_acc`` (percent, ``None`` for classes without samples),
        ``mean_class_acc`` (over classes with samples) and ``num_samples``."""
        total = int(self.state["total"])
        out: dict[str, Any] = {
            f"top{k}": 100.0 * int(c) / total if total else 0.0
            for k, c in zip(self.topk, self.state["topk_correct"], strict=True)
        }
        confusion = self.state["confusion"]
        support = confusion.sum(dim=1)
        per_class = [100.0 * int(confusion[i, i]) / int(n) if n else None for i, n in enumerate(support)]
        present = [a for a in per_class if a is not None]
        out["per_class_acc"] = per_class
        out["mean_class_acc"] = sum(present) / len(present) if present else 0.0
        out["num_samples"] = total
        return out

    def plot_confusion(self, path: str | os.PathLike, label_names: Sequence[str] | None = None) -> str:
        """Save the row-normalised confusion matrix as a PNG and return its path.

        The figure grows with the number of classes up to 14 inches; every class is named up to 50 classes,
        every k-th one beyond, and cell values are written up to 20 classes.

        Args:
            path: the PNG to write (parent folders are created).
            label_names: class names, index order; default ``0..C-1``.
        """
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        names = [str(n) for n in label_names] if label_names is not None else [str(i) for i in range(self.num_classes)]
        if len(names) != self.num_classes:
            raise ValueError(f"label_names has {len(names)} names for {self.num_classes} classes")
        confusion = self.state["confusion"].double()
        rows = confusion / confusion.sum(dim=1, keepdim=True).clamp(min=1)
        c = self.num_classes
        side = min(max(5.0, 3.5 + 0.28 * c), 14.0)
        fig = Figure(figsize=(side + 1.5, side), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)  # attach the Agg canvas: no pyplot, no display needed
        ax = fig.add_subplot()
        image = ax.imshow(rows.numpy(), cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.02, label="fraction of the true class")
        step = math.ceil(c / 50)  # at most 50 names per axis; beyond, every step-th class
        ticks = list(range(0, c, step))
        font = 9 if c <= 10 else 8 if c <= 30 else 7
        rotate = 90 if max(len(names[i]) for i in ticks) > 3 else 0
        ax.set_xticks(ticks, labels=[names[i] for i in ticks], rotation=rotate, fontsize=font)
        ax.set_yticks(ticks, labels=[names[i] for i in ticks], fontsize=font)
        if c <= 20:
            cell_font = 12 if c <= 5 else 9 if c <= 10 else 7
            for i in range(c):
                for j in range(c):
                    value = float(rows[i, j])
                    if value > 0:
                        colour = "white" if value > 0.5 else "black"
                        ax.text(j, i, f"{value:.2f}", ha="center", va="center", color=colour, fontsize=cell_font)
        named = "" if step == 1 else f" (one class in {step} named)"
        ax.set_xlabel(f"predicted{named}")
        ax.set_ylabel("true")
        top1 = self.compute()["top1"]
        ax.set_title(f"Confusion matrix — top-1 {top1:.2f}% on {int(self.state['total'])} images, {c} classes")
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png")
        return str(path)
