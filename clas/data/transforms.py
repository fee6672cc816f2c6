"""Classification preprocessing: one JSON-able spec drives training, evaluation and deployment.

:func:`preprocess_spec` writes down the evaluation preprocessing (resize the short side, centre-crop, scale to
[0, 1], normalise); :func:`build_eval_transform` and :func:`build_train_transform` build albumentations 2.0.8
pipelines from it, and :func:`apply_spec` reproduces the eval pipeline with numpy and cv2 only, for deployed
predictors that do not ship albumentations.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

# albumentations checks for updates over the network at import unless told not to.
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")

import albumentations as A  # noqa: E402
import cv2  # noqa: E402
import numpy as np  # noqa: E402
from albumentations.pytorch import ToTensorV2  # noqa: E402

from oarkit.core.errors import ConfigError, did_you_mean  # noqa: E402

#: interpolation names (timm's spelling) → cv2 flags
INTERPOLATIONS: dict[str, int] = {
    "nearest": cv2.INTER_NEAREST,
    "bilinear": cv2.INTER_LINEAR,
    "bicubic": cv2.INTER_CUBIC,
    "area": cv2.INTER_AREA,
    "lanczos": cv2.INTER_LANCZOS4,
}

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _crop_hw(input_size: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(input_size, (int, np.integer)):
        h = w = int(input_size)
    else:
        size = [int(s) for s in input_size]
        if len(size) == 3:  # timm's (channels, height, width)
            size = size[1:]
        if len(size) != 2:
            raise ConfigError(f"input_size={input_size!r}: expected an int, (height, width) or (3, height, width)")
        h, w = size
    if h <= 0 or w <= 0:
        raise ConfigError(f"input_size={input_size!r}: sizes must be positive")
    return h, w


def _interpolation_flag(name: str) -> int:
    if name not in INTERPOLATIONS:
        hint = did_you_mean(name, INTERPOLATIONS)
        raise ConfigError(f"interpolation={name!r} is not supported; choose one of {sorted(INTERPOLATIONS)}.{hint}")
    return INTERPOLATIONS[name]


def _three(values: Sequence[float], what: str) -> list[float]:
    values = [float(v) for v in values]
    if len(values) != 3:
        raise ConfigError(f"{what}={values!r}: expected three values, one per RGB channel")
    return values


def preprocess_spec(
    input_size: int | Sequence[int],
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
    crop_pct: float = 0.875,
    interpolation: str = "bilinear",
) -> dict[str, Any]:
    """Describe eval preprocessing as a plain dict (safe to write into meta.json and deploy.yaml).

    The image (RGB, uint8) is resized so that its short side is ``round(max(crop) / crop_pct)``, centre-cropped
    to ``crop``, scaled to [0, 1], normalised with ``mean`` / ``std`` and laid out as NCHW.

    Args:
        input_size: the crop, as an int, ``(height, width)`` or timm's ``(3, height, width)``.
        mean: per-channel mean of the [0, 1] image.
        std: per-channel standard deviation of the [0, 1] image.
        crop_pct: crop size over resize size, in (0, 1]; 1.0 resizes straight to the crop's short side.
        interpolation: one of :data:`INTERPOLATIONS`.

    Returns:
        The spec: ``resize_short``, ``crop`` ([h, w]), ``interpolation``, ``mean``, ``std``, ``color``, ``layout``.
    """
    h, w = _crop_hw(input_size)
    crop_pct = float(crop_pct)
    if not 0.0 < crop_pct <= 1.0:
        raise ConfigError(f"crop_pct={crop_pct!r} must be in (0, 1] (0.875 resizes 224 crops from 256)")
    _interpolation_flag(interpolation)
    std = _three(std, "std")
    if any(s <= 0 for s in std):
        raise ConfigError(f"std={std!r}: every value must be positive")
    return {
        "resize_short": round(max(h, w) / crop_pct),
        "crop": [h, w],
        "interpolation": interpolation,
        "mean": _three(mean, "mean"),
        "std": std,
        "color": "RGB",
        "layout": "NCHW",
    }


def build_eval_transform(spec: dict[str, Any]) -> A.Compose:
    """The albumentations eval pipeline of ``spec``: short-side resize, centre crop, normalise, to tensor."""
    h, w = spec["crop"]
    flag = _interpolation_flag(spec["interpolation"])
    return A.Compose(
        [
            A.SmallestMaxSize(max_size=int(spec["resize_short"]), interpolation=flag),
            A.CenterCrop(height=h, width=w),
            A.Normalize(mean=spec["mean"], std=spec["std"], max_pixel_value=255.0),
            ToTensorV2(),
        ]
    )


def build_train_transform(
    spec: dict[str, Any],
    *,
    scale: tuple[float, float] = (0.08, 1.0),
    hflip: float = 0.5,
    color_jitter: float = 0.0,
    affine: float = 0.0,
    random_erasing: float = 0.0,
) -> A.Compose:
    """The albumentations training pipeline: random resized crop to the spec's crop, flip, affine, jitter,
    normalise, random erasing.

    Args:
        spec: a :func:`preprocess_spec` dict; its crop, interpolation, mean and std are used.
        scale: range of the crop's area over the image's area.
        hflip: probability of a horizontal flip.
        color_jitter: brightness, contrast and saturation strength (0 turns jitter off); hue is left alone.
        affine: strength in [0, 1] of a random affine warp applied to every crop (0 turns it off): rotation up
            to ``±30·affine`` degrees, shear up to ``±15·affine`` degrees, zoom by ``1 ± 0.25·affine`` and shift
            by up to ``±12.5·affine`` % of the size, with black borders. 0.5 suits digits and characters.
        random_erasing: probability of erasing one random rectangle (2-33 % of the area, filled with the mean
            colour) of the normalised image, as timm's ``--reprob``.
    """
    lo, hi = (float(s) for s in scale)
    if not 0.0 < lo <= hi <= 1.0:
        raise ConfigError(f"scale={tuple(scale)!r} must satisfy 0 < min <= max <= 1, e.g. (0.08, 1.0)")
    if not 0.0 <= hflip <= 1.0:
        raise ConfigError(f"hflip={hflip!r} is a probability; use a value in [0, 1]")
    if color_jitter < 0:
        raise ConfigError(f"color_jitter={color_jitter!r} must be >= 0 (0.4 is a common choice)")
    if not 0.0 <= affine <= 1.0:
        raise ConfigError(f"affine={affine!r} is a strength in [0, 1]; use 0 to turn it off or e.g. 0.5")
    if not 0.0 <= random_erasing <= 1.0:
        raise ConfigError(f"random_erasing={random_erasing!r} is a probability; use a value in [0, 1], e.g. 0.25")
    h, w = spec["crop"]
    flag = _interpolation_flag(spec["interpolation"])
    steps: list[Any] = [A.RandomResizedCrop(size=(h, w), scale=(lo, hi), interpolation=flag)]
    if hflip > 0:
        steps.append(A.HorizontalFlip(p=hflip))
    if affine > 0:
        steps.append(
            A.Affine(
                scale=(1.0 - 0.25 * affine, 1.0 + 0.25 * affine),
                translate_percent=(-0.125 * affine, 0.125 * affine),
                rotate=(-30.0 * affine, 30.0 * affine),
                shear=(-15.0 * affine, 15.0 * affine),
                interpolation=flag,
                border_mode=cv2.BORDER_CONSTANT,
                fill=0,
                p=1.0,
            )
        )
    if color_jitter > 0:
        steps.append(
            A.ColorJitter(brightness=color_jitter, contrast=color_jitter, saturation=color_jitter, hue=0.0, p=1.0)
        )
    steps.append(A.Normalize(mean=spec["mean"], std=spec["std"], max_pixel_value=255.0))
    if random_erasing > 0:
        # After Normalize, so that the fill of 0 is the dataset mean colour.
        steps.append(A.Erasing(scale=(0.02, 0.33), ratio=(0.3, 3.3), fill=0, p=random_erasing))
    steps.append(ToTensorV2())
    return A.Compose(steps)


def apply_spec(image: np.ndarray, spec: dict[str, Any]) -> np.ndarray:
    """Run the eval preprocessing of ``spec`` with numpy and cv2 only (no albumentations, no torch).

    Args:
        image: an RGB uint8 image, HxWx3 (HxW grey images are repeated to three channels).
        spec: a :func:`preprocess_spec` dict.

    Returns:
        The CHW float32 array :func:`build_eval_transform` would give (add a batch axis for NCHW).
    """
    if image.dtype != np.uint8:
        raise ValueError(
            f"apply_spec expects a uint8 RGB image, got dtype {image.dtype}; convert with .astype(np.uint8)"
        )
    if image.ndim == 2:
        image = np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"apply_spec expects an HxWx3 RGB image, got shape {image.shape}")
    height, width = image.shape[:2]
    scale = spec["resize_short"] / min(height, width)
    # Same rounding as albumentations' SmallestMaxSize, and like it skip the no-op resize.
    new_hw = max(1, round(height * scale)), max(1, round(width * scale))
    if new_hw != (height, width):
        image = cv2.resize(image, (new_hw[1], new_hw[0]), interpolation=_interpolation_flag(spec["interpolation"]))
    crop_h, crop_w = spec["crop"]
    top, left = (image.shape[0] - crop_h) // 2, (image.shape[1] - crop_w) // 2
    image = image[top : top + crop_h, left : left + crop_w]
    mean = np.asarray(spec["mean"], dtype=np.float32) * 255.0
    inv_std = 1.0 / (np.asarray(spec["std"], dtype=np.float32) * 255.0)
    out = (image.astype(np.float32) - mean) * inv_std
    return np.ascontiguousarray(out.transpose(2, 0, 1), dtype=np.float32)


__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "INTERPOLATIONS",
    "apply_spec",
    "build_eval_transform",
    "build_train_transform",
    "preprocess_spec",
]
