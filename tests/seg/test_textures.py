"""The second synthetic set (textures): PaddleSeg's list layout, mixed image sizes, five classes, reproducible."""

from __future__ import annotations

import numpy as np

from oarkit.core.kits import task_entry
from oarkit.seg import SegmentationData, prepare_textures
from oarkit.seg.data.io import read_label
from oarkit.seg.data.textures import CLASSES, draw_sample


def test_textures_set_is_a_readable_list_dataset(tmp_path):
    root = prepare_textures(tmp_path / "textures", num_train=6, num_val=3)
    assert (root / "labels.txt").read_text().split() == list(CLASSES)
    data = SegmentationData(root=str(root), num_classes=5, crop_size=64)
    assert data.classes == list(CLASSES)
    val = data.val_dataset()
    sizes = val.image_sizes()
    assert len(sizes) == 3 and all(200 <= side <= 320 for size in sizes for side in size)
    image, label = val[0]
    assert tuple(image.shape[1:]) == sizes[0] == tuple(label.shape)
    train_sizes = {read_label(root / line.split()[1]).shape for line in (root / "train.txt").read_text().splitlines()}
    assert len(train_sizes) > 1  # mixed sizes, unlike the shapes set
    assert prepare_textures(tmp_path / "textures", num_train=6, num_val=3) == root  # a no-op the second time


def test_samples_are_reproducible_and_cover_the_classes():
    a_image, a_label = draw_sample(np.random.default_rng([0, 7, 0, 3]))
    b_image, b_label = draw_sample(np.random.default_rng([0, 7, 0, 3]))
    assert np.array_equal(a_image, b_image) and np.array_equal(a_label, b_label)
    seen = set()
    for i in range(12):
        seen |= set(np.unique(draw_sample(np.random.default_rng([0, 7, 0, i]))[1]).tolist())
    assert seen == set(range(len(CLASSES)))


def test_textures_is_a_dataset_name_of_the_seg_kit():
    assert task_entry("seg").datasets["textures"] is prepare_textures
