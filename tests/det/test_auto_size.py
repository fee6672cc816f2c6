"""``data.size: auto``: the detection input follows the training images' sizes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from oarkit.core.errors import ConfigError
from oarkit.det import DetectionData


def _coco(root, sizes: list[tuple[int, int]]) -> None:
    for split in ("train", "val"):
        (root / split).mkdir(parents=True)
        images, annotations = [], []
        for i, (w, h) in enumerate(sizes):
            Image.fromarray(np.zeros((h, w, 3), np.uint8)).save(root / split / f"{i}.jpg")
            images.append({"id": i, "file_name": f"{i}.jpg", "width": w, "height": h})
            annotations.append({"id": i + 1, "image_id": i, "category_id": 0, "bbox": [2, 2, 10, 10], "area": 100,
                                "iscrowd": 0})
        (root / "annotations").mkdir(exist_ok=True)
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(
            {"images": images, "annotations": annotations, "categories": [{"id": 0, "name": "part"}]}))


def test_auto_is_the_median_longer_side_rounded_up_to_32(tmp_path) -> None:
    _coco(tmp_path, [(300, 200), (330, 250), (500, 400)])  # longer sides 300, 330, 500: median 330 -> 352
    data = DetectionData(root=str(tmp_path), size="auto")
    data.configure(size=[640, 640])  # the model card's size does not replace auto
    assert data.preprocess_spec()["size"] == [352, 352]


def test_auto_stays_within_160_to_640(tmp_path) -> None:
    _coco(tmp_path, [(64, 48)])
    assert DetectionData(root=str(tmp_path), size="auto").preprocess_spec()["size"] == [160, 160]


def test_another_word_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="data.size='big' must be a side, \\[height, width\\], auto or null"):
        DetectionData(root=str(tmp_path), size="big")
