"""COCO and VOC mAP on hand-made detections: perfect, partial, crowd-ignored, gathered from two ranks; the
PR-curve picture."""

from __future__ import annotations

import pytest
import torch

from oarkit.det.metrics import COCOMetric, VOCMetric, voc_ap


def _target(image_id, boxes, labels, crowd=None, scale=(1.0, 1.0)):
    boxes = torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4)
    return {"boxes": boxes, "labels": torch.tensor(labels, dtype=torch.long),
            "iscrowd": torch.tensor(crowd or [False] * len(labels)), "image_id": torch.tensor(image_id),
            "scale": torch.tensor(scale, dtype=torch.float64), "orig_size": torch.tensor([100, 100])}


def _det(boxes, scores, labels):
    return {"boxes": torch.tensor(boxes, dtype=torch.float32).reshape(-1, 4), "scores": torch.tensor(scores),
            "labels": torch.tensor(labels, dtype=torch.long)}


GT = [_target(1, [[10, 10, 40, 40], [50, 50, 90, 95]], [0, 1]), _target(2, [[5, 5, 60, 30]], [1])]


@pytest.mark.parametrize("metric_cls", [COCOMetric, VOCMetric])
def test_perfect_detections_score_one(metric_cls):
    metric = metric_cls(2, ["a", "b"])
    outputs = [_det(t["boxes"].tolist(), [0.9] * len(t["labels"]), t["labels"].tolist()) for t in GT]
    metric.update(outputs, (None, GT))
    res = metric.compute()
    assert res["map"] == pytest.approx(1.0) and res["ap/a"] == pytest.approx(1.0) and res["num_images"] == 2
    if metric_cls is COCOMetric:
        assert res["map50"] == pytest.approx(1.0) and res["map75"] == pytest.approx(1.0)


def test_coco_missed_box_wrong_class_and_scaled_inputs():
    metric = COCOMetric(2, ["a", "b"])
    # the inputs were resized x2: boxes in input pixels map back through the targets' scale
    scaled = [_target(1, [[20, 20, 80, 80], [100, 100, 180, 190]], [0, 1], scale=(2.0, 2.0)),
              _target(2, [[10, 10, 120, 60]], [1], scale=(2.0, 2.0))]
    outputs = [_det([[20, 20, 80, 80], [100, 100, 180, 190]], [0.9, 0.8], [0, 0]),  # the second: wrong class
               _det([[10, 10, 120, 60]], [0.7], [1])]
    metric.update(outputs, (None, scaled))
    res = metric.compute()
    assert res["ap/a"] == pytest.approx(1.0)          # a's one box found; the false positive ranks below it
    assert res["ap/b"] == pytest.approx(0.5, abs=0.01)  # one of b's two boxes found (recall 0.5)
    assert res["map50"] == pytest.approx(0.75, abs=0.01)


def test_crowd_boxes_are_ignored():
    metric = COCOMetric(1, ["a"])
    target = _target(1, [[10, 10, 40, 40], [50, 50, 90, 90]], [0, 0], crowd=[False, True])
    metric.update([_det([[10, 10, 40, 40], [50, 50, 90, 90]], [0.9, 0.8], [0, 0])], (None, [target]))
    assert metric.compute()["map"] == pytest.approx(1.0)


def test_voc_11point_and_area():
    recall = torch.tensor([0.5, 0.5, 1.0]).numpy()
    precision = torch.tensor([1.0, 0.5, 0.6667]).numpy()
    assert voc_ap(recall, precision, "area") == pytest.approx(0.5 * 1.0 + 0.5 * 0.6667, abs=1e-4)
    assert voc_ap(recall, precision, "11point") == pytest.approx((6 * 1.0 + 5 * 0.6667) / 11, abs=1e-4)


def test_results_gathered_from_two_ranks_give_the_single_process_number(tmp_path):
    outputs = [_det([[12, 10, 40, 44], [50, 52, 90, 95]], [0.9, 0.4], [0, 1]), _det([[5, 5, 55, 30]], [0.6], [1])]
    whole = COCOMetric(2, ["a", "b"])
    whole.update(outputs, (None, GT))
    ranks = [COCOMetric(2, ["a", "b"]), COCOMetric(2, ["a", "b"])]
    ranks[0].update(outputs[1:], (None, GT[1:]))  # rank 0 saw image 2, rank 1 image 1 (and image 2 again: padding)
    ranks[1].update(outputs[:1] + outputs[1:], (None, GT[:1] + GT[1:]))
    parts = [r.results for r in ranks]
    ranks[0].synchronize(lambda t: t, lambda obj: parts)
    assert ranks[0].compute() == pytest.approx(whole.compute())
    path = ranks[0].plot_pr_curves(tmp_path / "pr_curve.png")
    assert (tmp_path / "pr_curve.png").stat().st_size > 10_000 and path.endswith("pr_curve.png")
