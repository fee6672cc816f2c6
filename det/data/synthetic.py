"""A synthetic detection set in PaddleDetection's COCO layout: shapes of several classes with exact boxes on
textured backgrounds.

Each image holds one to five filled circles, squares, triangles and crosses of random size, rotation and
position, not overlapping one another, on a textured background of muted colours (smooth colour noise, stripes,
grain). Each class draws its colour from its own hue range besides its shape, so that a detector trained from
scratch on two CPU cores learns it in minutes. A box is the exact extent of its shape's pixels. The files are
those of any COCO-layout set::

    root/annotations/instances_train.json   root/annotations/instances_val.json
    root/train/000000.jpg ...               root/val/000000.jpg ...

Every image depends only on ``(seed, split, index)``; a finished run leaves a marker, so preparing again is a no-op.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import cv2
import numpy as np

from oarkit.core.data.generated import is_generated, mark_generated

from .formats import write_coco
from .records import DetectionRecord

logger = logging.getLogger(__name__)

CLASSES = ("circle", "square", "triangle", "cross")
#: hue range (degrees) of each class: a colour cue beside the shape
HUES = {0: (0, 40), 1: (90, 150), 2: (200, 260), 3: (280, 330)}
MARKER = ".oarkit_det_shapes.json"


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    grid = rng.integers(0, 256, (rng.integers(2, 6), rng.integers(2, 6), 3)).astype(np.float32)
    image = cv2.resize(grid, (size, size), interpolation=cv2.INTER_CUBIC)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    for _ in range(rng.integers(1, 3)):  # stripes of a random period, angle and strength
        angle, period = rng.uniform(0, np.pi), rng.uniform(4, 16) * size / 256
        wave = np.sin((xx * np.cos(angle) + yy * np.sin(angle)) * 2 * np.pi / period)
        image += wave[..., None] * rng.uniform(15, 40) * rng.uniform(-1, 1, 3).astype(np.float32)
    image += rng.normal(0, rng.uniform(8, 16), image.shape).astype(np.float32)  # grain
    grey = image.mean(axis=2, keepdims=True)
    return grey + (image - grey) * rng.uniform(0.1, 0.35)  # muted colours, so that the shapes stand out


def _shape_mask(kind: str, size: int, cx: float, cy: float, r: float, angle: float) -> np.ndarray:
    mask = np.zeros((size, size), np.uint8)
    if kind == "circle":
        cv2.circle(mask, (round(cx), round(cy)), round(r), 1, -1, lineType=cv2.LINE_8)
        return mask
    if kind == "cross":
        arm = r * 0.35
        outline = [(arm, r), (arm, arm), (r, arm), (r, -arm), (arm, -arm), (arm, -r), (-arm, -r), (-arm, -arm),
                   (-r, -arm), (-r, arm), (-arm, arm), (-arm, r)]
        pts = np.array(outline, np.float64)
    else:
        corners = 4 if kind == "square" else 3
        t = np.arange(corners) * 2 * np.pi / corners
        pts = np.stack([np.cos(t), np.sin(t)], axis=1) * r * (1.15 if kind == "square" else 1.3)
    c, s = np.cos(angle), np.sin(angle)
    rotated = pts @ np.array([[c, s], [-s, c]]) + np.array([cx, cy])
    cv2.fillPoly(mask, [rotated.round().astype(np.int32)], 1)
    return mask


def draw_sample(rng: np.random.Generator, size: int = 256, max_objects: int = 5
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One ``(RGB uint8 image, boxes [N, 4] xyxy, labels [N])`` triple; boxes frame their shapes' pixels exactly."""
    image = _background(rng, size)
    boxes, labels = [], []
    for _ in range(int(rng.integers(1, max_objects + 1))):
        for _attempt in range(20):
            cls = int(rng.integers(0, len(CLASSES)))
            r = rng.uniform(0.06, 0.16) * size
            cx, cy = rng.uniform(r + 1, size - r - 1, 2)
            mask = _shape_mask(CLASSES[cls], size, cx, cy, r, rng.uniform(0, 2 * np.pi))
            ys, xs = np.nonzero(mask)
            if not len(xs):
                continue
            box = [float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)]
            gap = 2.0
            if any(box[0] < b[2] + gap and b[0] < box[2] + gap and box[1] < b[3] + gap and b[1] < box[3] + gap
                   for b in boxes):
                continue
            inside = mask.astype(bool)
            lo, hi = HUES[cls]
            hsv = np.uint8([[[rng.uniform(lo, hi) / 2, rng.uniform(150, 255), rng.uniform(120, 255)]]])
            colour = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0, 0].astype(np.float32)
            shade = rng.normal(0, 2, (size, size, 1)) + np.linspace(-12, 12, size)[None, :, None] * rng.uniform(-1, 1)
            image[inside] = (colour + shade)[inside]
            boxes.append(box)
            labels.append(cls)
            break
    return (np.clip(image, 0, 255).astype(np.uint8), np.asarray(boxes, np.float32).reshape(-1, 4),
            np.asarray(labels, np.int64))


def prepare_det_shapes(root: str | os.PathLike, num_train: int = 400, num_val: int = 100, size: int = 256,
                       seed: int = 0) -> Path:
    """Write the synthetic detection set (see the module docstring) and return ``root``.

    Args:
        root: the folder to write into (created if needed).
        num_train: training images.
        num_val: validation images.
        size: side of the square images.
        seed: the generator's seed.
    """
    if size < 32 or num_train < 1 or num_val < 1:
        raise ValueError(f"prepare_det_shapes needs size >= 32 and at least one image per split, got size={size}, "
                         f"num_train={num_train}, num_val={num_val}")
    root = Path(root)
    expected = {"num_train": num_train, "num_val": num_val, "size": size, "seed": seed, "classes": list(CLASSES)}
    if is_generated(root, MARKER, expected):
        return root
    logger.info("Writing %d + %d synthetic detection images (%dx%d) to %s", num_train, num_val, size, size, root)
    for split_id, (split, count) in enumerate((("train", num_train), ("val", num_val))):
        image_dir = root / split
        image_dir.mkdir(parents=True, exist_ok=True)
        records = []
        for i in range(count):
            image, boxes, labels = draw_sample(np.random.default_rng([seed, split_id, i]), size)
            path = image_dir / f"{i:06d}.jpg"
            cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 92])
            records.append(DetectionRecord(str(path), size, size, boxes, labels, np.zeros(len(labels), bool), i))
        write_coco(records, CLASSES, root / "annotations" / f"instances_{split}.json", image_dir, copy_images=False)
    mark_generated(root, MARKER, expected)
    return root
