"""Classification losses, Mixup/CutMix targets and the classification metric."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from oarkit.clas.data.mixup import MixupCutmix
from oarkit.clas.losses import CrossEntropyLoss, SoftTargetCrossEntropy
from oarkit.clas.metrics import ClassificationMetric


def _log_softmax(row):
    z = math.log(sum(math.exp(v) for v in row))
    return [v - z for v in row]


def test_cross_entropy_hand_computed():
    logits = torch.tensor([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]])
    target = torch.tensor([0, 1])
    logp = [_log_softmax(r) for r in logits.tolist()]
    plain = -(logp[0][0] + logp[1][1]) / 2
    assert CrossEntropyLoss()(logits, target).item() == pytest.approx(plain, rel=1e-6)
    # smoothing e over C classes: target (1 - e) * one_hot + e / C
    e, c = 0.1, 3
    smooth = (
        -sum((1 - e + e / c) * lp[y] + sum(e / c * lp[j] for j in range(c) if j != y) for lp, y in zip(logp, [0, 1]))
        / 2
    )
    assert CrossEntropyLoss(label_smoothing=e)(logits, target).item() == pytest.approx(smooth, rel=1e-6)


def test_soft_targets_equal_one_hot():
    torch.manual_seed(0)
    logits, target = torch.randn(8, 5), torch.randint(0, 5, (8,))
    one_hot = F.one_hot(target, 5).float()
    hard = CrossEntropyLoss()(logits, target)
    assert torch.allclose(SoftTargetCrossEntropy()(logits, one_hot), hard, atol=1e-6)
    assert torch.allclose(CrossEntropyLoss()(logits, one_hot), hard, atol=1e-6)
    assert torch.allclose(
        CrossEntropyLoss(label_smoothing=0.2)(logits, one_hot), CrossEntropyLoss(label_smoothing=0.2)(logits, target)
    )
    with pytest.raises(ValueError, match="must match logits"):
        SoftTargetCrossEntropy()(logits, one_hot[:, :4])


def test_losses_accept_low_precision_logits():
    logits = torch.randn(4, 3, dtype=torch.bfloat16, requires_grad=True)
    loss = CrossEntropyLoss(0.1)(logits, torch.tensor([0, 1, 2, 0]))
    loss.backward()
    assert loss.dtype == torch.float32 and logits.grad.dtype == torch.bfloat16


def _hand_made():
    """Six classes, four samples; label ranks 1, 2, 6 and 1 in their rows."""
    logits = torch.tensor(
        [
            [9.0, 1, 2, 3, 4, 5],  # label 0, ranked 1st
            [9.0, 8, 1, 2, 3, 4],  # label 1, ranked 2nd (predicted 0)
            [1.0, 9, 8, 7, 6, 5],  # label 0, ranked 6th (predicted 1)
            [0.0, 0, 0, 0, 0, 9],  # label 5, ranked 1st
        ]
    )
    return logits, torch.tensor([0, 1, 0, 5])


def test_metric_hand_made_case():
    logits, labels = _hand_made()
    metric = ClassificationMetric(num_classes=6)
    metric.update(logits[:2], (None, labels[:2]))
    metric.update(logits[2:], (None, labels[2:]))
    out = metric.compute()
    assert out["top1"] == pytest.approx(50.0) and out["top5"] == pytest.approx(75.0)
    assert out["num_samples"] == 4
    assert out["per_class_acc"] == [50.0, 0.0, None, None, None, 100.0]
    assert out["mean_class_acc"] == pytest.approx(50.0)
    assert metric.state["confusion"][0].tolist() == [1, 1, 0, 0, 0, 0]
    assert metric.state["confusion"][1].tolist() == [1, 0, 0, 0, 0, 0]
    assert set(metric.state) == {"confusion", "topk_correct", "total"}
    assert all(v.dtype == torch.int64 for v in metric.state.values())

    small = ClassificationMetric(num_classes=3)
    small.update(torch.eye(3), (None, torch.tensor([0, 1, 1])))
    assert set(small.compute()) == {"top1", "per_class_acc", "mean_class_acc", "num_samples"}
    with pytest.raises(ValueError, match="expected \\(3, 3\\)"):
        small.update(torch.zeros(3, 4), (None, torch.tensor([0, 1, 2])))


def test_metric_reduce_halves_equal_whole():
    logits, labels = _hand_made()
    whole = ClassificationMetric(6)
    whole.update(logits, (None, labels))
    halves = [ClassificationMetric(6), ClassificationMetric(6)]
    halves[0].update(logits[:1], (None, labels[:1]))
    halves[1].update(logits[1:], (None, labels[1:]))
    # a fake all_reduce: every rank's tensor becomes the sum over both ranks
    snapshot = [dict(m.state) for m in halves]

    def make_all_reduce(key_order):
        it = iter(key_order)

        def all_reduce_sum(tensor):
            key = next(it)
            return sum(s[key] for s in snapshot)

        return all_reduce_sum

    for m in halves:
        m.synchronize(make_all_reduce(list(m.state)), lambda obj: [obj])
        assert m.compute() == whole.compute()


def test_confusion_plot(tmp_path):
    logits, labels = _hand_made()
    metric = ClassificationMetric(6)
    metric.update(logits, (None, labels))
    path = metric.plot_confusion(tmp_path / "plots" / "confusion.png", [f"class {i}" for i in range(6)])
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    with pytest.raises(ValueError, match="2 names for 6 classes"):
        metric.plot_confusion(tmp_path / "x.png", ["a", "b"])


def test_mixup_soft_targets():
    torch.manual_seed(0)
    images, labels = torch.rand(6, 3, 8, 8), torch.tensor([0, 1, 2, 3, 4, 0])
    for kwargs in ({"mixup_alpha": 0.8}, {"cutmix_alpha": 1.0}, {"mixup_alpha": 0.8, "cutmix_alpha": 1.0}, {}):
        mix = MixupCutmix(**kwargs, label_smoothing=0.1, num_classes=5)
        out, targets = mix(images, labels)
        assert out.shape == images.shape and targets.shape == (6, 5)
        assert torch.allclose(targets.sum(dim=1), torch.ones(6))
        assert (targets >= 0).all()
    plain = MixupCutmix(label_smoothing=0.1, num_classes=5)(images, labels)[1]
    assert plain[0].tolist() == pytest.approx([0.92, 0.02, 0.02, 0.02, 0.02])

    def run(seed):
        torch.manual_seed(seed)
        return MixupCutmix(mixup_alpha=0.8, cutmix_alpha=1.0, num_classes=5)(images, labels)

    (a_img, a_tgt), (b_img, b_tgt) = run(3), run(3)
    assert torch.equal(a_img, b_img) and torch.equal(a_tgt, b_tgt)
    # mixed targets carry the same ratio as the mixed images (mixup: image = lam * x + (1 - lam) * x.flip(0))
    torch.manual_seed(1)
    out, targets = MixupCutmix(mixup_alpha=1.0, num_classes=5)(images, labels)
    lam = targets[1, 1].item()
    assert torch.allclose(out, lam * images + (1 - lam) * images.flip(0), atol=1e-6)
