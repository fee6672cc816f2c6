"""A synthetic segmentation set written to disk in PaddleSeg's list layout: shapes on textured backgrounds.

Each image holds two to four flat circles, squares and triangles of random size, rotation and position (later
ones occluding earlier ones) on a textured background of muted colours (smooth colour noise, stripes, grain).
Every shape draws its colour at random (any hue, random saturation and brightness) whatever its class: the
classes differ by shape alone, as they do in a user's data, so that a model must learn shapes, not colours.
The files are those of any PaddleSeg dataset::

    root/images/{train,val}/00000.jpg   RGB images
    root/labels/{train,val}/00000.png   class indices: 0 background, 1 circle, 2 square, 3 triangle
    root/train.txt  root/val.txt        "images/train/00000.jpg labels/train/00000.png" per line
    root/labels.txt                     one class name per line

Every image depends only on ``(seed, split, index)``; a finished run leaves a marker, so preparing again is a no-op.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import cv2
import numpy as np

from oarkit.core.data.generated import is_generated, mark_generated

logger = logging.getLogger(__name__)

CLASSES = ("background", "circle", "square", "triangle")
MARKER = ".oarkit_shapes.json"


def _background(rng: np.random.Generator, size: int) -> np.ndarray:
    grid = rng.integers(0, 256, (rng.integers(2, 6), rng.integers(2, 6), 3)).astype(np.float32)
    image = cv2.resize(grid, (size, size), interpolation=cv2.INTER_CUBIC)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    for _ in range(rng.integers(1, 3)):  # stripes of a random period, angle and strength
        angle, period = rng.uniform(0, np.pi), rng.uniform(4, 16) * size / 256
        wave = np.sin((xx * np.cos(angle) + yy * np.sin(angle)) * 2 * np.pi / period)
        image += wave[..., None] * rng.uniform(15, 40) * rng.uniform(-1, 1, 3).astype(np.float32)
    image += rng.normal(0, rng.uniform(10, 20), image.shape).astype(np.float32)  # grain
    grey = image.mean(axis=2, keepdims=True)
    return grey + (image - grey) * rng.uniform(0.1, 0.35)  # muted colours, so that the shapes stand out


def _polygon(kind: str, cx: float, cy: float, r: float, angle: float) -> np.ndarray:
    corners = 4 if kind == "square" else 3
    t = angle + np.arange(corners) * 2 * np.pi / corners
    return np.stack([cx + r * np.cos(t), cy + r * np.sin(t)], axis=1).round().astype(np.int32)


def draw_sample(rng: np.random.Generator, size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """One ``(RGB uint8 image, uint8 label map)`` pair."""
    image = _background(rng, size)
    label = np.zeros((size, size), np.uint8)
    for _ in range(rng.integers(2, 5)):
        cls = int(rng.integers(1, len(CLASSES)))
        r = rng.uniform(0.07, 0.19) * size
        cx, cy = rng.uniform(r, size - r, 2)
        mask = np.zeros((size, size), np.uint8)
        if CLASSES[cls] == "circle":
            cv2.circle(mask, (round(cx), round(cy)), round(r), 1, -1, lineType=cv2.LINE_8)
        else:
            scale = 1.0 if CLASSES[cls] == "triangle" else 0.9
            cv2.fillPoly(mask, [_polygon(CLASSES[cls], cx, cy, r * scale * 1.3, rng.uniform(0, 2 * np.pi))], 1)
        inside = mask.astype(bool)
        hsv = np.uint8([[[rng.uniform(0, 180), rng.uniform(150, 255), rng.uniform(110, 255)]]])  # any hue
        colour = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0, 0].astype(np.float32)
        shade = rng.normal(0, 2, (size, size, 1)) + np.linspace(-15, 15, size)[None, :, None] * rng.uniform(-1, 1)
        image[inside] = (colour + shade)[inside]
        label[inside] = cls
    return np.clip(image, 0, 255).astype(np.uint8), label


def prepare_shapes(root: str | os.PathLike, num_train: int = 400, num_val: int = 100, size: int = 256,
                   seed: int = 0) -> Path:
    """Write the synthetic shapes set (see the module docstring) and return ``root``.

    Args:
        root: the folder to write into (created if needed).
        num_train: training images.
        num_val: validation images.
        size: side of the square images.
        seed: the generator's seed.
    """
    if size < 32 or num_train < 1 or num_val < 1:
        raise ValueError(f"prepare_shapes needs size >= 32 and at least one image per split, got size={size}, "
                         f"num_train={num_train}, num_val={num_val}")
    root = Path(root)
    expected = {"num_train": num_train, "num_val": num_val, "size": size, "seed": seed, "classes": list(CLASSES),
                "colours": "any hue"}  # sets written when each class had its own hue range are rewritten
    if is_generated(root, MARKER, expected):
        return root
    logger.info("Writing %d + %d synthetic shape images (%dx%d) to %s", num_train, num_val, size, size, root)
    for split_id, (split, count) in enumerate((("train", num_train), ("val", num_val))):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(count):
            image, label = draw_sample(np.random.default_rng([seed, split_id, i]), size)
            image_rel, label_rel = f"images/{split}/{i:05d}.jpg", f"labels/{split}/{i:05d}.png"
            cv2.imwrite(str(root / image_rel), cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 92])
            cv2.imwrite(str(root / label_rel), label)
            lines.append(f"{image_rel} {label_rel}")
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    (root / "labels.txt").write_text("\n".join(CLASSES) + "\n")
    mark_generated(root, MARKER, expected)
    return root
