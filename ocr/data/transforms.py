"""OCR preprocessing and augmentation, as PaddleOCR does them.

Images enter as RGB uint8 arrays (oarkit's convention) and leave as the tensors the ported models take: PaddleOCR
decodes with OpenCV, so the models see **BGR** channels (``bgr=True`` swaps them), scaled to [0, 1] and
normalised per channel.

- detection: the long (``max``) or short (``min``) side limited, both sides rounded to multiples of 32
  (:func:`det_resize`); training: random scale, rotation, flip, a crop that keeps text whole, colour jitter
  (PaddleOCR's ``IaaAugment`` + ``EastRandomCropData``);
- recognition: resized to the model's height keeping the aspect ratio, right-padded to a width
  (:func:`rec_resize`); training: perspective, blur, noise, colour jitter (PaddleOCR's ``RecAug``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import cv2
import numpy as np
import torch

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
HALF = (0.5, 0.5, 0.5)


def normalize(image: np.ndarray, mean: Sequence[float], std: Sequence[float], *, bgr: bool = True) -> torch.Tensor:
    """An RGB uint8 HxWx3 image as a CHW float tensor: channels swapped to BGR (``bgr``), ``(x/255 - mean) / std``."""
    array = image[..., ::-1] if bgr else image
    out = (array.astype(np.float32) / 255.0 - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return torch.from_numpy(np.ascontiguousarray(out.transpose(2, 0, 1)))


def det_resize(image: np.ndarray, *, limit_side_len: int = 960, limit_type: str = "max",
               multiple: int = 32) -> tuple[np.ndarray, float, float]:
    """Resize for a DB detector: ``max`` shrinks images whose long side passes ``limit_side_len``, ``min``
    enlarges those whose short side is below it; both sides then round to multiples of ``multiple``.

    Returns:
        ``(resized, ratio_h, ratio_w)``: the resized image and its size over the original's.
    """
    h, w = image.shape[:2]
    if limit_type == "max":
        ratio = limit_side_len / max(h, w) if max(h, w) > limit_side_len else 1.0
    elif limit_type == "min":
        ratio = limit_side_len / min(h, w) if min(h, w) < limit_side_len else 1.0
    else:
        raise ValueError(f"limit_type={limit_type!r} must be 'max' or 'min'")
    rh = max(multiple, int(round(int(h * ratio) / multiple) * multiple))
    rw = max(multiple, int(round(int(w * ratio) / multiple) * multiple))
    resized = cv2.resize(image, (rw, rh)) if (rh, rw) != (h, w) else image
    return resized, rh / h, rw / w


def rec_resize(image: np.ndarray, *, height: int = 48, width: int = 320, max_width: int | None = None) -> tuple[
        np.ndarray, int]:
    """Resize a line to ``height`` keeping its aspect ratio, at most ``width`` wide; the caller pads to ``width``.

    Args:
        image: the line, RGB uint8.
        height: the model's input height.
        width: the padded width (longer lines are squeezed into it, as PaddleOCR does).
        max_width: unused unless given: a cap below ``width``.

    Returns:
        ``(resized, resized_width)``.
    """
    h, w = image.shape[:2]
    limit = min(width, max_width) if max_width else width
    new_w = max(1, min(limit, int(math.ceil(height * w / max(h, 1)))))
    return cv2.resize(image, (new_w, height)), new_w


def rec_tensor(image: np.ndarray, *, height: int = 48, width: int = 320, mean: Sequence[float] = HALF,
               std: Sequence[float] = HALF, bgr: bool = True) -> tuple[torch.Tensor, float]:
    """A normalised ``[3, height, width]`` tensor of a line, zero-padded on the right (PaddleOCR's
    ``resize_norm_img``), and the share of the width the text takes (``valid_ratio``)."""
    resized, new_w = rec_resize(image, height=height, width=width)
    out = torch.zeros(3, height, width)
    out[:, :, :new_w] = normalize(resized, mean, std, bgr=bgr)
    return out, min(1.0, new_w / width)


# -- detection augmentation ----------------------------------------------------------------------------------
def _affine_polys(polys: list[np.ndarray], matrix: np.ndarray) -> list[np.ndarray]:
    return [(np.concatenate([p, np.ones((len(p), 1), np.float32)], axis=1) @ matrix.T).astype(np.float32)
            for p in polys]


def det_augment(image: np.ndarray, polys: list[np.ndarray], rng: random.Random, *, scale: Sequence[float] = (0.5, 3.0),
                rotate: float = 10.0, hflip: float = 0.5) -> tuple[np.ndarray, list[np.ndarray]]:
    """Random scale, rotation (degrees either way) and horizontal flip, polygons following (``IaaAugment``)."""
    h, w = image.shape[:2]
    s = rng.uniform(*scale)
    angle = rng.uniform(-rotate, rotate) if rotate else 0.0
    flip = rng.random() < hflip
    nh, nw = max(8, int(h * s)), max(8, int(w * s))
    cos, sin = abs(math.cos(math.radians(angle))), abs(math.sin(math.radians(angle)))
    out_w, out_h = int(nh * sin + nw * cos), int(nh * cos + nw * sin)
    matrix = cv2.getRotationMatrix2D((w / 2, h / 2), angle, s)
    matrix[0, 2] += out_w / 2 - w / 2
    matrix[1, 2] += out_h / 2 - h / 2
    if flip:
        matrix = np.array([[-1, 0, out_w], [0, 1, 0]], np.float64) @ np.vstack([matrix, [0, 0, 1]])
    border = tuple(int(v) for v in np.median(image.reshape(-1, 3), axis=0))
    out = cv2.warpAffine(image, matrix, (out_w, out_h), flags=cv2.INTER_LINEAR, borderValue=border)
    return out, _affine_polys(polys, matrix)


def _free_spans(mask: np.ndarray) -> np.ndarray:
    return np.where(mask == 0)[0]


def crop_keeping_text(image: np.ndarray, polys: list[np.ndarray], ignores: list[bool], rng: random.Random, *,
                      size: tuple[int, int] = (640, 640), max_tries: int = 50,
                      min_crop_side_ratio: float = 0.1) -> tuple[np.ndarray, list[np.ndarray], list[bool]]:
    """PaddleOCR's ``EastRandomCropData``: a crop whose edges cut no text, scaled to fit ``size`` (keeping its
    aspect ratio) and padded at the bottom and right; regions outside the crop are dropped."""
    h, w = image.shape[:2]
    h_used, w_used = np.zeros(h, np.int32), np.zeros(w, np.int32)
    for poly, ignore in zip(polys, ignores):
        if ignore:
            continue
        p = np.round(poly).astype(np.int32)
        w_used[np.clip(p[:, 0].min(), 0, w - 1):np.clip(p[:, 0].max(), 0, w - 1) + 1] = 1
        h_used[np.clip(p[:, 1].min(), 0, h - 1):np.clip(p[:, 1].max(), 0, h - 1) + 1] = 1
    free_x, free_y = _free_spans(w_used), _free_spans(h_used)
    x0, y0, cw, ch = 0, 0, w, h
    if len(free_x) >= 2 and len(free_y) >= 2:
        for _ in range(max_tries):
            xs = sorted(rng.sample(list(free_x), 2))
            ys = sorted(rng.sample(list(free_y), 2))
            if xs[1] - xs[0] < min_crop_side_ratio * w or ys[1] - ys[0] < min_crop_side_ratio * h:
                continue
            inside = [p for p, ig in zip(polys, ignores) if not ig and p[:, 0].min() >= xs[0]
                      and p[:, 0].max() <= xs[1] and p[:, 1].min() >= ys[0] and p[:, 1].max() <= ys[1]]
            if inside:
                x0, y0, cw, ch = xs[0], ys[0], xs[1] - xs[0], ys[1] - ys[0]
                break
    crop = image[y0:y0 + ch, x0:x0 + cw]
    scale = min(size[0] / ch, size[1] / cw)
    nh, nw = max(1, int(ch * scale)), max(1, int(cw * scale))
    canvas = np.zeros((size[0], size[1], 3), np.uint8)
    canvas[:nh, :nw] = cv2.resize(crop, (nw, nh))
    kept, kept_ignores = [], []
    for poly, ignore in zip(polys, ignores):
        if poly[:, 0].min() >= x0 + cw or poly[:, 0].max() <= x0 or poly[:, 1].min() >= y0 + ch or \
                poly[:, 1].max() <= y0:
            continue
        kept.append(((poly - np.array([x0, y0], np.float32)) * scale).astype(np.float32))
        kept_ignores.append(ignore)
    return canvas, kept, kept_ignores


def color_jitter(image: np.ndarray, rng: random.Random, strength: float = 0.3) -> np.ndarray:
    """Random brightness, contrast and saturation, each by up to ``strength``."""
    if strength <= 0:
        return image
    out = image.astype(np.float32)
    out *= rng.uniform(1 - strength, 1 + strength)                                      # brightness
    mean = out.mean()
    out = (out - mean) * rng.uniform(1 - strength, 1 + strength) + mean                 # contrast
    grey = out.mean(axis=2, keepdims=True)
    out = (out - grey) * rng.uniform(1 - strength, 1 + strength) + grey                 # saturation
    return np.clip(out, 0, 255).astype(np.uint8)


# -- recognition augmentation --------------------------------------------------------------------------------
def rec_augment(image: np.ndarray, rng: random.Random, *, prob: float = 0.4) -> np.ndarray:
    """PaddleOCR's ``RecAug`` in spirit: each of perspective, blur, noise, colour jitter and a small crop with
    probability ``prob``."""
    h, w = image.shape[:2]
    out = image
    if rng.random() < prob and h >= 8 and w >= 8:  # perspective: corners moved by up to a tenth of the height
        d = 0.1 * h
        src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
        dst = src + np.float32([[rng.uniform(-d, d), rng.uniform(-d, d)] for _ in range(4)])
        border = tuple(int(v) for v in np.median(out.reshape(-1, 3), axis=0))
        out = cv2.warpPerspective(out, cv2.getPerspectiveTransform(src, dst), (w, h), borderValue=border)
    if rng.random() < prob and h >= 10:  # crop a few pixels off the top and bottom
        top, bottom = rng.randint(0, max(1, h // 10)), rng.randint(0, max(1, h // 10))
        out = out[top:h - bottom] if h - top - bottom > h // 2 else out
    if rng.random() < prob:
        out = cv2.GaussianBlur(out, (5, 5), rng.uniform(0.5, 1.5))
    if rng.random() < prob:
        out = color_jitter(out, rng, 0.3)
    if rng.random() < prob:
        noise = np.random.default_rng(rng.getrandbits(32)).normal(0, rng.uniform(2, 10), out.shape)
        out = np.clip(out.astype(np.float32) + noise, 0, 255).astype(np.uint8)
    return np.ascontiguousarray(out)
