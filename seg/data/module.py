"""The segmentation DataModule: the training and validation splits, class names, and their preprocessing."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset, Sampler

from oarkit.core.data import GroupedBatchSampler, resolve_list_file
from oarkit.core.data.auto_size import AUTO, typical_side
from oarkit.core.data.doctor import DataInventory
from oarkit.core.engine.task import DataModule
from oarkit.core.errors import ConfigError, DataError, did_you_mean

from .datasets import (
    LIST_LINE_FORM,
    SegmentationDataset,
    ade20k_samples,
    cityscapes_samples,
    list_samples,
    pad_collate,
    voc_samples,
)
from .inventory import segmentation_inventory
from .labels import ADE20K_CLASSES, CITYSCAPES_CLASSES, VOC_CLASSES
from .transforms import build_eval_transform, build_train_transform, hw, preprocess_spec

logger = logging.getLogger(__name__)

FORMATS = ("list", "cityscapes", "ade20k", "voc")
BUILTIN_CLASSES = {"cityscapes": CITYSCAPES_CLASSES, "ade20k": ADE20K_CLASSES, "voc": VOC_CLASSES}
DEFAULT_MEAN = (0.5, 0.5, 0.5)  # PaddleSeg's Normalize default
DEFAULT_STD = (0.5, 0.5, 0.5)


def read_class_names(path: str | Path) -> list[str]:
    """Class names from a label file: one name per line (PaddleSeg), or ``<index> <name>`` lines in order."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Label file {path} does not exist; expected one class name per line")
    names = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    numbered = names and all(n.split(maxsplit=1)[0].isdigit() and len(n.split(maxsplit=1)) == 2 for n in names)
    if numbered and [int(n.split()[0]) for n in names] == list(range(len(names))):
        names = [n.split(maxsplit=1)[1] for n in names]
    if not names:
        raise DataError(f"Label file {path} is empty; expected one class name per line")
    return names


