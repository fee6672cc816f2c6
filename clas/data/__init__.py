"""Classification data: datasets, the DataModule, preprocessing presets, Mixup/CutMix and the digits demo set."""

from .datasets import ClassificationDataset, ImageFolderDataset, ListFileDataset
from .digits import prepare_digits
from .mixup import MixupCutmix
from .module import ClassificationData, read_label_file
from .transforms import apply_spec, build_eval_transform, build_train_transform, preprocess_spec

__all__ = [
    "ClassificationData",
    "ClassificationDataset",
    "ImageFolderDataset",
    "ListFileDataset",
    "MixupCutmix",
    "apply_spec",
    "build_eval_transform",
    "build_train_transform",
    "prepare_digits",
    "preprocess_spec",
    "read_label_file",
]
