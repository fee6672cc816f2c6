"""Box-aware augmentation and the evaluation preprocessing, on ``{"image", "boxes", "labels", "iscrowd"}`` samples.

The image is float32 HxWx3 RGB in [0, 255], boxes ``[N, 4]`` float32 ``x1, y1, x2, y2`` in its pixels. Each
augmentation takes the sample and a ``numpy.random.Generator`` (seeded per sample from ``(seed, epoch, index)``)
and returns a new sample whose boxes still frame the same pixels. The operations follow PaddleDetection's
(``RandomDistort``, ``RandomExpand``, ``RandomCrop``, ``RandomFlip``, ``Resize``); mosaic and mixup need other
samples and live in :mod:`oarkit.det.data.dataset`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

Sample = dict[str, Any]

INTERPOLATIONS = {"nearest": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC,
                  "area": cv2.INTER_AREA}
#: ImageNet statistics in [0, 1] pixel units (PaddleDetection's NormalizeImage default)
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def preprocess_spec(size: Sequence[int], mean: Sequence[float] = MEAN, std: Sequence[float] = STD,
                    interpolation: str = "cubic") -> dict[str, Any]:
    """The evaluation preprocessing a run records: resize to ``size`` (no aspect kept, PaddleDetection's
    ``Resize(keep_ratio=False)``) with ``interpolation``, scale to [0, 1], normalise by ``mean`` and ``std``."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"interpolation {interpolation!r} is not one of {list(INTERPOLATIONS)}")
    return {"size": [int(size[0]), int(size[1])], "mean": [float(v) for v in mean], "std": [float(v) for v in std],
            "interpolation": interpolation, "keep_ratio": False}


def resize_sample(sample: Sample, size: Sequence[int], interpolation: str = "linear") -> Sample:
    """The sample resized to ``size`` (height, width), boxes scaled with it; ``scale`` records ``(sy, sx)``."""
    image = sample["image"]
    h, w = image.shape[:2]
    th, tw = int(size[0]), int(size[1])
    sy, sx = th / h, tw / w
    out = dict(sample)
    out["image"] = cv2.resize(image, (tw, th), interpolation=INTERPOLATIONS[interpolation])
    out["boxes"] = sample["boxes"] * np.array([sx, sy, sx, sy], np.float32)
    prev = sample.get("scale", (1.0, 1.0))
    out["scale"] = (prev[0] * sy, prev[1] * sx)
    return out


def normalize(image: np.ndarray, mean: Sequence[float], std: Sequence[float]) -> np.ndarray:
    """HxWx3 [0, 255] to 3xHxW float32 ``(x / 255 - mean) / std``."""
    image = image.astype(np.float32) / 255.0
    image = (image - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return np.ascontiguousarray(image.transpose(2, 0, 1))


def apply_spec(image: np.ndarray, spec: dict[str, Any]) -> tuple[np.ndarray, tuple[float, float]]:
    """An RGB uint8 image preprocessed as ``spec`` says: ``(3xHxW float32, (sy, sx))``."""
    sample = resize_sample({"image": image.astype(np.float32), "boxes": np.zeros((0, 4), np.float32)},
                           spec["size"], spec.get("interpolation", "linear"))
    return normalize(sample["image"], spec["mean"], spec["std"]), sample["scale"]


def clip_boxes(sample: Sample, min_size: float = 1.0) -> Sample:
    """Boxes clipped to the image; those left narrower or lower than ``min_size`` pixels dropped."""
    h, w = sample["image"].shape[:2]
    boxes = sample["boxes"].copy()
    boxes[:, [0, 2]] = boxes[:, [0, 2]].clip(0, w)
    boxes[:, [1, 3]] = boxes[:, [1, 3]].clip(0, h)
    keep = (boxes[:, 2] - boxes[:, 0] >= min_size) & (boxes[:, 3] - boxes[:, 1] >= min_size)
    return {**sample, "boxes": boxes[keep], "labels": sample["labels"][keep], "iscrowd": sample["iscrowd"][keep]}


class PhotometricDistort:
    """Brightness, contrast, saturation and hue, each applied with probability ``prob`` (``RandomDistort``).

    Args:
        brightness: largest shift of pixel values.
        contrast, saturation: ranges of their multiplicative factors.
        hue: largest hue shift in degrees.
        prob: probability of each change.
    """

    def __init__(self, brightness: float = 32, contrast: Sequence[float] = (0.5, 1.5),
                 saturation: Sequence[float] = (0.5, 1.5), hue: float = 18, prob: float = 0.5) -> None:
        self.brightness, self.contrast, self.saturation = float(brightness), tuple(contrast), tuple(saturation)
        self.hue, self.prob = float(hue), float(prob)

    def __call__(self, sample: Sample, rng: np.random.Generator) -> Sample:
        image = sample["image"].astype(np.float32)
        if rng.random() < self.prob:
            image = image + rng.uniform(-self.brightness, self.brightness)
        contrast_first = rng.random() < 0.5
        if contrast_first and rng.random() < self.prob:
            image = image * rng.uniform(*self.contrast)
        if rng.random() < self.prob or rng.random() < self.prob:
            hsv = cv2.cvtColor(np.clip(image, 0, 255).astype(np.float32) / 255.0, cv2.COLOR_RGB2HSV)
            if rng.random() < self.prob:
                hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(*self.saturation), 0, 1)
            if rng.random() < self.prob:
                hsv[..., 0] = (hsv[..., 0] + rng.uniform(-self.hue, self.hue)) % 360
            image = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB) * 255.0
        if not contrast_first and rng.random() < self.prob:
            image = image * rng.uniform(*self.contrast)
        return {**sample, "image": np.clip(image, 0, 255)}


