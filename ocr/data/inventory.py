"""What the dataset doctor (:mod:`oarkit.core.data.doctor`) examines of OCR splits: detection pages and their
polygons, recognition lines and their characters, orientation lines."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from oarkit.core.data.doctor import DataInventory, Finding, InventorySample
from oarkit.core.errors import DataError

from ..charset import CharDictionary
from .formats import LMDBRecSet, read_rec_list

if TYPE_CHECKING:
    from .module import OCRClsData, OCRDetData, OCRRecData


def _absent(split: str, err: DataError) -> bool:
    """Whether ``err`` says a validation split is not there (rather than broken)."""
    return split != "train" and "does not exist" in str(err)


def _area(points: np.ndarray) -> float:
    """The shoelace area of a polygon."""
    x, y = points[:, 0], points[:, 1]
    return float(abs(np.dot(x, np.roll(y, 1)) - np.dot(y, np.roll(x, 1))) / 2)


def det_inventory(data: OCRDetData, split: str) -> DataInventory | None:
    """Pages with their text polygons: pages without any, and polygons without area, become findings."""
    try:
        pages = data.samples(split)
    except DataError as err:
        if _absent(split, err):
            return None
        raise
    empty = [image for image, regions in pages if not any(not r.ignore for r in regions)]
    degenerate = [image for image, regions in pages for r in regions
                  if len(r.points) < 3 or not np.isfinite(r.points).all() or _area(np.asarray(r.points, float)) < 1.0]
    findings = []
    if empty:
        findings.append(Finding("warning", "ocr/no_text_regions", f"{len(empty)} page(s) have no text polygon (or "
                                "only ignored ### ones)", "label their text, or leave them out unless they are "
                                "meant as negatives", empty, len(empty), split))
    if degenerate:
        findings.append(Finding("warning", "ocr/degenerate_polygon", f"{len(degenerate)} polygon(s) have fewer than "
                                "3 points or no area", "fix their points (4 corners, clockwise from the top-left), "
                                "or mark them ### to ignore them", degenerate, len(degenerate), split))
    return DataInventory(split, [InventorySample(path=image) for image, _ in pages], findings=findings,
                         source=f"{data.root} ({split})")


def _rec_lines(data: OCRRecData | OCRClsData, split: str, lmdb: bool) -> list[tuple[str | None, str]] | None:
    name = {"train": data.train_list, "val": data.val_list}.get(split, split)
    path = Path(data.root) / name
    try:
        if lmdb:
            if not path.exists():
                raise DataError(f"LMDB folder {path} does not exist")
            lines = LMDBRecSet(path)
            return [(None, lines.get(i)[1]) for i in range(len(lines))]
        return list(read_rec_list(path, image_root=data.root))
    except DataError as err:
        if _absent(split, err):
            return None
        raise


def _rec_dictionary(data: OCRRecData) -> CharDictionary:
    """The data's dictionary; before the task offers the model's, PP-OCR's default (ppocr_keys_v1 and a space)."""
    if data.dictionary_name is None and data._dictionary is None:
        space = True if data.use_space_char is None else bool(data.use_space_char)
        return CharDictionary.load("ppocr_keys_v1", use_space_char=space)
    return data.dictionary


def rec_inventory(data: OCRRecData, split: str) -> DataInventory | None:
    """Text lines with their labels: empty labels, characters outside the dictionary and labels longer than
    ``max_text_length`` become findings."""
    lines = _rec_lines(data, split, data.format == "lmdb")
    if lines is None:
        return None
    dictionary = _rec_dictionary(data)
    where = lambda path, i: path or f"{data.root}/{split} sample {i + 1}"  # noqa: E731 - LMDB samples have no file
    empty = [where(p, i) for i, (p, text) in enumerate(lines) if not text.strip()]
    unknown: dict[str, int] = {}
    unknown_files = []
    for i, (path, text) in enumerate(lines):
        missing = [c for c in text if c not in dictionary.index]
        if text and not dictionary.covers(text) and missing:
            unknown_files.append(where(path, i))
            for c in missing:
                unknown[c] = unknown.get(c, 0) + 1
    limit = data.preprocess.max_text_length
    long = [where(p, i) for i, (p, text) in enumerate(lines) if len(dictionary.encode(text)) > limit]
    findings = []
    if empty:
        findings.append(Finding("error", "ocr/empty_text", f"{len(empty)} line(s) have an empty label",
                                "write the line's text after the tab, or remove the line", empty, len(empty), split))
    if unknown:
        chars = "".join(sorted(unknown, key=lambda c: -unknown[c]))
        findings.append(Finding("warning", "ocr/unknown_characters",
                                f"{len(unknown_files)} label(s) hold characters that are not in the dictionary "
                                f"{dictionary.name!r} and are dropped from the target: {chars[:40]!r}",
                                "set data.dictionary=FILE to a dictionary that holds them (the heads are then "
                                "re-initialised), or fix the labels", unknown_files, len(unknown_files), split))
    if long and split == "train":
        findings.append(Finding("info", "ocr/text_too_long", f"{len(long)} label(s) are longer than "
                                f"data.max_text_length={limit} and are left out of training",
                                "raise data.max_text_length if they matter", long, len(long), split))
    samples = [InventorySample(path=path) for path, _ in lines]
    return DataInventory(split, samples, findings=findings, source=f"{data.root} ({split})")


def cls_inventory(data: OCRClsData, split: str) -> DataInventory | None:
    """Text-line images (their orientation labels are made by turning them)."""
    lines = _rec_lines(data, split, False)
    if lines is None:
        return None
    return DataInventory(split, [InventorySample(path=p) for p, _ in lines], source=f"{data.root} ({split})")
