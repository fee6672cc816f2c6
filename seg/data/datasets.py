"""Segmentation datasets: PaddleSeg list files and the Cityscapes, ADE20K and Pascal VOC folder layouts.

Every layout resolves to ``(image path, label path)`` pairs read by :class:`SegmentationDataset`, which checks
that the label values lie in ``[0, num_classes)`` or are the ignore index, and seeds its augmentation from
``(seed, epoch, index)`` so that the samples do not depend on the number of loader workers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.utils.data import Dataset

from oarkit.core.data import read_image, resolve_list_file, sample_seed
from oarkit.core.errors import DataError

from .io import check_label, read_label

logger = logging.getLogger(__name__)

LIST_LINE_FORM = "'<image path> <label path>' relative to the dataset root, e.g. 'images/0001.jpg labels/0001.png'"
LAYOUTS = {
    "list": "<root>/<list file> with lines " + LIST_LINE_FORM,
    "cityscapes": "<root>/leftImg8bit/<split>/<city>/*_leftImg8bit.png and "
                  "<root>/gtFine/<split>/<city>/*_gtFine_labelTrainIds.png",
    "ade20k": "<root>/images/{training,validation}/*.jpg and <root>/annotations/{training,validation}/*.png",
    "voc": "<root>/[VOC2012/]JPEGImages/*.jpg, SegmentationClass/*.png and ImageSets/Segmentation/<split>.txt",
}
Sample = tuple[str, str]


def list_samples(root: str | os.PathLike, list_file: str | os.PathLike) -> list[Sample]:
    """The pairs of a PaddleSeg list file (blank lines skipped; paths relative to ``root``).

    Raises:
        DataError: a malformed line (``file:line``), or listed files that do not exist.
    """
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"Dataset root {root} does not exist; expected {LAYOUTS['list']}")
    path = resolve_list_file(root, list_file, line_form=LIST_LINE_FORM)
    samples = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) != 2:
                raise DataError(f"{path}:{number}: cannot read {line.strip()!r}; expected {LIST_LINE_FORM}")
            samples.append((str(root / parts[0]), str(root / parts[1])))
    if not samples:
        raise DataError(f"List file {path} is empty; expected lines {LIST_LINE_FORM}")
    missing = [p for pair in samples for p in pair if not os.path.isfile(p)]
    if missing:
        raise DataError(f"{len(missing)} file(s) listed in {path} do not exist under {root} (first: {missing[:3]}); "
                        "the paths must be relative to the dataset root")
    return samples


def _require_dir(path: Path, layout: str) -> Path:
    if not path.is_dir():
        raise DataError(f"{path} does not exist; the {layout} layout is {LAYOUTS[layout]}")
    return path


def cityscapes_samples(root: str | os.PathLike, split: str) -> list[Sample]:
    """Cityscapes' fine annotations, with the 19-class ``*_gtFine_labelTrainIds.png`` labels."""
    root = Path(root)
    images = sorted(_require_dir(root / "leftImg8bit" / split, "cityscapes").glob("*/*_leftImg8bit.png"))
    samples = []
    for image in images:
        label = root / "gtFine" / split / image.parent.name / image.name.replace("_leftImg8bit.png",
                                                                                  "_gtFine_labelTrainIds.png")
        if not label.is_file():
            raise DataError(f"{label} is missing: Cityscapes needs the trainId labels; create them with "
                            "cityscapesscripts' createTrainIdLabelImgs")
        samples.append((str(image), str(label)))
    if not samples:
        raise DataError(f"No images in {root / 'leftImg8bit' / split}; expected {LAYOUTS['cityscapes']}")
    return samples


def ade20k_samples(root: str | os.PathLike, split: str) -> list[Sample]:
    """ADEChallengeData2016 (``split`` ``train``/``training`` or ``val``/``validation``)."""
    root = Path(root)
    folder = {"train": "training", "val": "validation"}.get(split, split)
    images = sorted(_require_dir(root / "images" / folder, "ade20k").glob("*.jpg"))
    samples = [(str(p), str(root / "annotations" / folder / f"{p.stem}.png")) for p in images]
    missing = [lab for _, lab in samples if not os.path.isfile(lab)]
    if missing or not samples:
        raise DataError(f"ADE20K {folder}: {len(missing)} annotation(s) missing (first: {missing[:3]}) or no images; "
                        f"expected {LAYOUTS['ade20k']}")
    return samples


