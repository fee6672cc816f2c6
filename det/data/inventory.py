"""What the dataset doctor (:mod:`oarkit.core.data.doctor`) examines of a detection split: each image with the
classes of its boxes, and the box problems of :mod:`.check` (degenerate, out-of-image, unknown-category)."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from oarkit.core.data.doctor import DataInventory, Finding, InventorySample
from oarkit.core.errors import DataError

from .check import find_issues
from .formats import read_split

if TYPE_CHECKING:
    from .module import DetectionData

BOX_KINDS = {"degenerate": "det/degenerate_box", "out_of_image": "det/out_of_image_box",
             "unknown_category": "det/unknown_category"}


def detection_inventory(data: DetectionData, split: str) -> DataInventory | None:
    """The images of ``split`` with the classes of their boxes, and the dataset check's box problems as findings;
    ``None`` when a validation split does not exist."""
    paths, name = dict(data.paths.get(split) or {}), split
    if split not in data.paths:  # another file of the format's own kind, read like val
        paths, name = {"annotation": split, "list_file": split, "data_yaml": paths.get("data_yaml")}, "val"
    classes = None if split == "train" else data.classes
    try:
        records, found = read_split(data.format, data.root, name, classes, **paths)
    except DataError as err:
        if split == "train" or "does not exist" not in str(err):
            raise
        return None
    classes = classes or found
    samples = [InventorySample(path=r.image, labels=tuple(sorted({int(c) for c, crowd in zip(r.labels, r.iscrowd)
                                                                  if 0 <= c < len(classes) and not crowd})),
                               size=(int(r.width), int(r.height)) if r.width and r.height else None)
               for r in records]
    issues = defaultdict(list)
    for record in records:
        for issue in find_issues(record, len(classes)):
            issues[issue.kind].append(issue)
    severity = "error" if data.check == "refuse" else "warning"
    done = {"fix": "data.check=fix (this recipe's setting) clips boxes to the image and drops the degenerate and "
                   "unknown ones; ", "report": "data.check=report keeps them as they are; "}.get(data.check, "")
    findings = [Finding(severity, BOX_KINDS.get(kind, f"det/{kind}"), f"{len(hits)} {kind.replace('_', '-')} box(es) "
                        f"(first: {hits[0]})", f"{done}fix the annotations to keep those objects",
                        [i.file for i in hits], len(hits), split)
                for kind, hits in sorted(issues.items())]
    empty = [r.image for r in records if not (~r.iscrowd).any()]
    if empty:
        left_out = " (left out of training: data.skip_empty)" if split == "train" and data.skip_empty else ""
        findings.append(Finding("info", "det/no_boxes", f"{len(empty)} image(s) have no boxes{left_out}",
                                "fine for background images; otherwise their annotations are missing", empty,
                                len(empty), split))
    return DataInventory(split, samples, list(classes), findings, source=f"{data.root} ({split})")
