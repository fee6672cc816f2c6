"""The dataset check: degenerate, out-of-image and unknown-category boxes, reported with their file, fixed or refused.

``action`` says what happens to what it finds:

- ``report``: log every problem and keep the records as they are;
- ``fix``: clip boxes that stick out of the image to it, drop degenerate boxes (no area after clipping, or
  narrower than ``min_size``) and boxes of unknown categories, and log what was done;
- ``refuse``: raise a :class:`~oarkit.core.errors.DataError` listing the problems.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from oarkit.core.errors import ConfigError, DataError, did_you_mean

from .records import DetectionRecord

logger = logging.getLogger(__name__)

ACTIONS = ("report", "fix", "refuse")
#: pixels a box may pass the image border by (the rounding of normalised YOLO coordinates)
TOLERANCE = 0.01
#: problems shown in a message before "... and N more"
SHOWN = 10


@dataclass(frozen=True)
class BoxIssue:
    """One problem box.

    Attributes:
        kind: ``degenerate``, ``out_of_image`` or ``unknown_category``.
        file: the annotation file (or the image, when the format has none per image).
        image: the image file.
        index: the box's position among the image's boxes.
        detail: the box and what is wrong with it.
    """

    kind: str
    file: str
    image: str
    index: int
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.file} (image {self.image}, box {self.index}): {self.detail}"


def find_issues(record: DetectionRecord, num_classes: int, min_size: float = 1.0) -> list[BoxIssue]:
    """The problems of one record's boxes."""
    issues = []
    where = record.annotation or record.image
    for i, (box, label) in enumerate(zip(record.boxes.tolist(), record.labels.tolist())):
        x1, y1, x2, y2 = box
        text = f"[{x1:.1f}, {y1:.1f}, {x2:.1f}, {y2:.1f}]"
        if not 0 <= label < num_classes:
            raw = record.raw_labels[i] if i < len(record.raw_labels) else label
            issues.append(BoxIssue("unknown_category", where, record.image, i,
                                   f"category {raw!r} is not among the {num_classes} classes"))
        if not np.isfinite(box).all() or x2 - x1 < min_size or y2 - y1 < min_size:
            issues.append(BoxIssue("degenerate", where, record.image, i,
                                   f"box {text} is smaller than {min_size:g} px (x2 > x1 and y2 > y1 required)"))
        elif x1 < -TOLERANCE or y1 < -TOLERANCE or x2 > record.width + TOLERANCE or y2 > record.height + TOLERANCE:
            issues.append(BoxIssue("out_of_image", where, record.image, i,
                                   f"box {text} leaves the {record.width}x{record.height} image"))
    return issues


def fix_record(record: DetectionRecord, num_classes: int, min_size: float = 1.0) -> DetectionRecord:
    """The record with boxes clipped to the image and degenerate or unknown-category boxes dropped."""
    boxes = record.boxes.copy()
    finite = np.isfinite(boxes).all(axis=1)
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, record.width)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, record.height)
    keep = (finite & (boxes[:, 2] - boxes[:, 0] >= min_size) & (boxes[:, 3] - boxes[:, 1] >= min_size)
            & (record.labels >= 0) & (record.labels < num_classes))
    fixed = record.select(keep)
    fixed.boxes = boxes[keep]
    return fixed


def check_records(records: Sequence[DetectionRecord], num_classes: int, *, action: str = "fix",
                  min_size: float = 1.0, source: str = "the dataset") -> tuple[list[DetectionRecord], list[BoxIssue]]:
    """Check every record's boxes and report, fix or refuse (see the module docstring).

    Args:
        records: the split.
        num_classes: the class count (labels outside ``[0, num_classes)`` are unknown categories).
        action: ``report``, ``fix`` or ``refuse``.
        min_size: boxes narrower or lower than this many pixels are degenerate.
        source: names the dataset in messages.

    Returns:
        ``(records, issues)``: the records (fixed with ``fix``) and every problem found.

    Raises:
        DataError: ``action="refuse"`` and something was found.
    """
    if action not in ACTIONS:
        raise ConfigError(f"dataset check action {action!r} is not one of {list(ACTIONS)}."
                          f"{did_you_mean(action, ACTIONS)}")
    issues = [issue for rec in records for issue in find_issues(rec, num_classes, min_size)]
    if not issues:
        return list(records), []
    counts = Counter(i.kind for i in issues)
    summary = ", ".join(f"{n} {kind.replace('_', '-')}" for kind, n in sorted(counts.items()))
    listing = "\n  ".join(str(i) for i in issues[:SHOWN])
    more = f"\n  ... and {len(issues) - SHOWN} more" if len(issues) > SHOWN else ""
    if action == "refuse":
        raise DataError(f"{source}: {summary} boxes:\n  {listing}{more}\nFix the annotations, or set "
                        "data.check=fix to clip boxes to their image and drop degenerate and unknown ones")
    if action == "report":
        logger.warning("%s: %s boxes (kept as they are):\n  %s%s", source, summary, listing, more)
        return list(records), issues
    logger.warning("%s: %s boxes fixed (clipped to the image, or dropped):\n  %s%s", source, summary, listing, more)
    return [fix_record(r, num_classes, min_size) for r in records], issues
