"""Images as RGB uint8 arrays: decoded from files, or taken from whatever a predictor is given."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from oarkit.core.errors import DataError

#: what image predictors take: a path, an HxW / HxWxC array, or a PIL image (``Any``: PIL stays optional)
ImageInput = str | Path | np.ndarray | Any
#: file suffixes of the images a folder holds (what ``oarkit predict FOLDER`` reads for an image task)
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def decode_image(path: str | os.PathLike) -> np.ndarray | None:
    """Decode an image file as RGB uint8 HxWx3, or ``None`` when it is missing or cannot be decoded."""
    try:
        # imdecode of the raw bytes (rather than imread) also copes with non-ASCII paths on every platform.
        data = np.fromfile(str(path), dtype=np.uint8)
    except OSError:
        return None
    image = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    return None if image is None else cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def read_image(path: str | os.PathLike) -> np.ndarray:
    """An image file as RGB uint8 HxWx3 (grey images repeated to three channels).

    Raises:
        DataError: the file is missing or is not a decodable image; the message names it and says which.
    """
    image = decode_image(path)
    if image is None:
        reason = "is missing" if not os.path.exists(path) else "cannot be decoded (corrupt or not an image)"
        raise DataError(f"Image {path} {reason}")
    return image


def _array_to_rgb(array: np.ndarray) -> np.ndarray:
    image = array[..., None] if array.ndim == 2 else array
    if image.ndim != 3 or image.shape[2] not in (1, 3, 4):
        raise DataError(f"an image array must be HxW or HxWxC with C in 1, 3, 4; got shape {array.shape}")
    if image.shape[2] == 1:
        image = np.repeat(image, 3, axis=2)
    image = image[..., :3]
    if image.dtype != np.uint8:  # floats in [0, 1] are scaled; anything else is clipped to [0, 255]
        image = np.clip(image * (255.0 if image.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(image)


def load_image_input(item: ImageInput, *, taker: str = "the predictor") -> tuple[np.ndarray, str | None]:
    """A predictor's input as ``(RGB uint8 HxWx3 array, source path or None)``.

    Args:
        item: a path, an array (HxW grey, HxWx1, HxWx3 RGB or HxWx4 RGBA; floats in [0, 1] are scaled) or a PIL
            image.
        taker: who takes it, for the error message (``"Classifier"``).

    Raises:
        DataError: an unreadable file, an array of another shape, or another type; the message says which.
    """
    if isinstance(item, (str, Path)):
        return read_image(item), str(item)
    if hasattr(item, "convert") and hasattr(item, "size"):  # a PIL image
        return np.asarray(item.convert("RGB")), getattr(item, "filename", None) or None
    if isinstance(item, np.ndarray):
        return _array_to_rgb(item), None
    raise DataError(f"{taker} takes paths, numpy arrays or PIL images, not {type(item).__name__}")
