"""Joint image/label transforms (albumentations 2.0.8) and the preprocessing spec shared with deployment.

Training follows PaddleSeg's recipe — random scale, crop with padding (the label padded with the ignore index),
horizontal flip, colour jitter, normalise — with the label always resized by nearest neighbour. Evaluation only
normalises (and optionally resizes). :func:`apply_spec` reproduces the evaluation preprocessing with numpy and cv2
alone, for predictors and deployed models.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # albumentations phones home at import otherwise

import albumentations as A  # noqa: E402
import cv2  # noqa: E402
import numpy as np  # noqa: E402
from albumentations.pytorch import ToTensorV2  # noqa: E402

from oarkit.core.errors import ConfigError  # noqa: E402


def hw(size: int | Sequence[int] | None, what: str) -> tuple[int, int] | None:
    """``(height, width)`` from an int or a pair; ``None`` stays ``None``."""
    if size is None:
        return None
    values = [int(size)] * 2 if isinstance(size, (int, np.integer)) else [int(s) for s in size]
    if len(values) != 2 or min(values) <= 0:
        raise ConfigError(f"{what}={size!r} must be a positive int or [height, width]")
    return values[0], values[1]


def preprocess_spec(mean: Sequence[float], std: Sequence[float], crop_size: int | Sequence[int],
                    resize: int | Sequence[int] | None = None) -> dict[str, Any]:
    """The evaluation preprocessing as a plain, JSON-able dict (written into meta.json and deploy.yaml).

    The RGB uint8 image is optionally resized to ``resize`` ([height, width], bilinear), scaled to [0, 1],
    normalised with ``mean``/``std`` and laid out NCHW. ``crop_size`` is the training crop, the size exports use.
    """
    mean, std = [float(v) for v in mean], [float(v) for v in std]
    if len(mean) != 3 or len(std) != 3 or min(std) <= 0:
        raise ConfigError(f"mean={mean} and std={std} need three values each, std positive")
    size = hw(resize, "resize")
    return {"mean": mean, "std": std, "color": "RGB", "layout": "NCHW", "crop_size": list(hw(crop_size, "crop_size")),
            "resize": list(size) if size else None, "interpolation": "bilinear"}


def build_train_transform(spec: dict[str, Any], *, scale: Sequence[float] = (0.5, 2.0), hflip: float = 0.5,
                          color_jitter: float = 0.0, ignore_index: int = 255) -> A.Compose:
    """Random scale, random crop to ``spec["crop_size"]`` (padding images with 0 and labels with the ignore
    index), horizontal flip, brightness/contrast/saturation jitter, normalise, to tensors.

    Args:
        spec: a :func:`preprocess_spec` dict.
        scale: range of the random scale factor (PaddleSeg's ``ResizeStepScaling``, continuous here).
        hflip: probability of a horizontal flip.
        color_jitter: brightness, contrast and saturation range (PaddleSeg's ``RandomDistort``; 0 is off).
        ignore_index: the label of padded pixels.
    """
    lo, hi = (float(s) for s in scale)
    if not 0 < lo <= hi:
        raise ConfigError(f"scale={tuple(scale)!r} must satisfy 0 < min <= max, e.g. (0.5, 2.0)")
    if not 0 <= hflip <= 1:
        raise ConfigError(f"hflip={hflip!r} is a probability; use a value in [0, 1]")
    if color_jitter < 0:
        raise ConfigError(f"color_jitter={color_jitter!r} must be >= 0 (0.4 is PaddleSeg's usual choice)")
    h, w = spec["crop_size"]
    steps: list[Any] = []
    if (lo, hi) != (1.0, 1.0):
        steps.append(A.RandomScale(scale_limit=(lo - 1, hi - 1), interpolation=cv2.INTER_LINEAR,
                                   mask_interpolation=cv2.INTER_NEAREST, p=1.0))
    steps.append(A.RandomCrop(height=h, width=w, pad_if_needed=True, pad_position="top_left",
                              border_mode=cv2.BORDER_CONSTANT, fill=0, fill_mask=ignore_index))
    if hflip > 0:
        steps.append(A.HorizontalFlip(p=hflip))
    if color_jitter > 0:
        steps.append(A.ColorJitter(brightness=color_jitter, contrast=color_jitter, saturation=color_jitter, hue=0.0,
                                   p=1.0))
    steps += [A.Normalize(mean=spec["mean"], std=spec["std"], max_pixel_value=255.0), ToTensorV2()]
    return A.Compose(steps)


def build_eval_transform(spec: dict[str, Any]) -> A.Compose:
    """Optional resize (labels by nearest neighbour), normalise, to tensors."""
    steps: list[Any] = []
    if spec.get("resize"):
        h, w = spec["resize"]
        steps.append(A.Resize(height=h, width=w, interpolation=cv2.INTER_LINEAR, mask_interpolation=cv2.INTER_NEAREST))
    steps += [A.Normalize(mean=spec["mean"], std=spec["std"], max_pixel_value=255.0), ToTensorV2()]
    return A.Compose(steps)


def apply_spec(image: np.ndarray, spec: dict[str, Any]) -> np.ndarray:
    """The evaluation preprocessing with numpy and cv2 only: an RGB uint8 HxWx3 image to CHW float32."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"apply_spec expects an RGB uint8 HxWx3 image, got {image.dtype} {image.shape}")
    if spec.get("resize"):
        h, w = spec["resize"]
        if image.shape[:2] != (h, w):
            image = cv2.resize(image, (w, h), interpolation=cv2.INTER_LINEAR)
    mean = np.asarray(spec["mean"], dtype=np.float32) * 255.0
    inv_std = 1.0 / (np.asarray(spec["std"], dtype=np.float32) * 255.0)
    return np.ascontiguousarray(((image.astype(np.float32) - mean) * inv_std).transpose(2, 0, 1))
