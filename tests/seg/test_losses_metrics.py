"""Losses and metrics against hand-computed cases; the confusion matrix reduces across ranks."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from oarkit.core.errors import ConfigError
from oarkit.seg import (
    BCELoss,
    CrossEntropyLoss,
    DiceLoss,
    LovaszSoftmaxLoss,
    MixedLoss,
    OhemCrossEntropyLoss,
    SegmentationMetric,
)


def _logits(probs: list[list[float]]) -> torch.Tensor:
    """(1, C, 1, P) logits whose softmax over C is ``probs`` (one row of class probabilities per pixel)."""
    return torch.tensor(probs).log().T[None, :, None, :]


def test_cross_entropy_ignores_and_weights():
    logits = _logits([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    labels = torch.tensor([[[0, 1, 255]]])
    assert float(CrossEntropyLoss()(logits, labels)) == pytest.approx(-(math.log(0.7) + math.log(0.8)) / 2, rel=1e-5)
    weighted = CrossEntropyLoss(weight=[1.0, 3.0, 1.0])(logits, labels)
    assert float(weighted) == pytest.approx(-(math.log(0.7) + 3 * math.log(0.8)) / 4, rel=1e-5)
    all_ignored = CrossEntropyLoss()(logits, torch.full_like(labels, 255))
    assert float(all_ignored) == 0.0 and all_ignored.requires_grad is False or all_ignored.grad_fn is not None


def test_ohem_keeps_the_hard_pixels():
    # true-class probabilities 0.9, 0.6, 0.3, 0.5 (pixel 4 is ignored)
    logits = _logits([[0.9, 0.1], [0.4, 0.6], [0.3, 0.7], [0.5, 0.5], [0.2, 0.8]])
    labels = torch.tensor([[[0, 1, 0, 0, 255]]])
    nll = {0.9: -math.log(0.9), 0.6: -math.log(0.6), 0.3: -math.log(0.3), 0.5: -math.log(0.5)}
    # thresh 0.7, min_kept 1: the pixels below 0.7 count
    loss = OhemCrossEntropyLoss(thresh=0.7, min_kept=1)(logits, labels)
    assert float(loss) == pytest.approx((nll[0.6] + nll[0.3] + nll[0.5]) / 3, rel=1e-5)
    # thresh 0.4 would keep one pixel; min_kept 2 raises the threshold to the 2nd smallest probability (0.5),
    # and PaddleSeg keeps the pixels strictly below it
    loss = OhemCrossEntropyLoss(thresh=0.4, min_kept=2)(logits, labels)
    assert float(loss) == pytest.approx(nll[0.3], rel=1e-5)
    # min_kept at or above the valid pixel count: plain cross-entropy
    plain = F.cross_entropy(logits, labels, ignore_index=255)
    assert float(OhemCrossEntropyLoss(thresh=0.1, min_kept=4)(logits, labels)) == pytest.approx(float(plain), rel=1e-5)


def test_dice_loss_by_hand():
    logits = _logits([[0.8, 0.2], [0.4, 0.6]])
    labels = torch.tensor([[[0, 1]]])
    # class 0: inter 0.8, card 0.8+0.4+1 = 2.2; class 1: inter 0.6, card 0.2+0.6+1 = 1.8; smooth 1
    expected = 1 - ((2 * 0.8 + 1) / (2.2 + 1) + (2 * 0.6 + 1) / (1.8 + 1)) / 2
    assert float(DiceLoss()(logits, labels)) == pytest.approx(expected, rel=1e-5)
    with_ignore = DiceLoss()(_logits([[0.8, 0.2], [0.4, 0.6], [0.5, 0.5]]), torch.tensor([[[0, 1, 255]]]))
    assert float(with_ignore) == pytest.approx(expected, rel=1e-5)


def test_bce_single_and_multi_channel():
    logits = torch.tensor([2.0, -1.0, 0.5]).view(1, 1, 1, 3)
    labels = torch.tensor([[[1, 0, 255]]])
    expected = (math.log(1 + math.exp(-2.0)) + math.log(1 + math.exp(-1.0))) / 2
    assert float(BCELoss()(logits, labels)) == pytest.approx(expected, rel=1e-5)
    two = torch.tensor([[0.0, 1.0]]).T.reshape(1, 2, 1, 1)
    assert float(BCELoss()(two, torch.tensor([[[1]]]))) == pytest.approx(
        (math.log(2) + math.log(1 + math.exp(-1.0))) / 2, rel=1e-5)


def test_lovasz_softmax():
    perfect = torch.tensor([[10.0, -10.0], [-10.0, 10.0]]).T[None, :, None, :]
    labels = torch.tensor([[[0, 1]]])
    assert float(LovaszSoftmaxLoss()(perfect, labels)) == pytest.approx(0.0, abs=1e-6)
    # one class present, two pixels of it predicted with probabilities p1 > p2: errors sorted (1-p2, 1-p1) and
    # the Lovasz gradient of an all-foreground ground truth is (1/2, 1/2)
    p = _logits([[0.9, 0.1], [0.6, 0.4]])
    assert float(LovaszSoftmaxLoss()(p, torch.tensor([[[0, 0]]]))) == pytest.approx((0.1 + 0.4) / 2, rel=1e-5)
    with pytest.raises(ConfigError):
        LovaszSoftmaxLoss(classes="some")


def test_mixed_loss():
    logits, labels = torch.randn(2, 3, 4, 4), torch.randint(0, 3, (2, 4, 4))
    mixed = MixedLoss([CrossEntropyLoss(), LovaszSoftmaxLoss()], [0.8, 0.2])(logits, labels)
    expected = 0.8 * CrossEntropyLoss()(logits, labels) + 0.2 * LovaszSoftmaxLoss()(logits, labels)
    assert float(mixed) == pytest.approx(float(expected), rel=1e-6)
    with pytest.raises(ConfigError, match="as many coefs"):
        MixedLoss([CrossEntropyLoss()], [1.0, 2.0])


def _hand_metric() -> SegmentationMetric:
    metric = SegmentationMetric(num_classes=3)
    labels = torch.tensor([[[0, 0, 1, 1, 2, 255]]])
    pred = torch.tensor([[[0, 1, 1, 1, 0, 2]]])
    metric.update(pred, (None, labels))
    return metric


def test_metric_by_hand():
    out = _hand_metric().compute()
    # confusion rows (true): [1,1,0], [0,2,0], [1,0,0]
    assert out["class_iou"] == pytest.approx([1 / 3, 2 / 3, 0.0])
    assert out["miou"] == pytest.approx((1 / 3 + 2 / 3 + 0) / 3)
    assert out["acc"] == pytest.approx(3 / 5) and out["num_pixels"] == 5
    assert out["class_acc"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert out["class_dice"] == pytest.approx([0.5, 0.8, 0.0])
    pe = (2 * 2 + 2 * 3 + 1 * 0) / 25
    assert out["kappa"] == pytest.approx((0.6 - pe) / (1 - pe))
    metric = SegmentationMetric(num_classes=4)
    metric.update(torch.zeros(1, 4, 1, 2).index_fill_(1, torch.tensor([1]), 1.0), (None, torch.tensor([[[1, 1]]])))
    assert metric.compute()["class_iou"] == [None, 1.0, None, None] and metric.compute()["miou"] == 1.0
    with pytest.raises(ValueError, match=r"labels must be in \[0, 4\)"):
        metric.update(torch.zeros(1, 1, 1, dtype=torch.long), (None, torch.tensor([[[7]]])))


def test_metric_reduce_halves_equal_whole():
    whole = _hand_metric()
    labels, pred = torch.tensor([[[0, 0, 1, 1, 2, 255]]]), torch.tensor([[[0, 1, 1, 1, 0, 2]]])
    halves = [SegmentationMetric(3), SegmentationMetric(3)]
    halves[0].update(pred[..., :3], (None, labels[..., :3]))
    halves[1].update(pred[..., 3:], (None, labels[..., 3:]))
    total = halves[0].state["confusion"] + halves[1].state["confusion"]
    for m in halves:
        m.synchronize(lambda tensor: total.clone(), lambda obj: [obj])
        assert m.compute() == whole.compute()


def test_confusion_plot(tmp_path):
    path = _hand_metric().plot_confusion(tmp_path / "cm.png", ["a", "b", "c"])
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_a_perfect_prediction_scores_the_metrics_full_scale():
    # export tolerances are points of full_scale (1 point = 0.01 mIoU); a perfect map must score exactly full_scale
    metric = SegmentationMetric(num_classes=3)
    labels = torch.tensor([[[0, 1, 2], [2, 1, 255]]])
    metric.update(labels.clamp(max=2), labels)
    assert metric.compute()["miou"] == metric.full_scale == 1.0