def voc_samples(root: str | os.PathLike, split: str) -> list[Sample]:
    """Pascal VOC 2012 segmentation (``root`` is ``VOCdevkit`` or ``VOC2012``); ids from the split file."""
    root = Path(root)
    if (root / "VOC2012").is_dir():
        root = root / "VOC2012"
    ids_file = root / "ImageSets" / "Segmentation" / f"{split}.txt"
    if not ids_file.is_file():
        raise DataError(f"{ids_file} does not exist; the voc layout is {LAYOUTS['voc']}")
    ids = [line.strip() for line in ids_file.read_text().splitlines() if line.strip()]
    samples = [(str(root / "JPEGImages" / f"{i}.jpg"), str(root / "SegmentationClass" / f"{i}.png")) for i in ids]
    missing = [p for pair in samples for p in pair if not os.path.isfile(p)]
    if missing or not samples:
        raise DataError(f"{ids_file}: {len(missing)} file(s) missing (first: {missing[:3]}) or no ids")
    return samples


class SegmentationDataset(Dataset):
    """``(image, label)`` pairs as ``(CHW float tensor, HW int64 tensor)`` through a joint albumentations transform.

    Args:
        samples: ``(image path, label path)`` pairs.
        transform: ``transform(image=..., mask=...)`` returning tensors (an albumentations pipeline); ``None``
            returns the raw RGB uint8 image and the label array.
        num_classes: labels must lie in ``[0, num_classes)`` or equal ``ignore_index``.
        ignore_index: the label of pixels that count for nothing.
        reduce_zero_label: shift labels down by one and make 0 the ignore index (ADE20K's "other" class).
        seed: augmentation seed, combined with the epoch and the index.
        source: where the samples came from, for messages.
    """

    def __init__(self, samples: list[Sample], transform: Callable[..., Any] | None, *, num_classes: int,
                 ignore_index: int = 255, reduce_zero_label: bool = False, seed: int = 0, source: str = "") -> None:
        if not samples:
            raise DataError(f"No samples in {source}")
        self.samples = samples
        self.transform = transform
        self.num_classes, self.ignore_index = int(num_classes), int(ignore_index)
        self.reduce_zero_label = reduce_zero_label
        self.seed, self.epoch = int(seed), 0
        self.source = source
        self._sizes: list[tuple[int, int]] | None = None

    def set_epoch(self, epoch: int) -> None:
        """Change every sample's augmentation (called by the Trainer once per epoch)."""
        self.epoch = int(epoch)

    def image_sizes(self) -> list[tuple[int, int]]:
        """``(height, width)`` of every sample, read once from the label maps' headers (nothing is decoded).

        The label's size is the image's (:meth:`load` refuses a pair that differs), and unlike a JPEG header it
        needs no EXIF rotation to say what the decoded array will be.
        """
        if self._sizes is None:
            sizes = []
            for _, label_path in self.samples:
                try:
                    with Image.open(label_path) as im:
                        width, height = im.size
                except OSError as err:
                    raise DataError(f"Label map {label_path} cannot be read (missing, corrupt or not an image): "
                                    f"{err}") from err
                sizes.append((height, width))
            self._sizes = sizes
        return self._sizes

    def __len__(self) -> int:
        return len(self.samples)

    def load(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The RGB image and checked label map of sample ``index``."""
        image_path, label_path = self.samples[index]
        image, label = read_image(image_path), read_label(label_path)
        if self.reduce_zero_label:
            label = label.astype(np.int32) - 1
            label[label < 0] = self.ignore_index
        if image.shape[:2] != label.shape[:2]:
            raise DataError(f"Image {image_path} is {image.shape[1]}x{image.shape[0]} but its label map {label_path} "
                            f"is {label.shape[1]}x{label.shape[0]}; they must have the same size")
        check_label(label, self.num_classes, self.ignore_index, label_path)
        return image, label

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image, label = self.load(index)
        if self.transform is None:
            return image, label
        if hasattr(self.transform, "set_random_seed"):
            self.transform.set_random_seed(sample_seed(self.seed, self.epoch, index))
        out = self.transform(image=image, mask=label)
        mask = out["mask"]
        return out["image"], (mask.long() if isinstance(mask, torch.Tensor) else torch.as_tensor(mask).long())


def pad_collate(samples: list[tuple[torch.Tensor, torch.Tensor]], ignore_index: int = 255
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """Stack ``(image, label)`` samples, padding smaller ones at the bottom and right (labels with the ignore index)."""
    heights = [s[0].shape[-2] for s in samples]
    widths = [s[0].shape[-1] for s in samples]
    h, w = max(heights), max(widths)
    if min(heights) == h and min(widths) == w:
        return torch.stack([s[0] for s in samples]), torch.stack([s[1] for s in samples])
    images = samples[0][0].new_zeros((len(samples), samples[0][0].shape[0], h, w))
    labels = torch.full((len(samples), h, w), ignore_index, dtype=torch.long)
    for i, (image, label) in enumerate(samples):
        images[i, :, : image.shape[-2], : image.shape[-1]] = image
        labels[i, : label.shape[-2], : label.shape[-1]] = label
    return images, labels
