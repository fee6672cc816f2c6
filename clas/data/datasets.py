"""Classification datasets: an image-folder tree and PaddleClas list files, both yielding ``(CHW tensor, label)``.

Augmentation is reproducible whatever the number of loader workers: each sample seeds the albumentations
pipeline from ``(seed, epoch, index)``, so the same triple always gives the same tensor.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from oarkit.core.data import decode_image, resolve_list_file, sample_seed
from oarkit.core.errors import DataError

logger = logging.getLogger(__name__)

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp")

IMAGEFOLDER_LAYOUT = "<root>/<split>/<class name>/<image>.{jpg,jpeg,png,bmp,webp}"
LIST_LINE_FORM = "'<image path relative to root> <integer label>', e.g. 'train/n01440764/0001.jpg 0'"


class ClassificationDataset(Dataset):
    """Shared machinery: ``(path, label)`` samples, image loading, per-sample seeding, corrupt-file scanning.

    Attributes:
        samples: ``(path, label)`` pairs, in a fixed order.
        skipped: paths dropped as unreadable (only with ``skip_corrupt=True``).
    """

    def __init__(
        self,
        samples: list[tuple[str, int]],
        transform: Callable[..., Any] | None,
        *,
        skip_corrupt: bool = False,
        seed: int = 0,
        source: str = "",
    ) -> None:
        self.transform = transform
        self.seed = int(seed)
        self.epoch = 0
        self.skip_corrupt = skip_corrupt
        self.skipped: list[str] = []
        self.source = source
        if skip_corrupt:
            samples = self._drop_unreadable(samples)
        if not samples:
            raise DataError(f"No readable images in {source}; expected {self.expected_layout()}")
        self.samples = samples

    def expected_layout(self) -> str:
        return IMAGEFOLDER_LAYOUT

    def set_epoch(self, epoch: int) -> None:
        """Change the augmentation of every sample (call once per epoch, like DistributedSampler.set_epoch)."""
        self.epoch = int(epoch)

    @property
    def targets(self) -> list[int]:
        return [label for _, label in self.samples]

    def __len__(self) -> int:
        return len(self.samples)

    def load(self, index: int) -> np.ndarray:
        """The RGB uint8 image of sample ``index``; raises :class:`DataError` when it cannot be read."""
        path = self.samples[index][0]
        image = decode_image(path)
        if image is None:
            reason = "is missing" if not os.path.exists(path) else "cannot be decoded (corrupt or not an image)"
            raise DataError(
                f"Image {path} {reason}. Replace or delete it, or pass skip_corrupt=True to drop unreadable files "
                "when the dataset is built."
            )
        return image

    def __getitem__(self, index: int) -> tuple[Any, int]:
        """``(transformed image, label)``; with ``transform=None`` the image is the RGB uint8 HxWx3 array."""
        image = self.load(index)
        label = self.samples[index][1]
        if self.transform is None:
            return image, label
        if hasattr(self.transform, "set_random_seed"):
            self.transform.set_random_seed(sample_seed(self.seed, self.epoch, index))
        return self.transform(image=image)["image"], label

    def _drop_unreadable(self, samples: list[tuple[str, int]]) -> list[tuple[str, int]]:
        # cv2 decodes without the GIL, so threads make the scan several times faster.
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
            readable = list(
                tqdm(
                    pool.map(lambda s: decode_image(s[0]) is not None, samples, chunksize=16),
                    total=len(samples),
                    desc=f"checking images in {self.source}",
                    unit="img",
                    leave=False,
                )
            )
        kept = [s for s, ok in zip(samples, readable, strict=True) if ok]
        self.skipped = [s[0] for s, ok in zip(samples, readable, strict=True) if not ok]
        if self.skipped:
            logger.warning(
                "Skipped %d unreadable image(s) of %d in %s (first: %s); see dataset.skipped for the full list",
                len(self.skipped),
                len(samples),
                self.source,
                self.skipped[0],
            )
        return kept


def _is_image(path: Path) -> bool:
    return path.suffix.lower() in IMAGE_EXTENSIONS and not path.name.startswith(".")


class UnlabeledImages(ClassificationDataset):
    """Images without labels (``samples`` carry ``-1``): each item is the transformed image alone."""

    def __getitem__(self, index: int) -> Any:
        return super().__getitem__(index)[0]

    def expected_layout(self) -> str:
        return "<root>/**/<image>.{jpg,jpeg,png,bmp,webp}"


class ImageFolderDataset(ClassificationDataset):
    """Images sorted into one folder per class: ``root/<split>/<class>/*.{jpg,jpeg,png,bmp,webp}``.

    Args:
        root: the dataset folder.
        split: the sub-folder to read (``"train"``, ``"val"``).
        transform: an albumentations pipeline (or any ``transform(image=...)["image"]`` callable); ``None`` keeps
            the RGB uint8 array.
        classes: label order to use (for a val split, the training classes). Every class folder must be in it;
            classes without a folder simply have no samples. Default: the sorted folder names.
        skip_corrupt: decode every image up front and drop those that fail (listed in ``.skipped``).
        seed: augmentation seed, combined with the epoch and the sample index.

    Attributes:
        classes: class names, label order.
        samples: ``(path, label)`` pairs.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        split: str,
        transform: Callable[..., Any] | None,
        classes: Sequence[str] | None = None,
        skip_corrupt: bool = False,
        *,
        seed: int = 0,
    ) -> None:
        folder = Path(root) / split
        if not folder.is_dir():
            what = "Dataset root" if not Path(root).is_dir() else "Split folder"
            missing = Path(root) if what == "Dataset root" else folder
            raise DataError(f"{what} {missing} does not exist; expected {IMAGEFOLDER_LAYOUT}")
        found = find_classes(folder)
        if classes is None:
            classes = found
        else:
            classes = list(classes)
            extra = sorted(set(found) - set(classes))
            if extra:
                raise DataError(
                    f"{folder} has class folders {extra} that are not among the {len(classes)} given classes "
                    f"(first: {classes[:5]}); rename or remove them, or pass classes=None to use the folder names"
                )
        self.classes: list[str] = list(classes)
        index = {name: i for i, name in enumerate(self.classes)}
        samples = [
            (str(path), index[name])
            for name in found
            for path in sorted((folder / name).rglob("*"))
            if path.is_file() and _is_image(path)
        ]
        if not samples:
            raise DataError(f"No images found under {folder}; expected {IMAGEFOLDER_LAYOUT}")
        super().__init__(samples, transform, skip_corrupt=skip_corrupt, seed=seed, source=str(folder))


def find_classes(folder: str | os.PathLike) -> list[str]:
    """Sorted names of the class folders inside a split folder (hidden folders left out)."""
    return sorted(p.name for p in Path(folder).iterdir() if p.is_dir() and not p.name.startswith("."))


def parse_list_file(path: str | os.PathLike) -> list[tuple[str, int]]:
    """``(relative path, label)`` pairs of a PaddleClas list file; blank lines are skipped.

    Raises:
        DataError: on a malformed line, naming ``file:line`` and the expected form.
    """
    entries = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            parts = line.rsplit(maxsplit=1)  # the label is last; the path may contain spaces
            label = parts[1] if len(parts) == 2 else ""
            if not label.lstrip("-").isdigit() or int(label) < 0:
                raise DataError(f"{path}:{number}: cannot read {line!r}; expected {LIST_LINE_FORM}")
            entries.append((parts[0], int(label)))
    return entries


class ListFileDataset(ClassificationDataset):
    """Images named by a PaddleClas list file: one ``relative/path.jpg label`` per line, paths relative to root.

    Args:
        root: the folder the listed paths are relative to.
        list_file: the list; a relative path is looked up in ``root`` first, then in the working directory.
        transform: as for :class:`ImageFolderDataset`.
        skip_corrupt: decode every image up front and drop missing or unreadable ones (listed in ``.skipped``).
        seed: augmentation seed, combined with the epoch and the sample index.

    Attributes:
        list_file: the resolved list file.
        num_classes: ``max(label) + 1``.
        classes: ``str(i)`` for every label up to the largest listed one.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        list_file: str | os.PathLike,
        transform: Callable[..., Any] | None,
        skip_corrupt: bool = False,
        *,
        seed: int = 0,
    ) -> None:
        if not Path(root).is_dir():
            raise DataError(f"Dataset root {root} does not exist; list files name images relative to it")
        self.list_file = resolve_list_file(root, list_file, line_form=LIST_LINE_FORM)
        entries = parse_list_file(self.list_file)
        if not entries:
            raise DataError(f"List file {self.list_file} is empty; expected lines {LIST_LINE_FORM}")
        samples = [(str(Path(root) / rel), label) for rel, label in entries]
        if not skip_corrupt:
            missing = [p for p, _ in samples if not os.path.isfile(p)]
            if missing:
                raise DataError(
                    f"{len(missing)} image(s) listed in {self.list_file} do not exist under {root} "
                    f"(first: {missing[:3]}); fix the paths (they are relative to root) or pass skip_corrupt=True"
                )
        super().__init__(samples, transform, skip_corrupt=skip_corrupt, seed=seed, source=str(self.list_file))
        self.num_classes = max(self.targets) + 1
        self.classes = [str(i) for i in range(self.num_classes)]

    def expected_layout(self) -> str:
        return f"lines {LIST_LINE_FORM} in {self.source}"
