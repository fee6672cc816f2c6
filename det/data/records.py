"""One annotated image, whatever format it came from: the record every detection reader returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class DetectionRecord:
    """An image and its boxes.

    Attributes:
        image: the image file.
        width, height: the image size in pixels (from the annotations; the loader checks the file).
        boxes: ``[N, 4]`` float32 ``x1, y1, x2, y2`` in pixels.
        labels: ``[N]`` int64 class indices, 0-based; ``-1`` marks a category the class list does not know.
        iscrowd: ``[N]`` bool: COCO crowds and VOC ``difficult`` objects, ignored by training and the metrics.
        image_id: a unique id within the split.
        annotation: the file the boxes came from (a json, xml or txt), for messages.
        raw_labels: the labels as written in the file (category ids, names, class numbers), for messages.
    """

    image: str
    width: int
    height: int
    boxes: np.ndarray
    labels: np.ndarray
    iscrowd: np.ndarray
    image_id: int
    annotation: str = ""
    raw_labels: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.boxes = np.asarray(self.boxes, np.float32).reshape(-1, 4)
        self.labels = np.asarray(self.labels, np.int64).reshape(-1)
        self.iscrowd = np.asarray(self.iscrowd, bool).reshape(-1)
        if not (len(self.boxes) == len(self.labels) == len(self.iscrowd)):
            raise ValueError(f"{self.image}: {len(self.boxes)} boxes, {len(self.labels)} labels, "
                             f"{len(self.iscrowd)} crowd flags")

    def select(self, keep: np.ndarray) -> DetectionRecord:
        """A copy with the boxes where ``keep`` is true."""
        raw = [r for r, k in zip(self.raw_labels, keep)] if len(self.raw_labels) == len(keep) else []
        return DetectionRecord(self.image, self.width, self.height, self.boxes[keep], self.labels[keep],
                               self.iscrowd[keep], self.image_id, self.annotation, raw)
