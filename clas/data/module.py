"""The classification DataModule: datasets, label names and the preprocessing they share with deployment."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from oarkit.core.data import resolve_list_file
from oarkit.core.data.auto_size import AUTO, typical_side
from oarkit.core.data.doctor import DataInventory
from oarkit.core.data.images import IMAGE_SUFFIXES
from oarkit.core.engine.task import DataModule
from oarkit.core.errors import ConfigError, DataError, did_you_mean

from . import augment_probe
from .datasets import (
    IMAGEFOLDER_LAYOUT,
    LIST_LINE_FORM,
    ClassificationDataset,
    ImageFolderDataset,
    ListFileDataset,
    UnlabeledImages,
    find_classes,
    parse_list_file,
)
from .inventory import classification_inventory
from .transforms import IMAGENET_MEAN, IMAGENET_STD, build_eval_transform, build_train_transform, preprocess_spec

logger = logging.getLogger(__name__)

FORMATS = ("imagefolder", "list")

#: what is used when neither the user nor the model (through :meth:`ClassificationData.configure`) says
DEFAULTS: dict[str, Any] = {
    "image_size": 224,
    "mean": list(IMAGENET_MEAN),
    "std": list(IMAGENET_STD),
    "crop_pct": 0.875,
    "interpolation": "bilinear",
}


def read_label_file(path: str | Path) -> list[str]:
    """Names from a PaddleClas label list (``<index> <name>`` per line, indices 0..N-1 in order)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"Label file {path} does not exist; expected lines '<index> <name>', e.g. '0 tench'")
    names: list[str] = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            line = line.strip()
            if not line:
                continue
            parts = line.split(maxsplit=1)  # names may contain spaces ("0 tench, Tinca tinca")
            if len(parts) != 2 or not parts[0].isdigit():
                raise DataError(f"{path}:{number}: cannot read {line!r}; expected '<index> <name>', e.g. '0 tench'")
            if int(parts[0]) != len(names):
                raise DataError(f"{path}:{number}: index {parts[0]} out of order; expected {len(names)}")
            names.append(parts[1])
    if not names:
        raise DataError(f"Label file {path} is empty; expected lines '<index> <name>'")
    return names


