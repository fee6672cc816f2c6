"""The detection DataModule: COCO, VOC or YOLO splits, their class names, augmentation and multi-scale batches."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from torch.utils.data import BatchSampler, Dataset, Sampler

from oarkit.core.data.auto_size import AUTO
from oarkit.core.data.doctor import DataInventory
from oarkit.core.engine.task import DataModule
from oarkit.core.errors import ConfigError, DataError

from .check import ACTIONS, check_records
from .dataset import DetectionDataset, MultiScaleBatchSampler, detection_collate
from .formats import check_format, read_split
from .inventory import detection_inventory
from .records import DetectionRecord
from .transforms import MEAN, STD, Compose, PhotometricDistort, RandomCrop, RandomExpand, RandomFlip, preprocess_spec

logger = logging.getLogger(__name__)


def _hw(value: int | Sequence[int], key: str) -> tuple[int, int]:
    if isinstance(value, int):
        value = (value, value)
    value = tuple(int(v) for v in value)
    if len(value) != 2 or min(value) < 1:
        raise ConfigError(f"{key}={list(value)} must be one side or [height, width], each at least 1")
    return value  # type: ignore[return-value]


class DetectionData(DataModule):
    """Object-detection data in COCO (PaddleDetection's layout), Pascal VOC or YOLO format.

    Class names come from the training annotations (COCO categories, VOC ``label_list.txt``, YOLO ``names``) and
    flow into the model head, the card and meta.json; the validation split is read with the same list. Every
    split goes through the dataset check (``check``).

    Args:
        root: the dataset folder.
        format: ``coco``, ``voc`` or ``yolo``.
        train_annotation, val_annotation: COCO files (default ``annotations/instances_{train,val}.json``).
        train_images, val_images: COCO image folders (default ``train/``, ``val/``).
        train_list, val_list: VOC lists (default ``trainval.txt``, ``test.txt``).
        label_list: VOC class list (default ``label_list.txt``).
        data_yaml: YOLO data file (default ``data.yaml``).
        size: the input ``[height, width]`` (evaluation and export); ``None``: the model card's; ``"auto"``: the
            training images' median longer side, rounded up to a multiple of 32, within [160, 640] (own-data
            recipes).
        multi_scale: training sizes drawn per batch (each a side or ``[h, w]``); empty: ``size`` only.
        mosaic, mixup: probabilities of a four-image mosaic and of mixup in training.
        distort: photometric distortion (brightness, contrast, saturation, hue) in training.
        expand_ratio: random expand (zoom out) up to this ratio in training; 1 is off.
        crop: SSD-style random crop in training.
        hflip: horizontal-flip probability in training.
        mean, std: normalisation in [0, 1] pixel units; ``None``: the model card's, else ImageNet's.
        interpolation: the resize to the input size (``cubic`` like PaddleDetection's eval ``Resize``).
        check: what the dataset check does with bad boxes: ``report``, ``fix`` or ``refuse``.
        skip_empty: leave training images without boxes out (PaddleDetection's default).
        batch_size, eval_batch_size, num_workers: loader settings read by the Trainer.
        seed: augmentation seed.
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`, which reports the box problems above
            among others) before training.
    """

    def __init__(self, *, root: str, format: str = "coco", train_annotation: str | None = None,
                 val_annotation: str | None = None, train_images: str | None = None, val_images: str | None = None,
                 train_list: str | None = None, val_list: str | None = None, label_list: str | None = None,
                 data_yaml: str | None = None, size: int | Sequence[int] | str | None = None,
                 multi_scale: Sequence[int | Sequence[int]] = (), mosaic: float = 0.0, mixup: float = 0.0,
                 distort: bool = True, expand_ratio: float = 1.0, crop: bool = False, hflip: float = 0.5,
                 mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                 interpolation: str = "cubic", check: str = "fix", skip_empty: bool = True, batch_size: int = 8,
                 eval_batch_size: int | None = None, num_workers: int = 0, seed: int = 0,
                 doctor: bool = True) -> None:
        check_format(format)
        if check not in ACTIONS:
            raise ConfigError(f"data.check={check!r} must be one of {list(ACTIONS)}")
        if batch_size < 1 or num_workers < 0 or (eval_batch_size is not None and eval_batch_size < 1):
            raise ConfigError(f"data.batch_size ({batch_size}) and data.eval_batch_size ({eval_batch_size}) must be "
                              f">= 1, data.num_workers ({num_workers}) >= 0")
        for key, p in (("mosaic", mosaic), ("mixup", mixup), ("hflip", hflip)):
            if not 0 <= p <= 1:
                raise ConfigError(f"data.{key}={p} is a probability: give a value in [0, 1]")
        self.root, self.format = str(root), format
        self.paths = {"train": {"annotation": train_annotation, "image_dir": train_images, "list_file": train_list,
                                "label_list": label_list, "data_yaml": data_yaml},
                      "val": {"annotation": val_annotation, "image_dir": val_images, "list_file": val_list,
                              "label_list": label_list, "data_yaml": data_yaml}}
        if isinstance(size, str) and size != AUTO:
            raise ConfigError(f"data.size={size!r} must be a side, [height, width], auto or null")
        self._auto_size = size == AUTO
        self.size = None if size is None or self._auto_size else _hw(size, "data.size")
        self.multi_scale = [_hw(s, "data.multi_scale") for s in multi_scale]
        self.mosaic, self.mixup, self.distort = float(mosaic), float(mixup), bool(distort)
        self.expand_ratio, self.crop, self.hflip = float(expand_ratio), bool(crop), float(hflip)
        self.settings: dict[str, Any] = {"mean": None if mean is None else list(mean),
                                         "std": None if std is None else list(std), "interpolation": interpolation}
        self.check, self.skip_empty, self.doctor = check, bool(skip_empty), bool(doctor)
        self.batch_size, self.num_workers, self.seed = int(batch_size), int(num_workers), int(seed)
        self.eval_batch_size = None if eval_batch_size is None else int(eval_batch_size)
        self._classes: list[str] | None = None
        self._fixed_spec: dict[str, Any] | None = None
        self._cache: dict[str, Dataset] = {}

    # -- classes and preprocessing ----------------------------------------------------------------------------
    def records(self, split: str) -> list[DetectionRecord]:
        """The checked records of ``split`` (``train``, ``val``; VOC: a list file; COCO: an annotation file)."""
        paths = dict(self.paths.get(split) or {})
        name = split
        if split not in self.paths:  # another file of the format's own kind
            paths = {"annotation": split, "list_file": split, "data_yaml": paths.get("data_yaml")}
            name = "val"
        records, classes = read_split(self.format, self.root, name, self._classes if split != "train" else None,
                                      **paths)
        if self._classes is None:
            self._classes = classes
        if not self._classes:
            raise DataError(f"{self.root} ({split}) names no classes; COCO needs categories, VOC a label_list.txt, "
                            "YOLO names: in its data yaml")
        records, _ = check_records(records, len(self._classes), action=self.check, source=f"{self.root} ({split})")
        # A box of an unknown category has no class to learn or score: even a reporting check leaves it out.
        records = [r if (r.labels >= 0).all() else r.select(r.labels >= 0) for r in records]
        if split == "train" and self.skip_empty:
            kept = [r for r in records if (~r.iscrowd).any()]
            if len(kept) < len(records):
                logger.info("%s (train): %d images without boxes left out (data.skip_empty)", self.root,
                            len(records) - len(kept))
            records = kept
        return records

    @property
    def classes(self) -> list[str]:
        """Class names, index order, from the training annotations."""
        if self._classes is None:
            _, self._classes = read_split(self.format, self.root, "train", None, **self.paths["train"])
        return self._classes

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def configure(self, *, size: Sequence[int] | None = None, mean: Sequence[float] | None = None,
                  std: Sequence[float] | None = None) -> None:
        """Offer the model card's input size and normalisation; only settings left as ``None`` take them."""
        if self.size is None and size is not None and not self._auto_size:
            self.size = _hw(list(size), "data.size")
        for key, value in (("mean", mean), ("std", std)):
            if self.settings[key] is None and value is not None:
                self.settings[key] = list(value)

    def use_trained(self, *, preprocessing: dict[str, Any], labels: Sequence[str]) -> None:
        """Read every split as a trained model expects: its evaluation preprocessing and its class names."""
        self._fixed_spec = dict(preprocessing)
        self._classes = list(labels)
        self._cache.clear()

    def preprocess_spec(self) -> dict[str, Any]:
        """The evaluation preprocessing (see :func:`~.transforms.preprocess_spec`)."""
        if self._fixed_spec is not None:
            return dict(self._fixed_spec)
        if self._auto_size and self.size is None:
            self.size = self._fitted_size()
        return preprocess_spec(self.size or (640, 640), self.settings["mean"] or MEAN, self.settings["std"] or STD,
                               self.settings["interpolation"])

    def _fitted_size(self) -> tuple[int, int]:
        """``size: auto``: a square input of the training images' median longer side (multiple of 32, 160 to 640),
        from the sizes the annotations record."""
        sides = sorted(max(r.width, r.height) for r in self.records("train"))
        if not sides:
            raise DataError(f"data.size=auto measures the training images, but {self.root} (train) has none")
        side = int(min(640, max(160, -(-sides[len(sides) // 2] // 32) * 32)))
        logger.info("data.size=auto: the training images' median longer side is %d px, so %dx%d",
                    sides[len(sides) // 2], side, side)
        return side, side

    def collate(self, samples: list[Any]) -> Any:
        return detection_collate(samples)

    # -- datasets -----------------------------------------------------------------------------------------------
    def augmentation(self) -> Compose:
        """The training augmentation (before the resize to the batch's size)."""
        steps: list[Any] = []
        if self.distort:
            steps.append(PhotometricDistort())
        if self.expand_ratio > 1:
            spec = self.preprocess_spec()
            steps.append(RandomExpand(self.expand_ratio, fill=[255 * m for m in spec["mean"]]))
        if self.crop:
            steps.append(RandomCrop())
        if self.hflip > 0:
            steps.append(RandomFlip(self.hflip))
        return Compose(steps)

    def dataset(self, split: str, train: bool = False) -> DetectionDataset:
        """A split with the evaluation preprocessing (or, with ``train``, the training augmentation)."""
        spec = self.preprocess_spec()
        return DetectionDataset(self.records(split), size=spec["size"], mean=spec["mean"], std=spec["std"],
                                interpolation=spec.get("interpolation", "linear"),
                                transform=self.augmentation() if train else None,
                                mosaic=self.mosaic if train else 0.0, mixup=self.mixup if train else 0.0,
                                train=train, seed=self.seed)

    def train_dataset(self) -> Dataset:
        if "train" not in self._cache:
            self._cache["train"] = self.dataset("train", train=True)
        return self._cache["train"]

    def val_dataset(self) -> Dataset | None:
        if "val" not in self._cache:
            try:
                self._cache["val"] = self.dataset("val")
            except DataError as err:
                if "does not exist" not in str(err):
                    raise
                logger.warning("No validation data in %s (%s); training runs without evaluation", self.root, err)
                return None
        return self._cache["val"]

    def splits(self) -> tuple[str, ...]:
        return ("train", "val", "<annotation or list file>")

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return detection_inventory(self, split)

    def batch_sampler(self, sampler: Sampler[int], dataset: Dataset, *, batch_size: int, train: bool,
                      drop_last: bool) -> Sampler[list[Any]] | None:
        """Training batches of one size each, drawn from ``multi_scale`` (PaddleDetection's ``BatchRandomResize``).

        Evaluation needs no grouping: every image is resized to the one input size, so nothing is padded.
        """
        if not train or not self.multi_scale:
            return None
        return MultiScaleBatchSampler(BatchSampler(sampler, batch_size, drop_last), self.multi_scale, seed=self.seed)
