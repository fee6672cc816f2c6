"""Validation predicts each image as if alone: images of mixed sizes give the same predictions and mIoU at batch 1
and batch 8 (evaluation batches hold one image size; padding them together would change the predictions)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, SequentialSampler

from oarkit.core.data import GroupedBatchSampler
from oarkit.core.engine.evaluation import build_loader, run_evaluation
from oarkit.seg import SegmentationData, SegmentationTask

SIZES = [(48, 48), (32, 64), (48, 48), (64, 32), (32, 64), (48, 48), (56, 40), (48, 48), (32, 64), (64, 32),
         (48, 48), (40, 56)]


@pytest.fixture(scope="module")
def mixed_root(tmp_path_factory) -> Path:
    """Twelve images of six sizes in PaddleSeg's list layout, three classes (rectangles and discs on noise)."""
    root = tmp_path_factory.mktemp("mixed")
    (root / "images").mkdir()
    (root / "labels").mkdir()
    rng = np.random.default_rng(0)
    lines = []
    for i, (h, w) in enumerate(SIZES):
        image = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        label = np.zeros((h, w), np.uint8)
        cv2.rectangle(label, (w // 8, h // 8), (w // 2, h // 2), 1, -1)
        cv2.circle(label, (3 * w // 4, 3 * h // 4), min(h, w) // 6, 2, -1)
        image[label == 1] = (200, 60, 60)
        image[label == 2] = (60, 60, 200)
        cv2.imwrite(str(root / "images" / f"{i}.png"), image)
        cv2.imwrite(str(root / "labels" / f"{i}.png"), label)
        lines.append(f"images/{i}.png labels/{i}.png")
    for split in ("train", "val"):
        (root / f"{split}.txt").write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def setup(mixed_root):
    data = SegmentationData(root=str(mixed_root), num_classes=3, crop_size=48, batch_size=8)
    task = SegmentationTask("seg/pp_liteseg_stdc1")
    torch.manual_seed(0)
    model = task.setup(data).eval()  # random weights
    return task, data, model


def predictions(task, model, loader) -> tuple[dict[int, torch.Tensor], dict]:
    """Each dataset index's predicted label map, and the metric's results, from one pass as run_evaluation makes
    it (validation_step, then metric.update per batch)."""
    out: dict[int, torch.Tensor] = {}
    metric = task.build_metric()
    indices = list(loader.batch_sampler)
    with torch.no_grad():
        for batch_indices, batch in zip(indices, loader, strict=True):
            labels = task.validation_step(model, batch)
            metric.update(labels, batch)
            for i, index in enumerate(batch_indices):
                h, w = SIZES[index]
                out[index] = labels[i, :h, :w]
    return out, metric.compute()


def test_batch_1_and_batch_8_give_the_same_predictions_and_miou(setup):
    task, data, model = setup
    dataset = data.val_dataset()
    loaders = {b: build_loader(dataset, data, task, train=False, batch_size=b) for b in (1, 8)}
    assert all(len({SIZES[i] for i in batch}) == 1 for batch in loaders[8].batch_sampler)  # one size per batch
    assert max(len(batch) for batch in loaders[8].batch_sampler) == 5  # the five 48x48 images share a batch
    (preds_1, results_1), (preds_8, results_8) = (predictions(task, model, loaders[b]) for b in (1, 8))
    assert sorted(preds_1) == sorted(preds_8) == list(range(len(SIZES)))
    for index in preds_1:
        assert torch.equal(preds_1[index], preds_8[index]), f"image {index} {SIZES[index]}"
    assert results_1["miou"] == results_8["miou"] and results_1["class_iou"] == results_8["class_iou"]
    assert run_evaluation(task, model, loaders[8])[0]["miou"] == results_8["miou"]  # the path training takes


def test_padding_images_together_would_change_them(setup):
    """What grouping prevents: zero-padded batches of mixed sizes predict some images differently."""
    task, data, model = setup
    dataset = data.val_dataset()
    alone, _ = predictions(task, model, build_loader(dataset, data, task, train=False, batch_size=1))
    padded_loader = DataLoader(dataset, batch_size=8, sampler=SequentialSampler(dataset), collate_fn=task.collate)
    padded, _ = predictions(task, model, padded_loader)
    changed = [i for i in alone if not torch.equal(alone[i], padded[i])]
    assert changed, "padding changed nothing: the test above would not catch a regression"


def test_eval_batch_size_and_training_batches(setup, mixed_root):
    task, data, _ = setup
    assert data.eval_batch_size is None  # the training batch size, then
    sized = SegmentationData(root=str(mixed_root), num_classes=3, crop_size=64, batch_size=2, eval_batch_size=16)
    assert sized.eval_batch_size == 16
    # Training crops share one size: plain batches; a fixed validation size needs no grouping either.
    train = sized.train_dataset()
    assert sized.batch_sampler(SequentialSampler(train), train, batch_size=2, train=True, drop_last=True) is None
    resized = SegmentationData(root=str(mixed_root), num_classes=3, crop_size=64, val_resize=[64, 64])
    val = resized.val_dataset()
    assert resized.batch_sampler(SequentialSampler(val), val, batch_size=8, train=False, drop_last=False) is None


def test_grouped_batch_sampler_covers_every_index_once():
    groups = ["a", "b", "a", "c", "a", "b", "a", "a"]
    sampler = GroupedBatchSampler(range(len(groups)), groups, batch_size=2)
    batches = list(sampler)
    assert batches == [[0, 2], [1, 5], [4, 6], [7], [3]]  # each as soon as it is full, then the rest
    assert len(sampler) == len(batches)
    dropped = GroupedBatchSampler(range(len(groups)), groups, batch_size=2, drop_last=True)
    assert list(dropped) == [[0, 2], [1, 5], [4, 6]] and len(dropped) == 3
