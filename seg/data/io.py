"""Reading label maps and checking label values against the class count (images: :mod:`oarkit.core.data`)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

from oarkit.core.errors import DataError


def read_label(path: str | os.PathLike) -> np.ndarray:
    """A label map of class indices, HxW uint8 (or int32 for more than 256 values).

    Palette PNGs (Pascal VOC) give their palette indices; grey PNGs their values. A colour PNG whose three
    channels are equal is read as grey; any other colour PNG is refused (convert colours to indices first).

    Raises:
        DataError: the file is missing, unreadable, or a colour image.
    """
    try:
        with Image.open(path) as im:
            mode = im.mode
            label = np.array(im)  # a writable copy (torch refuses read-only arrays)
    except FileNotFoundError as err:
        raise DataError(f"Label map {path} is missing") from err
    except OSError as err:
        raise DataError(f"Label map {path} cannot be decoded (corrupt or not an image): {err}") from err
    if label.ndim == 3:
        if label.shape[2] >= 3 and (label[..., 0] == label[..., 1]).all() and (label[..., 1] == label[..., 2]).all():
            label = label[..., 0]
        else:
            raise DataError(f"Label map {path} is a {mode} colour image; labels must be single-channel PNGs of class "
                            "indices (palette or grey). Convert the colours to indices first.")
    if label.dtype not in (np.uint8, np.int32):
        label = label.astype(np.int32)
    return np.ascontiguousarray(label)


def check_label(label: np.ndarray, num_classes: int, ignore_index: int, path: str | Path) -> None:
    """Refuse label values outside ``[0, num_classes)`` that are not ``ignore_index``, naming the file.

    Raises:
        DataError: with the offending values, the file, and the fixes.
    """
    if label.size == 0:
        return
    if int(label.max()) < num_classes and int(label.min()) >= 0:
        return
    bad = np.unique(label[((label < 0) | (label >= num_classes)) & (label != ignore_index)])
    if bad.size:
        shown = ", ".join(str(v) for v in bad[:8]) + (" ..." if bad.size > 8 else "")
        raise DataError(f"Label map {path} has values {shown} outside [0, {num_classes}) that are not the ignore "
                        f"index {ignore_index}. Set data.num_classes to the real class count, map those values to "
                        f"{ignore_index}, or fix the file.")