class ClassificationData(DataModule):
    """Image-classification data from an image-folder tree or PaddleClas list files.

    Preprocessing settings left as ``None`` are filled by :meth:`configure` (the task passes the model's
    pretrained settings), then by :data:`DEFAULTS`.

    Args:
        root: the dataset folder.
        format: ``"imagefolder"`` (``root/<split>/<class>/*.jpg``) or ``"list"`` (PaddleClas list files).
        train_split, val_split: split folders of the image-folder format.
        train_list, val_list: list files of the list format (relative paths are looked up in ``root`` first).
        label_file: PaddleClas label list (``<index> <name>`` per line) giving the label names. With the
            image-folder format its order must follow the sorted folder names.
        image_size: crop size for training and evaluation; ``"auto"``: the training images' median shorter side,
            rounded up to a multiple of 32, within [32, 224] (own-data recipes).
        batch_size, num_workers: loader settings read by the Trainer.
        mean, std: normalisation of the [0, 1] image.
        crop_pct: eval crop size over resize size.
        interpolation: resize interpolation (``"bilinear"``, ``"bicubic"``, ...).
        hflip: horizontal-flip probability in training.
        scale: area range of the training random resized crop.
            ``hflip``, ``scale`` and ``crop_pct`` also take ``"auto"``: chosen from the training images by
            :mod:`~oarkit.clas.data.augment_probe` (no flips where a mirror image changes the class, shallow crops
            and no eval border crop where the object fills its image).
        color_jitter: brightness / contrast / saturation strength in training (0 is off).
        affine: strength in [0, 1] of a random rotation / shear / zoom / shift in training (0 is off; see
            :func:`~oarkit.clas.data.transforms.build_train_transform`).
        random_erasing: probability of erasing a random rectangle of each training image (0 is off).
        skip_corrupt: scan every image up front and drop unreadable ones instead of failing mid-epoch.
        seed: augmentation seed.
        doctor: run the dataset doctor (:mod:`oarkit.core.data.doctor`) before training.
    """

    def __init__(
        self,
        *,
        root: str,
        format: str = "imagefolder",
        train_split: str = "train",
        val_split: str = "val",
        train_list: str = "train_list.txt",
        val_list: str = "val_list.txt",
        label_file: str | None = None,
        image_size: int | str | None = None,
        batch_size: int = 32,
        num_workers: int = 0,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        crop_pct: float | str | None = None,
        interpolation: str | None = None,
        hflip: float | str = 0.5,
        scale: tuple[float, float] | str = (0.08, 1.0),
        color_jitter: float = 0.0,
        affine: float = 0.0,
        random_erasing: float = 0.0,
        skip_corrupt: bool = False,
        seed: int = 0,
        doctor: bool = True,
    ) -> None:
        if format not in FORMATS:
            raise ConfigError(f"data format={format!r} is not one of {list(FORMATS)}.{did_you_mean(format, FORMATS)}")
        if batch_size < 1:
            raise ConfigError(f"batch_size={batch_size!r} must be >= 1")
        if num_workers < 0:
            raise ConfigError(f"num_workers={num_workers!r} must be >= 0")
        if isinstance(image_size, str) and image_size != AUTO:
            raise ConfigError(f"data.image_size={image_size!r} must be a number of pixels, auto or null")
        for name, value in (("hflip", hflip), ("scale", scale), ("crop_pct", crop_pct)):
            if isinstance(value, str) and value != augment_probe.AUTO:
                raise ConfigError(f"data.{name}={value!r} must be a number, auto or left out")
        self.root = str(root)
        self.format = format
        self.train_split, self.val_split = train_split, val_split
        self.train_list, self.val_list = train_list, val_list
        self.label_file = label_file
        self.batch_size = int(batch_size)
        self.num_workers = int(num_workers)
        self.settings: dict[str, Any] = {
            "image_size": image_size,
            "mean": None if mean is None else list(mean),
            "std": None if std is None else list(std),
            "crop_pct": crop_pct,
            "interpolation": interpolation,
        }
        self.hflip, self.color_jitter = hflip, color_jitter
        self.scale = scale if scale == augment_probe.AUTO else tuple(scale)
        self.affine, self.random_erasing = float(affine), float(random_erasing)
        self.skip_corrupt = skip_corrupt
        self.seed = int(seed)
        self.doctor = bool(doctor)
        self._classes: list[str] | None = None
        self._folder_classes: list[str] | None = None
        self._train: ClassificationDataset | None = None
        self._val: ClassificationDataset | None = None
        self._val_built = False
        self._fixed_spec: dict[str, Any] | None = None

    # -- labels -------------------------------------------------------------------------------------------

    @property
    def classes(self) -> list[str]:
        """Label names, index order: the label file, else the training class folders, else ``str(i)``."""
        if self._classes is None:
            names = read_label_file(self.label_file) if self.label_file else None
            if self.format == "imagefolder":
                folders = self._train_folder_classes()
                if names is not None and len(names) != len(folders):
                    raise DataError(
                        f"Label file {self.label_file} names {len(names)} classes but "
                        f"{Path(self.root) / self.train_split} has {len(folders)} class folders; give one name per "
                        "folder, in sorted folder order"
                    )
                self._classes = names or folders
            elif names is not None:
                self._classes = names
            else:
                train_list = resolve_list_file(self.root, self.train_list, line_form=LIST_LINE_FORM)
                labels = [label for _, label in parse_list_file(train_list)]
                if not labels:
                    raise DataError(f"Training list {self.train_list} in {self.root} is empty")
                self._classes = [str(i) for i in range(max(labels) + 1)]
        return self._classes

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    def _train_folder_classes(self) -> list[str]:
        if self._folder_classes is None:
            folder = Path(self.root) / self.train_split
            if not folder.is_dir():
                raise DataError(f"Training split {folder} does not exist; expected {IMAGEFOLDER_LAYOUT}")
            self._folder_classes = find_classes(folder)
            if not self._folder_classes:
                raise DataError(f"{folder} has no class folders; expected {IMAGEFOLDER_LAYOUT}")
        return self._folder_classes

    # -- preprocessing ------------------------------------------------------------------------------------

    def configure(
        self,
        *,
        input_size: int | Sequence[int] | None = None,
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        crop_pct: float | None = None,
        interpolation: str | None = None,
    ) -> None:
        """Offer the model's pretrained preprocessing; only the settings the user left as ``None`` take it.

        Call before the datasets are built (the transforms are fixed then).
        """
        offered = {
            "image_size": input_size,
            "mean": None if mean is None else list(mean),
            "std": None if std is None else list(std),
            "crop_pct": crop_pct,
            "interpolation": interpolation,
        }
        taken = {k: v for k, v in offered.items() if self.settings[k] is None and v is not None}
        if taken and (self._train is not None or self._val_built):
            logger.warning("ClassificationData.configure(%s) came after the datasets were built; it has no effect",
                           ", ".join(f"{k}={v}" for k, v in taken.items()))
            return
        self.settings.update(taken)

    def use_trained(self, *, preprocessing: dict[str, Any], labels: Sequence[str]) -> None:
        """Read every split as a trained model expects: its eval preprocessing and its class names, index order
        (image folders are matched by name, so another dataset with the same classes evaluates correctly)."""
        self._fixed_spec = dict(preprocessing)
        self._classes = list(labels)
        if self.format == "imagefolder":
            self._folder_classes = list(labels)

    def preprocess_spec(self) -> dict[str, Any]:
        """The eval preprocessing (see :func:`~oarkit.clas.data.transforms.preprocess_spec`)."""
        if self._fixed_spec is not None:
            return dict(self._fixed_spec)
        if self.settings["image_size"] == AUTO:
            self.settings["image_size"] = typical_side(self._train_paths(), high=224)
        self._choose_augmentation()
        s = {k: DEFAULTS[k] if v is None else v for k, v in self.settings.items()}
        return preprocess_spec(s["image_size"], s["mean"], s["std"], s["crop_pct"], s["interpolation"])

    def _choose_augmentation(self) -> None:
        """Settle the ``auto`` ones of hflip, scale and crop_pct from the training images (once)."""
        auto = augment_probe.AUTO
        if auto in (self.hflip, self.scale, self.settings["crop_pct"]):
            self.hflip, self.scale, self.settings["crop_pct"] = augment_probe.resolve(
                self._train_samples(), hflip=self.hflip, scale=self.scale, crop_pct=self.settings["crop_pct"],
                seed=self.seed)

    def _train_paths(self) -> list[str]:
        """The training images' paths (for ``image_size: auto``)."""
        return [path for path, _ in self._train_samples()]

    def _train_samples(self) -> list[tuple[str, int]]:
        """The training images' paths and labels, read from the folders or the list (nothing decoded)."""
        if self.format == "imagefolder":
            folder = Path(self.root) / self.train_split
            return [(str(p), index) for index, name in enumerate(self._train_folder_classes())
                    for p in sorted((folder / name).iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES]
        train_list = resolve_list_file(self.root, self.train_list, line_form=LIST_LINE_FORM)
        return [(str(Path(self.root) / rel), label) for rel, label in parse_list_file(train_list)]

    # -- datasets -----------------------------------------------------------------------------------------

    def train_dataset(self) -> Dataset:
        """The training split with random augmentation (built once)."""
        if self._train is None:
            self._train = self._build(self.train_split, self.train_list, self._train_transform())
        return self._train

    def unlabeled_dataset(self, root: str | Path) -> Dataset:
        """Every image under ``root`` (recursively, any layout), without labels, through the training
        augmentation: the unlabeled images of ``distill=ssld``."""
        paths = sorted(str(p) for p in Path(root).rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        if not paths:
            raise DataError(f"no images ({', '.join(sorted(IMAGE_SUFFIXES))}) under {root}; distill.unlabeled_root "
                            "names a folder of images")
        return UnlabeledImages([(p, -1) for p in paths], self._train_transform(), skip_corrupt=self.skip_corrupt,
                               seed=self.seed, source=str(root))

    def _train_transform(self) -> Any:
        spec = self.preprocess_spec()
        self._choose_augmentation()  # also where a trained model's spec fixed the preprocessing
        return build_train_transform(spec, scale=self.scale, hflip=self.hflip,
                                     color_jitter=self.color_jitter, affine=self.affine,
                                     random_erasing=self.random_erasing)

    def val_dataset(self) -> Dataset | None:
        """The validation split with eval preprocessing, or ``None`` (and a warning) when it does not exist."""
        if not self._val_built:
            if self._val_exists():
                self._val = self._build(self.val_split, self.val_list, build_eval_transform(self.preprocess_spec()))
            else:
                where = Path(self.root) / (self.val_split if self.format == "imagefolder" else self.val_list)
                logger.warning("No validation data at %s; training runs without evaluation", where)
            self._val_built = True
        return self._val

    def splits(self) -> tuple[str, ...]:
        return ("train", "val", "<folder or list file>")

    def inventory(self, split: str) -> DataInventory | None:
        """What the dataset doctor examines of ``split``; ``None`` when it does not exist."""
        return classification_inventory(self, split)

    def dataset(self, split: str) -> Dataset:
        """A split with the eval preprocessing: ``train``, ``val``, or another split folder (image folders) or
        list file (list format) inside ``root``."""
        if self.format == "imagefolder":
            folder = {"train": self.train_split, "val": self.val_split}.get(split, split)
            return self._build(folder, "", build_eval_transform(self.preprocess_spec()))
        list_file = {"train": self.train_list, "val": self.val_list}.get(split, split)
        return self._build("", list_file, build_eval_transform(self.preprocess_spec()))

    def _val_exists(self) -> bool:
        if self.format == "imagefolder":
            return (Path(self.root) / self.val_split).is_dir()
        try:
            resolve_list_file(self.root, self.val_list, line_form=LIST_LINE_FORM)
        except DataError:
            return False
        return True

    def _build(self, split: str, list_file: str, transform) -> ClassificationDataset:
        if self.format == "imagefolder":
            dataset: ClassificationDataset = ImageFolderDataset(
                self.root,
                split,
                transform,
                classes=self._train_folder_classes(),
                skip_corrupt=self.skip_corrupt,
                seed=self.seed,
            )
        else:
            dataset = ListFileDataset(self.root, list_file, transform, skip_corrupt=self.skip_corrupt, seed=self.seed)
            if dataset.num_classes > self.num_classes:
                raise DataError(
                    f"{dataset.list_file} has label {dataset.num_classes - 1} but there are only {self.num_classes} "
                    f"classes ({'from ' + self.label_file if self.label_file else 'from the training list'}); "
                    "fix the label or add the class to the label file"
                )
        return dataset
