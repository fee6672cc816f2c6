"""Segmentation data: datasets and layouts, joint transforms, label sets, and the synthetic shapes and textures sets."""

from .datasets import (
    LAYOUTS,
    SegmentationDataset,
    ade20k_samples,
    cityscapes_samples,
    list_samples,
    pad_collate,
    voc_samples,
)
from .io import check_label, read_label
from .labels import ADE20K_CLASSES, CITYSCAPES_CLASSES, LABEL_SETS, VOC_CLASSES, color_map
from .module import SegmentationData, read_class_names
from .shapes import prepare_shapes
from .textures import prepare_textures
from .transforms import apply_spec, build_eval_transform, build_train_transform, preprocess_spec

__all__ = [
    "ADE20K_CLASSES", "CITYSCAPES_CLASSES", "LABEL_SETS", "LAYOUTS", "VOC_CLASSES", "SegmentationData",
    "SegmentationDataset", "ade20k_samples", "apply_spec", "build_eval_transform", "build_train_transform",
    "check_label", "cityscapes_samples", "color_map", "list_samples", "pad_collate", "prepare_shapes",
    "prepare_textures", "preprocess_spec", "read_class_names", "read_label", "voc_samples",
]