class SegmentationData(DataModule):
    """Semantic-segmentation data in PaddleSeg's list layout, or the Cityscapes, ADE20K or Pascal VOC folders.

    Class names come from ``label_file`` (default ``<root>/labels.txt`` when it exists), else the dataset's
    built-in names, else ``class_<i>`` for ``num_classes`` classes. Preprocessing left as ``None`` is filled by
    :meth:`configure` (the task offers the model's settings), then by PaddleSeg's defaults.

    Args:
        root: the dataset folder.
        format: ``"list"``, ``"cityscapes"``, ``"ade20k"`` or ``"voc"``.
        train_list, val_list: list files of the list format (looked up in ``root`` first).
        train_split, val_split: splits of the folder formats.
        num_classes: the class count; required when no label file or built-in names give it.
        label_file: class names, one per line.
        ignore_index: the label that counts for nothing (padding, borders, "void").
        crop_size: training crop ``[height, width]`` (an int for a square); also the export size. ``"auto"``:
            a square of the training images' median shorter side, rounded up to a multiple of 32, within
            [128, 512] (own-data recipes).
        scale: range of the training random scale.
        hflip: horizontal-flip probability in training.
        color_jitter: brightness/contrast/saturation strength in training (0 is off).
        mean, std: normalisation of the [0, 1] image.
        val_resize: resize validation images (and labels) to ``[height, width]``; default: original size.
        batch_size, num_workers: loader settings read by the Trainer.
        eval_batch_size: images per evaluation batch (default: ``batch_size``). Evaluation batches hold images of
            one size only (:meth:`batch_sampler`), so a prediction never depends on it.
        seed: augmentation seed.
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`) before training.
    """

    def __init__(self, *, root: str, format: str = "list", train_list: str = "train.txt", val_list: str = "val.txt",
                 train_split: str = "train", val_split: str = "val", num_classes: int | None = None,
                 label_file: str | None = None, ignore_index: int = 255, crop_size: int | Sequence[int] | str = 512,
                 scale: Sequence[float] = (0.5, 2.0), hflip: float = 0.5, color_jitter: float = 0.0,
                 mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                 val_resize: int | Sequence[int] | None = None, batch_size: int = 8, num_workers: int = 0,
                 eval_batch_size: int | None = None, seed: int = 0, doctor: bool = True) -> None:
        if format not in FORMATS:
            raise ConfigError(f"data.format={format!r} is not one of {list(FORMATS)}.{did_you_mean(format, FORMATS)}")
        if batch_size < 1 or num_workers < 0:
            raise ConfigError(f"data.batch_size ({batch_size}) must be >= 1 and data.num_workers ({num_workers}) >= 0")
        if eval_batch_size is not None and eval_batch_size < 1:
            raise ConfigError(f"data.eval_batch_size={eval_batch_size!r} must be >= 1, or null for data.batch_size")
        if num_classes is not None and num_classes < 1:
            raise ConfigError(f"data.num_classes={num_classes!r} must be at least 1")
        if not 0 <= ignore_index <= 255 and ignore_index != -1:
            raise ConfigError(f"data.ignore_index={ignore_index!r} must be -1 or in [0, 255] (labels are PNGs)")
        self.root, self.format = str(root), format
        self.train_list, self.val_list = train_list, val_list
        self.train_split, self.val_split = train_split, val_split
        self._num_classes, self.label_file = num_classes, label_file
        self.ignore_index = int(ignore_index)
        if isinstance(crop_size, str) and crop_size != AUTO:
            raise ConfigError(f"data.crop_size={crop_size!r} must be a side, [height, width] or auto")
        self.crop_size = None if crop_size == AUTO else hw(crop_size, "data.crop_size")
        self.val_resize = hw(val_resize, "data.val_resize")
        self.scale, self.hflip, self.color_jitter = tuple(scale), float(hflip), float(color_jitter)
        self.settings: dict[str, Any] = {"mean": None if mean is None else list(mean),
                                         "std": None if std is None else list(std)}
        self.batch_size, self.num_workers, self.seed = int(batch_size), int(num_workers), int(seed)
        self.eval_batch_size = None if eval_batch_size is None else int(eval_batch_size)
        self.doctor = bool(doctor)
        self._classes: list[str] | None = None
        self._train: Dataset | None = None
        self._val: Dataset | None = None
        self._val_built = False

    # -- classes ------------------------------------------------------------------------------------------
    @property
    def classes(self) -> list[str]:
        """Class names, index order (see the class docstring for where they come from)."""
        if self._classes is None:
            label_file = self.label_file or (Path(self.root) / "labels.txt" if self.format == "list" else None)
            if label_file is not None and (self.label_file or Path(label_file).is_file()):
                names = read_class_names(label_file)
            elif self.format in BUILTIN_CLASSES:
                names = list(BUILTIN_CLASSES[self.format])
            elif self._num_classes is not None:
                names = [f"class_{i}" for i in range(self._num_classes)]
            else:
                raise ConfigError(f"the number of classes of {self.root} is unknown: set data.num_classes=K, or write "
                                  f"the class names, one per line, to {Path(self.root) / 'labels.txt'}")
            if self._num_classes is not None and len(names) != self._num_classes:
                if len(names) > self._num_classes:
                    names = names[: self._num_classes]
                    logger.warning("data.num_classes=%d: using the first %d class names", self._num_classes,
                                   self._num_classes)
                else:
                    names += [f"class_{i}" for i in range(len(names), self._num_classes)]
            self._classes = names
        return self._classes

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    # -- preprocessing ------------------------------------------------------------------------------------
    def configure(self, *, mean: Sequence[float] | None = None, std: Sequence[float] | None = None) -> None:
        """Offer the model's normalisation; only settings the user left as ``None`` take it."""
        if self._train is not None or self._val_built:
            logger.warning("SegmentationData.configure() called after the datasets were built; it has no effect")
        for key, value in (("mean", mean), ("std", std)):
            if self.settings[key] is None and value is not None:
                self.settings[key] = list(value)

    def use_trained(self, *, preprocessing: dict[str, Any], labels: Sequence[str]) -> None:
        """Read every split as a trained model expects: its evaluation preprocessing and its class names."""
        self._fixed_spec = dict(preprocessing)
        self._classes = list(labels)

    def preprocess_spec(self) -> dict[str, Any]:
        """The evaluation preprocessing (see :func:`~oarkit.seg.data.transforms.preprocess_spec`)."""
        if getattr(self, "_fixed_spec", None) is not None:
            return dict(self._fixed_spec)
        if self.crop_size is None:  # crop_size: auto
            side = typical_side([image for image, _ in self.samples("train")], low=128, high=512,
                                what="data.crop_size")
            self.crop_size = [side, side]
        return preprocess_spec(self.settings["mean"] or DEFAULT_MEAN, self.settings["std"] or DEFAULT_STD,
                               self.crop_size, self.val_resize)

    def collate(self, samples: list[Any]) -> Any:
        return pad_collate(samples, self.ignore_index)

    # -- datasets -----------------------------------------------------------------------------------------
    def samples(self, split: str) -> list[tuple[str, str]]:
        """The ``(image, label)`` paths of ``split``: ``"train"``/``"val"`` or, for lists, a list file."""
        if self.format == "list":
            return list_samples(self.root, {"train": self.train_list, "val": self.val_list}.get(split, split))
        name = {"train": self.train_split, "val": self.val_split}.get(split, split)
        return {"cityscapes": cityscapes_samples, "ade20k": ade20k_samples, "voc": voc_samples}[self.format](
            self.root, name)

    def batch_sampler(self, sampler: Sampler[int], dataset: Dataset, *, batch_size: int, train: bool,
                      drop_last: bool) -> Sampler[list[int]] | None:
        """Evaluation batches of images of one size, so that no image is padded because of its batch-mates.

        Zero padding is not neutral for a CNN: normalisation layers turn the zeros into values, and global
        pooling (PP-LiteSeg's SPPM, ASPP's image pooling) averages them in, so a padded image's prediction
        would change with what it is batched with. Grouping by size runs each image exactly as it runs alone
        (evaluation-mode layers treat the samples of a batch independently). Training crops share one size, and
        ``val_resize`` makes every evaluation image the same size: plain batches then.
        """
        if train or self.val_resize is not None or not isinstance(dataset, SegmentationDataset):
            return None
        return GroupedBatchSampler(sampler, dataset.image_sizes(), batch_size, drop_last=drop_last)

    def splits(self) -> tuple[str, ...]:
        return ("train", "val", "<list file>" if self.format == "list" else "<split folder>")

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return segmentation_inventory(self, split)

    def dataset(self, split: str, transform: Any = None) -> SegmentationDataset:
        """A :class:`SegmentationDataset` of ``split`` with ``transform`` (default: the evaluation preprocessing)."""
        transform = build_eval_transform(self.preprocess_spec()) if transform is None else transform
        return SegmentationDataset(self.samples(split), transform, num_classes=self.num_classes,
                                   ignore_index=self.ignore_index, reduce_zero_label=self.format == "ade20k",
                                   seed=self.seed, source=f"{self.root} ({split})")

    def train_dataset(self) -> Dataset:
        if self._train is None:
            transform = build_train_transform(self.preprocess_spec(), scale=self.scale, hflip=self.hflip,
                                              color_jitter=self.color_jitter, ignore_index=self.ignore_index)
            self._train = self.dataset("train", transform)
        return self._train

    def val_dataset(self) -> Dataset | None:
        if not self._val_built:
            if self._val_exists():
                self._val = self.dataset("val", build_eval_transform(self.preprocess_spec()))
            else:
                logger.warning("No validation data in %s; training runs without evaluation", self.root)
            self._val_built = True
        return self._val

    def _val_exists(self) -> bool:
        if self.format != "list":
            return True  # the folder layouts always have a val split; a missing one is an error when read
        try:
            resolve_list_file(self.root, self.val_list, line_form=LIST_LINE_FORM)
        except DataError:
            return False
        return True
