"""What the dataset doctor (:mod:`oarkit.core.data.doctor`) examines of a segmentation split: each image with the
classes its label map holds, and the label maps' own problems (size, values, nothing but ignore)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from oarkit.core.data.doctor import DataInventory, Finding, InventorySample
from oarkit.core.errors import DataError

from .io import read_label

if TYPE_CHECKING:
    from .module import SegmentationData

IMBALANCE_FIX = ("class weights in the loss (task.losses: CrossEntropyLoss weight: [one per class]), OHEM "
                 "(OhemCrossEntropyLoss), or more images of the rare classes")


@dataclass
class _MaskFacts:
    classes: tuple[int, ...] = ()
    size: tuple[int, int] | None = None  # the image's (width, height)
    problem: tuple[str, str] | None = None  # (kind, detail)


def _mask_facts(image_path: str, label_path: str, num_classes: int, ignore: int, reduce_zero: bool) -> _MaskFacts:
    try:
        label = read_label(label_path)
    except DataError as err:
        return _MaskFacts(problem=("seg/unreadable_mask", str(err)))
    try:
        with Image.open(image_path) as image:
            size = (int(image.width), int(image.height))
    except Exception:  # noqa: BLE001 - the doctor's image scan names the broken image
        size = None
    if reduce_zero:
        label = label.astype(np.int32) - 1
        label[label < 0] = ignore
    values = np.unique(label)
    facts = _MaskFacts(classes=tuple(int(v) for v in values if 0 <= v < num_classes and v != ignore), size=size)
    if size is not None and (label.shape[1], label.shape[0]) != size:
        facts.problem = ("seg/mask_size", f"{label.shape[1]}x{label.shape[0]} mask for a {size[0]}x{size[1]} image")
    elif any(not (0 <= v < num_classes) and v != ignore for v in values):
        bad = [int(v) for v in values if not 0 <= v < num_classes and v != ignore]
        facts.problem = ("seg/label_out_of_range", f"values {bad} outside [0, {num_classes}) that are not the ignore "
                         f"index {ignore}")
    elif not facts.classes:
        facts.problem = ("seg/empty_mask", f"every pixel is the ignore index {ignore}")
    elif len(facts.classes) == 1 and num_classes > 1:
        facts.problem = ("seg/single_value_mask", f"only class {facts.classes[0]}")
    return facts


#: each label-map problem: severity, message, fix
PROBLEMS = {
    "seg/unreadable_mask": ("error", "label map(s) cannot be read", "re-export them as single-channel PNGs of "
                            "class indices"),
    "seg/mask_size": ("error", "label map(s) differ in size from their image", "write each label map at its "
                      "image's size (the list pairs the wrong files, or the masks were resized)"),
    "seg/label_out_of_range": ("error", "label map(s) hold values that are neither a class nor the ignore index",
                               "set data.num_classes to the real class count, or map those values to "
                               "data.ignore_index"),
    "seg/empty_mask": ("warning", "label map(s) are entirely the ignore index: nothing to learn from them",
                       "label those images, or remove them from the list"),
    "seg/single_value_mask": ("info", "label map(s) hold a single class", "fine for background-only images; "
                              "otherwise check the masks were written with class indices, not 0/255"),
}


def segmentation_inventory(data: SegmentationData, split: str) -> DataInventory | None:
    """The image / label-map pairs of ``split`` with the classes each label map holds; ``None`` when a
    validation split does not exist."""
    if split == "val" and not data._val_exists():
        return None
    pairs = data.samples(split)
    num_classes, ignore, reduce_zero = data.num_classes, data.ignore_index, data.format == "ade20k"
    with ThreadPoolExecutor(max_workers=8) as pool:
        facts = list(pool.map(lambda p: _mask_facts(p[0], p[1], num_classes, ignore, reduce_zero), pairs))
    samples = [InventorySample(path=image, labels=f.classes, size=f.size) for (image, _), f in zip(pairs, facts,
                                                                                                 strict=True)]
    findings = []
    for kind, (severity, what, fix) in PROBLEMS.items():
        hits = [(label, f.problem[1]) for (_, label), f in zip(pairs, facts, strict=True)
                if f.problem and f.problem[0] == kind]
        if hits:
            findings.append(Finding(severity, kind, f"{len(hits)} {what} (first: {hits[0][0]}: {hits[0][1]})", fix,
                                    [h[0] for h in hits], len(hits), split))
    return DataInventory(split, samples, list(data.classes), findings, imbalance_fix=IMBALANCE_FIX,
                         source=f"{data.root} ({split})")
