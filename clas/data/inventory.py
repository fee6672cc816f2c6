"""What the dataset doctor (:mod:`oarkit.core.data.doctor`) examines of a classification split."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oarkit.core.data import resolve_list_file
from oarkit.core.data.doctor import DataInventory, Finding, InventorySample
from oarkit.core.errors import DataError

from .datasets import IMAGE_EXTENSIONS, LIST_LINE_FORM, find_classes, parse_list_file

if TYPE_CHECKING:
    from .module import ClassificationData


def classification_inventory(data: ClassificationData, split: str) -> DataInventory | None:
    """The samples of ``split`` (``train``, ``val`` or another folder / list file) with their class ids; ``None``
    when a validation split does not exist. Labels outside the classes become findings, not errors."""
    classes = data.classes
    if data.format == "imagefolder":
        name = {"train": data.train_split, "val": data.val_split}.get(split, split)
        folder = Path(data.root) / name
        if not folder.is_dir():
            if split == "train":
                raise DataError(f"Training split {folder} does not exist")
            return None
        index = {c: i for i, c in enumerate(classes)}
        found = find_classes(folder)
        samples = [InventorySample(path=str(p), labels=(index[c],)) for c in found if c in index
                   for p in sorted((folder / c).rglob("*"))
                   if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS and not p.name.startswith(".")]
        findings = []
        extra = [c for c in found if c not in index]
        if extra:
            findings.append(Finding("error", "clas/unknown_class_folder",
                                    f"{folder} has class folders that are not among the {len(classes)} training "
                                    f"classes: {extra[:10]}", "rename them to a training class, or add the class to "
                                    "the training split", [str(folder / c) for c in extra], len(extra), split))
        return DataInventory(split, samples, list(classes), findings, source=str(folder))
    list_name = {"train": data.train_list, "val": data.val_list}.get(split, split)
    try:
        list_file = resolve_list_file(data.root, list_name, line_form=LIST_LINE_FORM)
    except DataError:
        if split == "train":
            raise
        return None
    entries = parse_list_file(list_file)
    samples = [InventorySample(path=str(Path(data.root) / rel), labels=(label,)) for rel, label in entries]
    bad = [(str(Path(data.root) / rel), label) for rel, label in entries if not 0 <= label < len(classes)]
    findings = []
    if bad:
        findings.append(Finding("error", "clas/label_out_of_range",
                                f"{len(bad)} line(s) of {list_file} have a label outside 0..{len(classes) - 1} (first: "
                                f"{bad[0][1]})", "fix the labels, or add the classes to data.label_file",
                                [p for p, _ in bad], len(bad), split))
    return DataInventory(split, samples, list(classes), findings, source=str(list_file))