class RandomExpand:
    """Place the image at a random spot of a canvas up to ``ratio`` times larger, filled with ``fill`` (zoom out).

    Args:
        ratio: the largest canvas side over the image side.
        prob: probability of expanding.
        fill: the canvas colour, RGB in [0, 255].
    """

    def __init__(self, ratio: float = 4.0, prob: float = 0.5,
                 fill: Sequence[float] = (123.675, 116.28, 103.53)) -> None:
        self.ratio, self.prob, self.fill = float(ratio), float(prob), np.asarray(fill, np.float32)

    def __call__(self, sample: Sample, rng: np.random.Generator) -> Sample:
        if self.ratio <= 1 or rng.random() >= self.prob:
            return sample
        image = sample["image"]
        h, w = image.shape[:2]
        r = rng.uniform(1, self.ratio)
        ch, cw = int(h * r), int(w * r)
        y, x = int(rng.integers(0, ch - h + 1)), int(rng.integers(0, cw - w + 1))
        canvas = np.empty((ch, cw, 3), np.float32)
        canvas[:] = self.fill
        canvas[y:y + h, x:x + w] = image
        return {**sample, "image": canvas, "boxes": sample["boxes"] + np.array([x, y, x, y], np.float32)}


def _iou_with(crop: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    lt = np.maximum(crop[:2], boxes[:, :2])
    rb = np.minimum(crop[2:], boxes[:, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=1)
    area = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
    crop_area = np.prod(crop[2:] - crop[:2])
    return inter / np.maximum(area + crop_area - inter, 1e-9)


class RandomCrop:
    """SSD's crop (PaddleDetection's ``RandomCrop``): a window whose IoU with some box reaches a threshold drawn
    from ``thresholds``; boxes whose centres fall inside are kept, clipped to it.

    Args:
        thresholds: IoU thresholds drawn from (``0.0``: any window).
        scaling: range of the window side over the image side.
        aspect_ratio: range of the window's aspect ratio.
        num_attempts: windows tried per threshold before giving up (the sample stays uncropped).
        prob: probability of cropping at all.
    """

    def __init__(self, thresholds: Sequence[float] = (0.0, 0.1, 0.3, 0.5, 0.7, 0.9),
                 scaling: Sequence[float] = (0.3, 1.0), aspect_ratio: Sequence[float] = (0.5, 2.0),
                 num_attempts: int = 50, prob: float = 1.0) -> None:
        self.thresholds, self.scaling, self.aspect_ratio = list(thresholds), tuple(scaling), tuple(aspect_ratio)
        self.num_attempts, self.prob = int(num_attempts), float(prob)

    def __call__(self, sample: Sample, rng: np.random.Generator) -> Sample:
        boxes = sample["boxes"]
        if not len(boxes) or rng.random() >= self.prob:
            return sample
        h, w = sample["image"].shape[:2]
        for threshold in rng.permutation(self.thresholds):
            for _ in range(self.num_attempts):
                scale = rng.uniform(*self.scaling)
                ratio = rng.uniform(max(self.aspect_ratio[0], scale**2), min(self.aspect_ratio[1], scale**-2))
                ch, cw = int(h * scale / np.sqrt(ratio)), int(w * scale * np.sqrt(ratio))
                if ch < 2 or cw < 2 or ch > h or cw > w:
                    continue
                y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
                crop = np.array([x, y, x + cw, y + ch], np.float32)
                if _iou_with(crop, boxes).max() < threshold:
                    continue
                centres = (boxes[:, :2] + boxes[:, 2:]) / 2
                inside = ((centres >= crop[:2]) & (centres < crop[2:])).all(axis=1)
                if not inside.any():
                    continue
                out = {**sample, "image": sample["image"][y:y + ch, x:x + cw],
                       "boxes": boxes[inside] - np.array([x, y, x, y], np.float32),
                       "labels": sample["labels"][inside], "iscrowd": sample["iscrowd"][inside]}
                return clip_boxes(out)
        return sample


class RandomFlip:
    """Mirror the image left to right with probability ``prob``."""

    def __init__(self, prob: float = 0.5) -> None:
        self.prob = float(prob)

    def __call__(self, sample: Sample, rng: np.random.Generator) -> Sample:
        if rng.random() >= self.prob:
            return sample
        w = sample["image"].shape[1]
        boxes = sample["boxes"].copy()
        boxes[:, [0, 2]] = w - sample["boxes"][:, [2, 0]]
        return {**sample, "image": np.ascontiguousarray(sample["image"][:, ::-1]), "boxes": boxes}


class Compose:
    """Augmentations applied in order with one generator."""

    def __init__(self, transforms: Sequence[Any]) -> None:
        self.transforms = list(transforms)

    def __call__(self, sample: Sample, rng: np.random.Generator) -> Sample:
        for t in self.transforms:
            sample = t(sample, rng)
        return sample
