"""A second synthetic segmentation set, unlike the shapes set in every way a recipe could lean on.

Where the shapes set has 400 square 256x256 images of three flat shapes on muted backgrounds, this one has
120 training and 40 validation images of mixed sizes (200 to 320 pixels a side, rarely square), five classes —
textured ellipses, stars, rings and irregular blobs on a background — from small (5% of the shorter side) to large
(30%), on colourful backgrounds of smooth noise crossed by thin distractor lines. Each class carries a texture
(stripes, a checker, a solid band, speckle) and a hue range of its own, none of them the shapes set's. It exists
to check that a recipe counted in iterations learns a dataset it was not tuned on, with only ``data.root`` and
``data.num_classes`` changed. The files are those of any PaddleSeg dataset::

    root/images/{train,val}/00000.jpg   RGB images
    root/labels/{train,val}/00000.png   class indices: 0 background, 1 ellipse, 2 star, 3 ring, 4 blob
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

CLASSES = ("background", "ellipse", "star", "ring", "blob")
#: hue range (degrees) of each object class (the shapes set uses red, green and blue)
HUES = {1: (290, 330), 2: (45, 70), 3: (170, 200), 4: (95, 125)}
MARKER = ".oarkit_textures.json"


def _background(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Smooth colourful noise at two scales, then a few thin lines of random colours (not labelled)."""
    image = np.zeros((h, w, 3), np.float32)
    for cells, weight in ((rng.integers(2, 5), 1.0), (rng.integers(6, 12), 0.35)):
        grid = rng.uniform(40, 215, (cells, cells, 3)).astype(np.float32)
        image += weight * cv2.resize(grid, (w, h), interpolation=cv2.INTER_CUBIC)
    image /= 1.35
    for _ in range(rng.integers(2, 6)):
        p1 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        p2 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        cv2.line(image, p1, p2, rng.uniform(0, 255, 3).tolist(), int(rng.integers(1, 3)), lineType=cv2.LINE_AA)
    return image + rng.normal(0, 6, image.shape).astype(np.float32)


def _star(cx: float, cy: float, r: float, angle: float, points: int) -> np.ndarray:
    t = angle + np.arange(2 * points) * np.pi / points
    radius = np.where(np.arange(2 * points) % 2 == 0, r, r * 0.45)
    return np.stack([cx + radius * np.cos(t), cy + radius * np.sin(t)], axis=1).round().astype(np.int32)


def _blob(rng: np.random.Generator, h: int, w: int, cx: float, cy: float, r: float) -> np.ndarray:
    """An irregular closed outline: a circle whose radius wobbles with a few random harmonics."""
    t = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    radius = np.ones_like(t)
    for k in range(2, 5):
        radius += rng.uniform(0.05, 0.2) * np.cos(k * t + rng.uniform(0, 2 * np.pi))
    outline = np.stack([cx + r * radius * np.cos(t), cy + r * radius * np.sin(t)], axis=1)
    mask = np.zeros((h, w), np.uint8)
    cv2.fillPoly(mask, [outline.round().astype(np.int32)], 1)
    return mask


def _texture(rng: np.random.Generator, cls: int, h: int, w: int) -> np.ndarray:
    """The class's pattern as a brightness offset: stripes, a checker, a flat fill or speckle."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    if cls == 1:  # stripes at a random angle
        angle, period = rng.uniform(0, np.pi), rng.uniform(5, 9)
        return 35 * np.sign(np.sin((xx * np.cos(angle) + yy * np.sin(angle)) * 2 * np.pi / period))
    if cls == 2:  # a checker
        cell = rng.uniform(4, 7)
        return 30 * (((xx // cell) + (yy // cell)) % 2 * 2 - 1)
    if cls == 3:  # flat
        return np.zeros((h, w), np.float32)
    return rng.normal(0, 30, (h, w)).astype(np.float32)  # speckle


def draw_sample(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One ``(RGB uint8 image, uint8 label map)`` pair of a random size between 200 and 320 pixels a side."""
    h, w = int(rng.integers(200, 321)), int(rng.integers(200, 321))
    image = _background(rng, h, w)
    label = np.zeros((h, w), np.uint8)
    side = min(h, w)
    for _ in range(rng.integers(1, 7)):
        cls = int(rng.integers(1, len(CLASSES)))
        r = rng.uniform(0.05, 0.3) * side
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)  # objects may leave the frame
        mask = np.zeros((h, w), np.uint8)
        if cls == 1:
            axes = (round(r), round(r * rng.uniform(0.4, 0.8)))
            cv2.ellipse(mask, (round(cx), round(cy)), axes, rng.uniform(0, 180), 0, 360, 1, -1)
        elif cls == 2:
            cv2.fillPoly(mask, [_star(cx, cy, r * 1.2, rng.uniform(0, 2 * np.pi), int(rng.integers(5, 7)))], 1)
        elif cls == 3:
            cv2.circle(mask, (round(cx), round(cy)), round(r), 1, max(2, round(r * rng.uniform(0.25, 0.45))))
        else:
            mask = _blob(rng, h, w, cx, cy, r)
        inside = mask.astype(bool)
        if not inside.any():
            continue
        lo, hi = HUES[cls]
        hsv = np.uint8([[[rng.uniform(lo, hi) / 2 % 180, rng.uniform(140, 255), rng.uniform(120, 230)]]])
        colour = cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)[0, 0].astype(np.float32)
        fill = colour[None, None, :] + _texture(rng, cls, h, w)[..., None]
        image[inside] = fill[inside]
        label[inside] = cls
    return np.clip(image, 0, 255).astype(np.uint8), label


def prepare_textures(root: str | os.PathLike, num_train: int = 120, num_val: int = 40, seed: int = 0) -> Path:
    """Write the synthetic textures set (see the module docstring) and return ``root``.

    Args:
        root: the folder to write into (created if needed).
        num_train: training images.
        num_val: validation images.
        seed: the generator's seed.
    """
    if num_train < 1 or num_val < 1:
        raise ValueError(f"prepare_textures needs at least one image per split, got num_train={num_train}, "
                         f"num_val={num_val}")
    root = Path(root)
    expected = {"num_train": num_train, "num_val": num_val, "seed": seed, "classes": list(CLASSES)}
    if is_generated(root, MARKER, expected):
        return root
    logger.info("Writing %d + %d synthetic texture images to %s", num_train, num_val, root)
    for split_id, (split, count) in enumerate((("train", num_train), ("val", num_val))):
        (root / "images" / split).mkdir(parents=True, exist_ok=True)
        (root / "labels" / split).mkdir(parents=True, exist_ok=True)
        lines = []
        for i in range(count):
            image, label = draw_sample(np.random.default_rng([seed, 7, split_id, i]))
            image_rel, label_rel = f"images/{split}/{i:05d}.jpg", f"labels/{split}/{i:05d}.png"
            cv2.imwrite(str(root / image_rel), cv2.cvtColor(image, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 92])
            cv2.imwrite(str(root / label_rel), label)
            lines.append(f"{image_rel} {label_rel}")
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    (root / "labels.txt").write_text("\n".join(CLASSES) + "\n")
    mark_generated(root, MARKER, expected)
    return root
