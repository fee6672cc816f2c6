"""OCR data modules: detection, recognition and orientation sets in PaddleOCR's layouts (and ICDAR 2015, PPOCRLabel,
LMDB), with their preprocessing and batch samplers. ``data.root=PATH`` points a recipe at a user's own set."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset, Sampler

from oarkit.core.data import GroupedBatchSampler
from oarkit.core.data.auto_size import AUTO, typical_side
from oarkit.core.data.doctor import DataInventory
from oarkit.core.engine.task import DataModule
from oarkit.core.errors import ConfigError, DataError, did_you_mean

from ..charset import CharDictionary
from .datasets import ClsDataset, DetAugment, DetDataset, DetPreprocess, RecDataset, RecPreprocess
from .formats import LMDBRecSet, read_det_labels, read_icdar2015, read_ppocrlabel, read_rec_list
from .inventory import cls_inventory, det_inventory, rec_inventory
from .samplers import MultiScaleBatchSampler

logger = logging.getLogger(__name__)

DET_FORMATS = ("paddleocr", "icdar2015", "ppocrlabel")
REC_FORMATS = ("list", "lmdb")
#: ICDAR 2015's folder names (Incidental Scene Text, task 4.1)
ICDAR2015 = {"train": ("ch4_training_images", "ch4_training_localization_transcription_gt"),
             "val": ("ch4_test_images", "Challenge4_Test_Task1_GT")}


def _check_loader(batch_size: int, num_workers: int, eval_batch_size: int | None) -> None:
    if batch_size < 1 or num_workers < 0:
        raise ConfigError(f"data.batch_size ({batch_size}) must be >= 1 and data.num_workers ({num_workers}) >= 0")
    if eval_batch_size is not None and eval_batch_size < 1:
        raise ConfigError(f"data.eval_batch_size={eval_batch_size!r} must be >= 1, or null for data.batch_size")


class _OCRData(DataModule):
    def __init__(self, root: str, batch_size: int, eval_batch_size: int | None, num_workers: int, seed: int,
                 doctor: bool = True) -> None:
        _check_loader(batch_size, num_workers, eval_batch_size)
        self.root = str(root)
        self.doctor = bool(doctor)  # run the dataset doctor (oarkit.core.data.doctor) before training
        self.batch_size, self.num_workers, self.seed = int(batch_size), int(num_workers), int(seed)
        self.eval_batch_size = None if eval_batch_size is None else int(eval_batch_size)
        self._cache: dict[str, Dataset] = {}

    def train_dataset(self) -> Dataset:
        if "train" not in self._cache:
            self._cache["train"] = self.dataset("train")
        return self._cache["train"]

    def val_dataset(self) -> Dataset | None:
        if "val" not in self._cache:
            try:
                self._cache["val"] = self.dataset("val")
            except DataError as err:
                logger.warning("No validation data in %s (%s); training runs without evaluation", self.root, err)
                return None
        return self._cache["val"]

    def splits(self) -> tuple[str, ...]:
        return ("train", "val", "<list file>")


class OCRDetData(_OCRData):
    """Text-detection data.

    Args:
        root: the dataset folder.
        format: ``paddleocr`` (label files ``path\\t[{"transcription", "points"}]``), ``icdar2015`` (its image and
            ground-truth folders) or ``ppocrlabel`` (folders each holding PPOCRLabel's ``Label.txt``).
        train_list, val_list: label files (``paddleocr``) or image folders (``ppocrlabel``), relative to ``root``.
        crop_size: training crop ``[height, width]`` (PaddleOCR: 640); ``"auto"``: a square of the training
            pages' median shorter side (a multiple of 32, 160 to 640), for sets of small pages.
        limit_side_len, limit_type: evaluation resize (long side at most / short side at least).
        mean, std, bgr: normalisation (default: the model's, offered by the task; else ImageNet on BGR).
        scale, rotate, hflip, color: training augmentation.
        batch_size, eval_batch_size, num_workers, seed: loader settings (evaluation batches group pages of one
            input size, so a prediction never depends on its batch).
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`) before training.
    """

    def __init__(self, *, root: str, format: str = "paddleocr", train_list: str = "train.txt",
                 val_list: str = "val.txt", crop_size: int | str | Sequence[int] = 640, limit_side_len: int = 960,
                 limit_type: str = "max", mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                 bgr: bool = True, scale: Sequence[float] = (0.5, 3.0), rotate: float = 10.0, hflip: float = 0.5,
                 color: float = 0.3, batch_size: int = 8, eval_batch_size: int | None = 1, num_workers: int = 0,
                 seed: int = 0, doctor: bool = True) -> None:
        super().__init__(root, batch_size, eval_batch_size, num_workers, seed, doctor)
        if format not in DET_FORMATS:
            raise ConfigError(f"data.format={format!r} is not one of {list(DET_FORMATS)}."
                              f"{did_you_mean(format, DET_FORMATS)}")
        if limit_type not in ("max", "min"):
            raise ConfigError(f"data.limit_type={limit_type!r} must be 'max' or 'min'")
        if isinstance(crop_size, str) and crop_size != AUTO:
            raise ConfigError(f"data.crop_size={crop_size!r} must be one or two multiples of 32, or auto")
        self._auto_crop = crop_size == AUTO
        crop = [640, 640] if self._auto_crop else (
            [int(crop_size)] * 2 if isinstance(crop_size, int) else [int(v) for v in crop_size])
        if len(crop) != 2 or any(v < 32 or v % 32 for v in crop):
            raise ConfigError(f"data.crop_size={crop_size!r} must be one or two multiples of 32, or auto")
        self.format, self.train_list, self.val_list = format, train_list, val_list
        self.preprocess = DetPreprocess(limit_side_len=int(limit_side_len), limit_type=limit_type, crop_size=crop,
                                        bgr=bool(bgr))
        self._user_norm = {"mean": mean, "std": std}
        if mean is not None:
            self.preprocess.mean = list(mean)
        if std is not None:
            self.preprocess.std = list(std)
        self.augment = DetAugment(scale=tuple(scale), rotate=float(rotate), hflip=float(hflip), color=float(color))

    def configure(self, *, mean: Sequence[float] | None = None, std: Sequence[float] | None = None) -> None:
        """Offer the model's normalisation; settings the user gave win. Fits ``crop_size: auto``."""
        self._fit_crop()
        if mean is not None and self._user_norm["mean"] is None:
            self.preprocess.mean = list(mean)
        if std is not None and self._user_norm["std"] is None:
            self.preprocess.std = list(std)

    def use_trained(self, preprocess: dict[str, Any]) -> None:
        """Read splits as a trained model expects (its normalisation and evaluation resize)."""
        for key in ("mean", "std", "bgr", "limit_side_len", "limit_type"):
            if key in preprocess:
                setattr(self.preprocess, key, preprocess[key])

    def samples(self, split: str) -> list:
        root = Path(self.root)
        name = {"train": self.train_list, "val": self.val_list}.get(split, split)
        if self.format == "icdar2015":
            images, gts = ICDAR2015.get(split, (split, f"{split}_gt"))
            return read_icdar2015(root / images, root / gts)
        if self.format == "ppocrlabel":
            return read_ppocrlabel(root / name)
        return read_det_labels(root / name, image_root=root)

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return det_inventory(self, split)

    def _fit_crop(self) -> None:
        """``crop_size: auto``: a square crop of the training pages' median shorter side, measured once."""
        if not self._auto_crop:
            return
        side = typical_side([path for path, _ in self.samples("train")], low=160, high=640, what="data.crop_size")
        self.preprocess.crop_size = [side, side]
        self._auto_crop = False

    def dataset(self, split: str) -> DetDataset:
        self._fit_crop()
        return DetDataset(self.samples(split), self.preprocess, train=split == "train", augment=self.augment,
                          seed=self.seed)

    def batch_sampler(self, sampler: Sampler[int], dataset: Dataset, *, batch_size: int, train: bool,
                      drop_last: bool) -> Sampler[list[int]] | None:
        """Evaluation batches of pages that resize to one input size (training crops share one size)."""
        if train or not isinstance(dataset, DetDataset):
            return None
        return GroupedBatchSampler(sampler, [dataset.input_size(i) for i in range(len(dataset))], batch_size,
                                   drop_last=drop_last)


class OCRRecData(_OCRData):
    """Text-recognition data.

    Args:
        root: the dataset folder.
        format: ``list`` (``path\\tlabel`` files) or ``lmdb`` (LMDB folders).
        train_list, val_list: list files or LMDB folders, relative to ``root``.
        dictionary: the character dictionary (a built-in name or a file; default: the model's, offered by the
            task).
        use_space_char: append a space to the dictionary.
        height, width: input height and padded width (PaddleOCR: 48 x 320).
        max_text_length: longer training labels are left out.
        multi_scale_widths: training batches pad to a width drawn from these (PaddleOCR's multi-scale sampler;
            empty: every batch at ``width``).
        augment_prob: the probability of each training augmentation.
        batch_size, eval_batch_size, num_workers, seed: loader settings.
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`) before training.
    """

    def __init__(self, *, root: str, format: str = "list", train_list: str = "train.txt", val_list: str = "val.txt",
                 dictionary: str | None = None, use_space_char: bool | None = None, height: int = 48,
                 width: int = 320, max_text_length: int = 25, multi_scale_widths: Sequence[int] = (),
                 augment_prob: float = 0.4, batch_size: int = 64, eval_batch_size: int | None = None,
                 num_workers: int = 0, seed: int = 0, doctor: bool = True) -> None:
        super().__init__(root, batch_size, eval_batch_size, num_workers, seed, doctor)
        if format not in REC_FORMATS:
            raise ConfigError(f"data.format={format!r} is not one of {list(REC_FORMATS)}."
                              f"{did_you_mean(format, REC_FORMATS)}")
        if height < 8 or width < 8:
            raise ConfigError(f"data.height={height} and data.width={width} must be at least 8")
        self.format, self.train_list, self.val_list = format, train_list, val_list
        self.dictionary_name, self.use_space_char = dictionary, use_space_char
        self.preprocess = RecPreprocess(height=int(height), width=int(width), max_text_length=int(max_text_length))
        self.multi_scale_widths = [int(w) for w in multi_scale_widths]
        self.augment_prob = float(augment_prob)
        self._dictionary: CharDictionary | None = None

    @property
    def dictionary(self) -> CharDictionary:
        """The character dictionary (the data's, else the one the task offered, else ``ppocr_keys_v1``)."""
        if self._dictionary is None:
            self._dictionary = CharDictionary.load(self.dictionary_name or "ppocr_keys_v1",
                                                   use_space_char=bool(self.use_space_char))
        return self._dictionary

    def configure(self, *, dictionary: CharDictionary | None = None, height: int | None = None) -> None:
        """Offer the model's dictionary and input height; a dictionary the user named wins."""
        if dictionary is not None and self.dictionary_name is None:
            self._dictionary = dictionary
        if height is not None:
            self.preprocess.height = int(height)

    def use_trained(self, preprocess: dict[str, Any], dictionary: CharDictionary) -> None:
        """Read splits as a trained model expects."""
        for key in ("height", "width", "mean", "std", "bgr", "max_text_length"):
            if key in preprocess:
                setattr(self.preprocess, key, preprocess[key])
        self._dictionary = dictionary

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return rec_inventory(self, split)

    def dataset(self, split: str) -> RecDataset:
        name = {"train": self.train_list, "val": self.val_list}.get(split, split)
        path = Path(self.root) / name
        if self.format == "lmdb":
            samples: Any = LMDBRecSet(path)
        else:
            samples = read_rec_list(path, image_root=self.root)
        return RecDataset(samples, self.dictionary, self.preprocess, train=split == "train",
                          augment_prob=self.augment_prob, seed=self.seed)

    def batch_sampler(self, sampler: Sampler[int], dataset: Dataset, *, batch_size: int, train: bool,
                      drop_last: bool) -> Sampler[Any] | None:
        """Multi-scale training batches when ``multi_scale_widths`` is set; plain batches otherwise."""
        if not train or not self.multi_scale_widths:
            return None
        return MultiScaleBatchSampler(sampler, self.multi_scale_widths, batch_size, base_width=self.preprocess.width,
                                      drop_last=drop_last, seed=self.seed)


class OCRClsData(_OCRData):
    """Text-line orientation data: a recognition list whose lines are turned 180 degrees half the time, or a list
    labelled ``0`` / ``180``.

    Args:
        root: the dataset folder.
        train_list, val_list: list files relative to ``root``.
        height, width: the classifier's input (PaddleOCR's cls: 48 x 192).
        augment_prob: the probability of each training augmentation.
        batch_size, eval_batch_size, num_workers, seed: loader settings.
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`) before training.
    """

    def __init__(self, *, root: str, train_list: str = "train.txt", val_list: str = "val.txt", height: int = 48,
                 width: int = 192, augment_prob: float = 0.4, batch_size: int = 64, eval_batch_size: int | None = None,
                 num_workers: int = 0, seed: int = 0, doctor: bool = True) -> None:
        super().__init__(root, batch_size, eval_batch_size, num_workers, seed, doctor)
        self.train_list, self.val_list = train_list, val_list
        self.height, self.width, self.augment_prob = int(height), int(width), float(augment_prob)
        self.mean: Sequence[float] = (0.5, 0.5, 0.5)
        self.std: Sequence[float] = (0.5, 0.5, 0.5)

    def configure(self, *, height: int | None = None, width: int | None = None, mean: Sequence[float] | None = None,
                  std: Sequence[float] | None = None) -> None:
        """Take the model's input size and normalisation."""
        self.height, self.width = int(height or self.height), int(width or self.width)
        self.mean, self.std = tuple(mean or self.mean), tuple(std or self.std)

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return cls_inventory(self, split)

    def dataset(self, split: str) -> ClsDataset:
        name = {"train": self.train_list, "val": self.val_list}.get(split, split)
        return ClsDataset(read_rec_list(Path(self.root) / name, image_root=self.root), height=self.height,
                          width=self.width, mean=self.mean, std=self.std, train=split == "train",
                          augment_prob=self.augment_prob, seed=self.seed)
