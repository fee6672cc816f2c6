"""The layout stage: a detector of page regions, found through the task registry (``det/picodet_lcnet_x1_0_layout``
by default, any det run, export or registry name with layout labels), its boxes as :class:`DocBlock` s with
duplicates across classes removed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.errors import OarkitError
from oarkit.core.kits import source_entry

from .blocks import DocBlock, kind_of

DEFAULT_LAYOUT = "det/picodet_lcnet_x1_0_layout"


class LayoutDetector:
    """Page regions from a detection model.

    Args:
        source: a registry name, run directory or export folder of a ``det`` model whose labels are layout classes.
        threshold: boxes scoring below this are left out.
        overlap: a box whose area lies this much inside a better-scored one is the same region found twice (the
            layout model may call one caption both ``table_caption`` and ``figure_caption``) and is dropped.
        device: ``cpu``, ``cuda``, ...
    """

    def __init__(self, source: str | Path | Any = DEFAULT_LAYOUT, *, threshold: float = 0.5, overlap: float = 0.7,
                 device: str = "cpu") -> None:
        if callable(source) and not isinstance(source, (str, Path)):
            self.detector = source  # a det predictor already built
        else:
            entry = source_entry(source)
            if entry.task_id != "det":
                raise OarkitError(f"the layout model {source} is a {entry.task_id!r} model; it must be a det model "
                                  f"with layout classes (e.g. {DEFAULT_LAYOUT})")
            self.detector = entry.predictor(source, threshold=threshold, device=device)
        self.threshold = threshold
        self.overlap = overlap

    def __call__(self, page: np.ndarray) -> list[DocBlock]:
        """The regions of an RGB page, best first."""
        result = self.detector(page)
        keep: list[DocBlock] = []
        for box, score, label in zip(result.boxes.tolist(), result.scores.tolist(), result.labels):
            if score < self.threshold:
                continue
            block = DocBlock(kind_of(label), [float(v) for v in box], float(score), label)
            if all(_inside(block.box, other.box) < self.overlap and _iou(block.box, other.box) < 0.5
                   for other in keep):
                keep.append(block)
        return keep


def _iou(a: list[float], b: list[float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(0.0, w) * max(0.0, h)
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / max(union, 1e-6)


def _inside(box: list[float], other: list[float]) -> float:
    """The fraction of ``box``'s area that lies inside ``other``."""
    w = min(box[2], other[2]) - max(box[0], other[0])
    h = min(box[3], other[3]) - max(box[1], other[1])
    area = max(1e-6, (box[2] - box[0]) * (box[3] - box[1]))
    return max(0.0, w) * max(0.0, h) / area
