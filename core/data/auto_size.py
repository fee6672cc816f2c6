"""``size: auto``: an input size fitted to a dataset's images (own-data recipes), read from file headers."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import numpy as np

from oarkit.core.errors import DataError

logger = logging.getLogger(__name__)

AUTO = "auto"


def typical_side(paths: Sequence[str | os.PathLike], *, multiple: int = 32, low: int = 32, high: int = 640,
                 sample: int = 500, what: str = "data.image_size") -> int:
    """The median shorter side of the images at ``paths`` (an evenly spaced sample of at most ``sample``),
    rounded up to ``multiple`` and held within ``[low, high]``.

    Only the file headers are read (PIL opens lazily). Raises DataError when none of them can be opened.
    """
    from PIL import Image

    picked = [paths[i] for i in np.linspace(0, len(paths) - 1, min(sample, len(paths))).astype(int)] if paths else []
    sides = []
    for path in picked:
        try:
            with Image.open(path) as image:
                sides.append(min(image.size))
        except (OSError, ValueError):
            continue
    if not sides:
        raise DataError(f"{what}=auto measures the training images, but none of the {len(picked)} sampled could be "
                        "opened; give the size as a number")
    side = int(np.median(sides))
    fitted = int(min(high, max(low, -(-side // multiple) * multiple)))
    logger.info("%s=auto: the training images' median shorter side is %d px, so %d", what, side, fitted)
    return fitted
