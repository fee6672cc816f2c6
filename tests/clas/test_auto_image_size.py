"""``data.image_size: auto``: the input size follows the training images."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from oarkit.clas import ClassificationData
from oarkit.core.data.auto_size import typical_side
from oarkit.core.errors import ConfigError, DataError


def _folder(root, size: tuple[int, int], count: int = 3) -> None:
    for split in ("train", "val"):
        for name in ("cat", "dog"):
            (root / split / name).mkdir(parents=True)
            for i in range(count):
                Image.fromarray(np.zeros((size[1], size[0], 3), np.uint8)).save(root / split / name / f"{i}.png")


def test_auto_takes_the_median_shorter_side_rounded_up_to_32(tmp_path) -> None:
    _folder(tmp_path, (70, 45))  # width 70, height 45: shorter side 45 -> 64
    data = ClassificationData(root=str(tmp_path), image_size="auto")
    assert data.preprocess_spec()["crop"] == [64, 64]
    assert data.train_dataset()[0][0].shape[-2:] == (64, 64)


def test_auto_stays_within_its_bounds(tmp_path) -> None:
    big = tmp_path / "big.png"
    Image.fromarray(np.zeros((900, 1200, 3), np.uint8)).save(big)
    tiny = tmp_path / "tiny.png"
    Image.fromarray(np.zeros((8, 8, 3), np.uint8)).save(tiny)
    assert typical_side([big], high=224) == 224
    assert typical_side([tiny]) == 32


def test_auto_with_no_readable_image_and_a_wrong_word_are_clear_errors(tmp_path) -> None:
    (tmp_path / "broken.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match="none of the 1 sampled could be opened"):
        typical_side([tmp_path / "broken.png"])
    with pytest.raises(ConfigError, match="data.image_size='big' must be a number of pixels, auto or null"):
        ClassificationData(root=str(tmp_path), image_size="big")
