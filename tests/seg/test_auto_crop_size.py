"""``data.crop_size: auto``: the segmentation crop follows the training images' sizes."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from oarkit.core.errors import ConfigError
from oarkit.seg import SegmentationData


def _list_set(root, sizes: list[tuple[int, int]]) -> None:
    for split in ("train", "val"):
        lines = []
        for i, (w, h) in enumerate(sizes):
            (root / "images").mkdir(exist_ok=True)
            (root / "labels").mkdir(exist_ok=True)
            Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(root / "images" / f"{split}{i}.jpg")
            Image.fromarray(np.zeros((h, w), np.uint8)).save(root / "labels" / f"{split}{i}.png")
            lines.append(f"images/{split}{i}.jpg labels/{split}{i}.png")
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")


def test_auto_is_the_median_shorter_side_rounded_up_to_32(tmp_path) -> None:
    _list_set(tmp_path, [(300, 200), (330, 250), (500, 400)])  # shorter sides 200, 250, 400: median 250 -> 256
    data = SegmentationData(root=str(tmp_path), num_classes=2, crop_size="auto")
    assert data.crop_size is None
    data.train_dataset()
    assert data.crop_size == [256, 256]


def test_another_word_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="data.crop_size='big' must be a side, \\[height, width\\] or auto"):
        SegmentationData(root=str(tmp_path), num_classes=2, crop_size="big")
