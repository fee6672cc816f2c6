"""The detection dataset (records to tensors with box-aware augmentation, mosaic and mixup), its collate, and the
multi-scale batch sampler.

A sample is ``(image [3, H, W], target)`` with ``target`` a dict: ``boxes`` [N, 4] float32 ``x1, y1, x2, y2`` in
the input's pixels, ``labels`` [N] int64 (0-based), ``iscrowd`` [N] bool (crowds and VOC difficult objects; left
out of training), ``image_id``, ``scale`` ``(sy, sx)`` from the original image to the input and ``orig_size``
``(h, w)``. A batch is ``(images [B, 3, H, W], [target, ...])``.

Training batches may change size from batch to batch (PaddleDetection's ``BatchRandomResize``): the
:class:`MultiScaleBatchSampler` hands the dataset ``(index, size)`` pairs, one size per batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from oarkit.core.data.images import read_image
from oarkit.core.data.seeds import sample_seed

from .records import DetectionRecord
from .transforms import Compose, clip_boxes, normalize, resize_sample

logger = logging.getLogger(__name__)


class DetectionDataset(Dataset):
    """Records read, augmented (training) and resized to the input size.

    Args:
        records: the split's records (checked).
        size: the input ``(height, width)`` when the batch sampler names none.
        mean, std: normalisation in [0, 1] pixel units.
        interpolation: the final resize's interpolation.
        transform: box-aware augmentation (a :class:`~.transforms.Compose`); ``None`` for evaluation.
        mosaic: probability of a four-image mosaic (training).
        mixup: probability of blending with another image and joining their boxes (training).
        train: training samples drop crowd boxes and boxes that augmentation left under ``min_size`` pixels.
        min_size: the smallest box side kept in training, in input pixels.
        seed: the augmentation seed; each sample's generator depends on ``(seed, epoch, index)`` only.
    """

    def __init__(self, records: Sequence[DetectionRecord], *, size: Sequence[int], mean: Sequence[float],
                 std: Sequence[float], interpolation: str = "linear", transform: Compose | None = None,
                 mosaic: float = 0.0, mixup: float = 0.0, train: bool = False, min_size: float = 2.0,
                 seed: int = 0) -> None:
        self.records = list(records)
        self.size = (int(size[0]), int(size[1]))
        self.mean, self.std, self.interpolation = list(mean), list(std), interpolation
        self.transform, self.mosaic, self.mixup = transform, float(mosaic), float(mixup)
        self.train, self.min_size, self.seed = bool(train), float(min_size), int(seed)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __len__(self) -> int:
        return len(self.records)

    # -- samples --------------------------------------------------------------------------------------------
    def load(self, index: int) -> dict[str, Any]:
        """The record's image (float32 RGB) and boxes, unaugmented."""
        rec = self.records[index]
        image = read_image(rec.image).astype(np.float32)
        h, w = image.shape[:2]
        boxes = rec.boxes
        if (w, h) != (rec.width, rec.height):  # annotations made at another size (or EXIF-rotated files)
            logger.debug("%s is %dx%d, its annotation says %dx%d: boxes scaled", rec.image, w, h, rec.width,
                         rec.height)
            boxes = boxes * np.array([w / rec.width, h / rec.height] * 2, np.float32)
        return {"image": image, "boxes": boxes.copy(), "labels": rec.labels.copy(), "iscrowd": rec.iscrowd.copy(),
                "image_id": rec.image_id, "orig_size": (h, w), "scale": (1.0, 1.0)}

    def _mosaic(self, index: int, rng: np.random.Generator) -> dict[str, Any]:
        """Four images around a random centre of a canvas twice the input size, cut to the input size there."""
        s_h, s_w = self.size
        cy, cx = int(rng.uniform(0.5, 1.5) * s_h), int(rng.uniform(0.5, 1.5) * s_w)
        canvas = np.empty((2 * s_h, 2 * s_w, 3), np.float32)
        canvas[:] = 114.0
        parts = [index, *rng.integers(0, len(self), 3).tolist()]
        boxes, labels, crowd = [], [], []
        for k, i in enumerate(parts):
            sample = self.load(int(i))
            h, w = sample["image"].shape[:2]
            r = min(s_h / h, s_w / w)
            sample = resize_sample(sample, (max(1, round(h * r)), max(1, round(w * r))), "linear")
            h, w = sample["image"].shape[:2]
            # quadrant k: top-left, top-right, bottom-left, bottom-right of the centre
            x0 = cx - w if k in (0, 2) else cx
            y0 = cy - h if k in (0, 1) else cy
            xa, ya = max(x0, 0), max(y0, 0)
            xb, yb = min(x0 + w, 2 * s_w), min(y0 + h, 2 * s_h)
            canvas[ya:yb, xa:xb] = sample["image"][ya - y0:yb - y0, xa - x0:xb - x0]
            boxes.append(sample["boxes"] + np.array([x0, y0, x0, y0], np.float32))
            labels.append(sample["labels"])
            crowd.append(sample["iscrowd"])
        top, left = cy - s_h // 2, cx - s_w // 2
        out = {"image": canvas[top:top + s_h, left:left + s_w], "boxes": np.concatenate(boxes) - np.array(
            [left, top, left, top], np.float32), "labels": np.concatenate(labels), "iscrowd": np.concatenate(crowd),
            "image_id": self.records[index].image_id, "orig_size": (s_h, s_w), "scale": (1.0, 1.0)}
        return _keep_visible(out)

    def _mixup(self, sample: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
        """Blend with another image resized to this one, half and half, and join their boxes (YOLOX's mixup)."""
        other = self.load(int(rng.integers(0, len(self))))
        h, w = sample["image"].shape[:2]
        other = resize_sample(other, (h, w), "linear")
        image = 0.5 * sample["image"] + 0.5 * other["image"]
        return {**sample, "image": image, "boxes": np.concatenate([sample["boxes"], other["boxes"]]),
                "labels": np.concatenate([sample["labels"], other["labels"]]),
                "iscrowd": np.concatenate([sample["iscrowd"], other["iscrowd"]])}

    def __getitem__(self, item: int | tuple[int, Sequence[int]]) -> tuple[torch.Tensor, dict[str, Any]]:
        index, size = (item[0], item[1]) if isinstance(item, tuple) else (item, self.size)
        rng = np.random.default_rng(sample_seed(self.seed, self.epoch, int(index)))
        if self.train and self.mosaic > 0 and rng.random() < self.mosaic:
            sample = self._mosaic(int(index), rng)
            orig = self.load_size(int(index))
        else:
            sample = self.load(int(index))
            orig = sample["orig_size"]
        if self.train and self.mixup > 0 and rng.random() < self.mixup:
            sample = self._mixup(sample, rng)
        if self.transform is not None:
            sample = self.transform(sample, rng)
        # Boxes are scaled from the image they came from: the scale back to the original is the original's.
        h, w = sample["image"].shape[:2]
        sample = resize_sample({**sample, "scale": (1.0, 1.0)}, size, self.interpolation)
        if self.train:
            sample = clip_boxes(sample, self.min_size)
            keep = ~sample["iscrowd"]
            sample = {**sample, "boxes": sample["boxes"][keep], "labels": sample["labels"][keep],
                      "iscrowd": sample["iscrowd"][keep]}
        scale = (size[0] / orig[0], size[1] / orig[1]) if (h, w) == tuple(orig) else sample["scale"]
        target = {"boxes": torch.from_numpy(np.ascontiguousarray(sample["boxes"], np.float32)).reshape(-1, 4),
                  "labels": torch.from_numpy(np.asarray(sample["labels"], np.int64)).reshape(-1),
                  "iscrowd": torch.from_numpy(np.asarray(sample["iscrowd"], bool)).reshape(-1),
                  "image_id": torch.tensor(int(self.records[int(index)].image_id)),
                  "scale": torch.tensor(scale, dtype=torch.float64),
                  "orig_size": torch.tensor(orig)}
        return torch.from_numpy(normalize(sample["image"], self.mean, self.std)), target

    def load_size(self, index: int) -> tuple[int, int]:
        rec = self.records[index]
        return rec.height, rec.width

    def image_sizes(self) -> list[tuple[int, int]]:
        """``(height, width)`` of every record (from its annotation)."""
        return [(r.height, r.width) for r in self.records]


def _area(boxes: np.ndarray) -> np.ndarray:
    return (boxes[:, 2] - boxes[:, 0]).clip(0) * (boxes[:, 3] - boxes[:, 1]).clip(0)


def _keep_visible(sample: dict[str, Any], min_visible: float = 0.4) -> dict[str, Any]:
    """Boxes clipped to the image, keeping those with at least ``min_visible`` of their area still in view."""
    h, w = sample["image"].shape[:2]
    boxes = sample["boxes"].copy()
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
    keep = (_area(boxes) >= min_visible * np.maximum(_area(sample["boxes"]), 1e-6)) & (_area(boxes) > 0)
    return {**sample, "boxes": boxes[keep], "labels": sample["labels"][keep], "iscrowd": sample["iscrowd"][keep]}


def detection_collate(samples: Sequence[tuple[torch.Tensor, dict[str, Any]]]) -> tuple[torch.Tensor, list[dict]]:
    """``(images [B, 3, H, W], [target, ...])``; the images of a batch share one size (no padding)."""
    images = [s[0] for s in samples]
    shapes = {tuple(im.shape) for im in images}
    if len(shapes) > 1:
        raise ValueError(f"a detection batch holds images of one size, got {sorted(shapes)}; resize them to the "
                         "input size in the dataset")
    return torch.stack(images), [s[1] for s in samples]


class MultiScaleBatchSampler(Sampler[list[tuple[int, tuple[int, int]]]]):
    """Batches of ``batches`` whose samples carry one input size per batch, drawn from ``sizes``.

    The size of a batch depends on ``(seed, epoch, batch number)`` only, so a resumed epoch gets the same sizes.

    Args:
        batches: a batch sampler of indices.
        sizes: the input sizes ``(height, width)`` drawn from.
        seed: the draw's seed.
    """

    def __init__(self, batches: Sampler[list[int]], sizes: Sequence[Sequence[int]], seed: int = 0) -> None:
        if not sizes:
            raise ValueError("MultiScaleBatchSampler needs at least one size")
        self.batches = batches
        self.sizes = [(int(s[0]), int(s[1])) for s in sizes]
        self.seed, self.epoch = int(seed), 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)
        if hasattr(self.batches, "set_epoch"):
            self.batches.set_epoch(epoch)
        elif hasattr(getattr(self.batches, "sampler", None), "set_epoch"):
            self.batches.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[list[tuple[int, tuple[int, int]]]]:
        rng = np.random.default_rng([self.seed, self.epoch, 7919])
        for batch in self.batches:
            size = self.sizes[int(rng.integers(0, len(self.sizes)))]
            yield [(int(i), size) for i in batch]

    def __len__(self) -> int:
        return len(self.batches)  # type: ignore[arg-type]

