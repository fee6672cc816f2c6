"""Box-aware augmentation keeps boxes on their pixels: white rectangles on black, each box exactly its rectangle,
through flip, expand, crop, photometric distortion, resize, mosaic, mixup and multi-scale batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from oarkit.det.data import DetectionData, DetectionRecord, MultiScaleBatchSampler
from oarkit.det.data.formats import write_coco
from oarkit.det.data.transforms import PhotometricDistort, RandomCrop, RandomExpand, RandomFlip


@pytest.fixture(scope="module")
def rect_root(tmp_path_factory):
    import cv2

    root = tmp_path_factory.mktemp("rects")
    for split, count in (("train", 8), ("val", 2)):
        records = []
        (root / split).mkdir()
        for i in range(count):
            rng = np.random.default_rng([split == "val", i])
            image = np.zeros((64, 80, 3), np.uint8)
            boxes = []
            for _ in range(int(rng.integers(1, 4))):
                x, y = int(rng.integers(0, 60)), int(rng.integers(0, 44))
                w, h = int(rng.integers(8, 20)), int(rng.integers(8, 20))
                if any(x < b[2] + 2 and b[0] < x + w + 2 and y < b[3] + 2 and b[1] < y + h + 2 for b in boxes):
                    continue
                image[y:y + h, x:x + w] = 255
                boxes.append([x, y, x + w, y + h])
            cv2.imwrite(str(root / split / f"{i:06d}.png"), image)
            records.append(DetectionRecord(str(root / split / f"{i:06d}.png"), 80, 64, boxes, [0] * len(boxes),
                                           [False] * len(boxes), i))
        write_coco(records, ["rect"], root / "annotations" / f"instances_{split}.json", root / split,
                   copy_images=False)
    return root


def assert_boxes_on_pixels(image: np.ndarray, boxes: np.ndarray, bright: float, cut: bool = False) -> None:
    """Each box is filled with bright pixels (1 px in from its edges) and no bright pixel lies outside every box
    (1 px out). With ``cut`` (crops, mosaics), a rectangle cut by the border may lose its box (SSD's crop keeps
    boxes whose centre stays inside, mosaic those with 40% of their area in view), so only the first holds."""
    mask = image > bright
    covered = np.zeros_like(mask)
    for x1, y1, x2, y2 in boxes:
        inner = mask[int(np.ceil(y1)) + 1:int(y2) - 1, int(np.ceil(x1)) + 1:int(x2) - 1]
        if inner.size:
            assert inner.mean() > 0.9, f"box {[x1, y1, x2, y2]} frames {inner.mean():.0%} bright pixels"
        covered[max(0, int(y1) - 1):int(np.ceil(y2)) + 1, max(0, int(x1) - 1):int(np.ceil(x2)) + 1] = True
    if not cut:
        assert (mask & ~covered).sum() <= 0.01 * max(1, mask.sum()), "bright pixels outside every box"


def _gray(tensor: torch.Tensor) -> np.ndarray:
    return tensor.numpy().mean(axis=0)  # mean 0 / std 1: pixels in [0, 1]


@pytest.mark.parametrize("transform", [RandomFlip(1.0), RandomExpand(3.0, prob=1.0, fill=(0, 0, 0)),
                                       RandomCrop(prob=1.0), PhotometricDistort(prob=1.0)],
                         ids=["flip", "expand", "crop", "distort"])
def test_each_augmentation_keeps_boxes_on_their_pixels(rect_root, transform):
    data = DetectionData(root=str(rect_root), size=[64, 80], mean=[0, 0, 0], std=[1, 1, 1], distort=False,
                         hflip=0.0)
    base = data.dataset("train")
    for index in range(len(base)):
        for seed in range(4):
            sample = base.load(index)
            out = transform(sample, np.random.default_rng(seed))
            if isinstance(transform, PhotometricDistort):
                np.testing.assert_array_equal(out["boxes"], sample["boxes"])
                continue
            assert_boxes_on_pixels(out["image"].mean(axis=2) / 255, out["boxes"], 0.6,
                                   cut=isinstance(transform, RandomCrop))


@pytest.mark.parametrize("options,bright", [({"expand_ratio": 2.0, "crop": True, "hflip": 0.5}, 0.6),
                                            ({"mosaic": 1.0}, 0.6), ({"mixup": 1.0}, 0.3)],
                         ids=["expand-crop-flip", "mosaic", "mixup"])
def test_training_samples_keep_boxes_on_their_pixels(rect_root, options, bright):
    data = DetectionData(root=str(rect_root), size=[64, 80], mean=[0, 0, 0], std=[1, 1, 1], distort=False,
                         interpolation="linear", **{"hflip": 0.0, **options})
    train = data.train_dataset()
    seen = 0
    for epoch in range(3):
        train.set_epoch(epoch)
        for i in range(len(train)):
            image, target = train[i]
            assert image.shape == (3, 64, 80)
            assert_boxes_on_pixels(_gray(image), target["boxes"].numpy(), bright,
                                   cut=bool(options.get("crop") or options.get("mosaic")))
            seen += len(target["boxes"])
    assert seen > 0
    a, b = train[(0, (64, 80))], train[0]
    torch.testing.assert_close(a[0], b[0])  # a sample depends on (seed, epoch, index) only


def test_multi_scale_batches_share_one_size_per_batch_and_keep_boxes(rect_root):
    from oarkit.core.engine.evaluation import build_loader
    from oarkit.det import DetectionTask

    data = DetectionData(root=str(rect_root), size=[64, 80], mean=[0, 0, 0], std=[1, 1, 1], distort=False,
                         multi_scale=[[32, 40], [64, 80], [96, 120]], batch_size=2, interpolation="linear")
    loader = build_loader(data.train_dataset(), data, DetectionTask(lambda num_classes: None), train=True,
                          batch_size=2)
    sizes = set()
    for images, targets in loader:
        sizes.add(tuple(images.shape[2:]))
        for image, target in zip(images, targets):
            assert_boxes_on_pixels(_gray(image), target["boxes"].numpy(), 0.6)
    assert len(sizes) > 1 and sizes <= {(32, 40), (64, 80), (96, 120)}
    sampler = MultiScaleBatchSampler([[0, 1], [2, 3]], [(32, 32), (64, 64)], seed=3)
    assert list(sampler) == list(sampler)  # the sizes depend on (seed, epoch) only
