"""A tiny offline dataset: scikit-learn's 8x8 handwritten digits, upscaled and written as an image folder.

Used by the quick-start and the tests: 1,437 training and 360 validation images in ten classes, no download.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import cv2
import numpy as np

from oarkit.core.data.generated import is_generated, mark_generated

logger = logging.getLogger(__name__)

NUM_TRAIN = 1437  # sklearn's 1,797 digits split 80/20 in their shipped order
MARKER = ".oarkit_digits.json"


def _path(root: Path, index: int, label: int) -> Path:
    split = "train" if index < NUM_TRAIN else "val"
    return root / split / str(int(label)) / f"{index:04d}.png"


def prepare_digits(root: str | os.PathLike, size: int = 32) -> Path:
    """Write scikit-learn's digits as ``root/{train,val}/<digit>/NNNN.png`` (grey, ``size`` x ``size``).

    The first 1,437 digits in scikit-learn's order go to ``train``, the last 360 to ``val``; ``NNNN`` is the
    digit's index in that order. A finished run leaves a marker file, written last, so calling again does
    nothing and an interrupted run is redone from the start.

    Args:
        root: the folder to write into (created if needed).
        size: side of the written images; the 8x8 originals are upscaled with bicubic interpolation.

    Returns:
        ``root`` as a Path, ready for ``ClassificationData(root=...)``.
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError as exc:  # scikit-learn is an optional (demo) dependency
        raise ImportError("prepare_digits needs scikit-learn: pip install 'oarkit[demo]'") from exc
    if size < 8:
        raise ValueError(f"size={size!r} must be at least 8 (the digits are 8x8)")
    root = Path(root)
    digits = load_digits()
    images, labels = digits.images, digits.target
    num_val = len(images) - NUM_TRAIN
    expected = {"size": int(size), "train": NUM_TRAIN, "val": num_val}

    if is_generated(root, MARKER, expected) and all(_path(root, i, y).is_file() for i, y in enumerate(labels)):
        logger.debug("digits already prepared in %s", root)
        return root

    logger.info("Writing %d digit images (%dx%d) to %s", len(images), size, size, root)
    for index, (image, label) in enumerate(zip(images, labels, strict=True)):
        path = _path(root, index, label)
        path.parent.mkdir(parents=True, exist_ok=True)
        # 0..16 → 0..255, then a smooth upscale; bicubic overshoot is clipped back into range.
        big = cv2.resize((image * (255.0 / 16.0)).astype(np.float32), (size, size), interpolation=cv2.INTER_CUBIC)
        pixels = np.clip(np.rint(big), 0, 255).astype(np.uint8)
        if not cv2.imwrite(str(path), pixels):
            raise OSError(f"Could not write {path}; check that {root} is writable")
    mark_generated(root, MARKER, expected)  # the marker appears only once every image is on disk
    return root
