"""The detection task on the kit-agnostic Trainer with a toy detector: it learns, its metric is COCO mAP over
per-image results, its meta.json carries the classes and preprocessing, and its export holds NMS inside."""

from __future__ import annotations

import functools
import json

import numpy as np
import pytest
import torch

from oarkit.core.engine.trainer import Trainer
from oarkit.det import DetectionData, DetectionTask
from oarkit.det.data.synthetic import CLASSES
from oarkit.det.export_graph import DetectionComparator


@pytest.fixture(scope="module")
def fitted(det_shapes_root, tmp_path_factory):
    from .conftest import ToyDetector

    out = tmp_path_factory.mktemp("toy_run")
    data = DetectionData(root=str(det_shapes_root), size=64, batch_size=4, eval_batch_size=3, distort=False)
    task = DetectionTask(ToyDetector, score_threshold=0.05)
    trainer = Trainer(task, data, output_dir=out, max_iters=40, eval_every_iters=20, progress=False,
                      tensorboard=False, optimizer=lambda params: torch.optim.Adam(params, lr=1e-2), device="cpu")
    trainer.fit()
    return trainer, task, data, out


def test_trains_evaluates_and_records_its_classes(fitted):
    trainer, task, data, out = fitted
    meta = json.loads((out / "best" / "meta.json").read_text())
    assert meta["task"] == "det" and meta["labels"] == list(CLASSES)
    assert meta["preprocessing"]["size"] == [64, 64]
    assert meta["postprocessing"]["nms"]["score_threshold"] == 0.05
    assert {"map", "map50", "map75", "map_small", "ap/circle"} <= set(meta["metrics"])
    assert (out / "pr_curve.png").exists()
    first, last = trainer.history[0], trainer.history[-1]
    assert last["train_loss"] < first["train_loss"] and "val_map" in last and "val_ap/cross" in last


def test_prediction_does_not_depend_on_the_batch(fitted):
    _, task, data, _ = fitted
    model = fitted[0].model.eval()
    images = torch.stack([data.val_dataset()[i][0] for i in range(3)])
    together = task.detect(model, images)
    alone = [task.detect(model, images[i:i + 1])[0] for i in range(3)]
    for a, b in zip(together, alone):
        torch.testing.assert_close(a["boxes"], b["boxes"], atol=1e-4, rtol=1e-4)
        assert torch.equal(a["labels"], b["labels"])


def test_onnx_export_holds_nms_verifies_by_matched_boxes_and_predicts(fitted, det_shapes_root, tmp_path):
    pytest.importorskip("onnxruntime")
    from oarkit.core.deploy import read_manifest
    from oarkit.core.export import export
    from oarkit.core.export.source import ExportSource
    from oarkit.det import Detector
    from oarkit.det.export import _dataset

    _, task, data, out = fitted
    model = fitted[0].model.eval()
    source = ExportSource(task=task, model=model, origin=str(out), output_dir=tmp_path,
                          data_root=str(det_shapes_root), dataset=functools.partial(_dataset, task=task))
    report = export(source, "onnx", quantize="int8", output_dir=tmp_path, batch_size=3,
                    options={"onnx_int8": {"float_modules": ["model.cls"]}})  # merged with the task's defaults
    rows = {r.format: r for r in report.rows}
    assert rows["onnx"].status == "pass" and report.main_indicator == "map", report.table()
    assert abs(rows["onnx"].metric_delta) < 1e-6
    # the task's int8 defaults: convolutions only, so decoding and NMS stay float (quantizing every op type cost
    # the demo 0.29 mAP), and the artifact verifies on its confident detections with the det tolerances
    import onnx

    graph = onnx.load(str(tmp_path / "onnx_int8" / "model.onnx")).graph
    dequantized = {o for n in graph.node if n.op_type == "DequantizeLinear" for o in n.output}
    fed = {n.op_type for n in graph.node if dequantized & set(n.input)}
    assert "Conv" in fed and not fed & {"Sigmoid", "Exp", "Add", "Sub", "Mul", "TopK", "NonMaxSuppression"}, fed
    assert any(n.op_type == "Conv" and "model.cls.weight" in n.input for n in graph.node)  # kept float
    assert read_manifest(tmp_path / "onnx_int8").quantization["calibration_method"] == "minmax"
    int8 = rows["onnx_int8"]
    assert int8.status == "pass", report.table()
    assert int8.metric_tolerance == pytest.approx(0.01)  # 1 point of a 0-1 mAP
    assert int8.outputs["scores"]["tolerance"] == pytest.approx(0.1) and int8.outputs["boxes"]["tolerance"] == 0.25
    folder = tmp_path / "onnx"
    image = str(det_shapes_root / "val" / "000001.jpg")
    eager = Detector(model, labels=task.labels, preprocessing=task.preprocessing, threshold=0.05)(image)
    deployed = Detector(folder, threshold=0.05)(image)
    assert deployed.labels == eager.labels and len(eager) > 0
    np.testing.assert_allclose(deployed.boxes, eager.boxes, atol=1e-3)
    np.testing.assert_allclose(deployed.scores, eager.scores, atol=1e-4)


def test_comparator_flags_a_moved_box_and_excuses_a_cut():
    ref = {"boxes": torch.tensor([[[0., 0, 10, 10], [20, 20, 30, 30], [0, 0, 0, 0]]]),
           "scores": torch.tensor([[0.9, 0.5, 0.0]]), "labels": torch.tensor([[1, 2, 0]]), "num": torch.tensor([2])}
    moved = {**ref, "boxes": torch.tensor([[[0., 0, 10, 10], [21, 20, 31, 30], [0, 0, 0, 0]]])}
    assert DetectionComparator()(ref, moved)["boxes"].error > 0.1
    at_cut = {**ref, "num": torch.tensor([1]), "scores": torch.tensor([[0.9, 0.0, 0.0]])}
    diffs = DetectionComparator(score_threshold=0.4995)(ref, at_cut)  # the second box sits at the threshold
    assert diffs["boxes"].error == 0 and "1 images keep another number" in diffs["num"].note
    assert "1 eager detections judged" in diffs["boxes"].note  # the 0.9 box; the one at the cut is excused
    tied = DetectionComparator(score_threshold=0.4995, margin=0.5)(ref, ref)  # every score inside the margin
    assert tied["boxes"].error == 0 and "nothing judged" in tied["boxes"].note  # a pass that says it judged nothing


def test_int8_comparator_judges_the_detections_a_user_sees():
    from oarkit.det.task import INT8_MIN_SCORE, INT8_SCORE_TOLERANCE, INT8_TOLERANCES

    judge = DetectionComparator(0.01, margin=INT8_SCORE_TOLERANCE, min_score=INT8_MIN_SCORE,
                                tolerances=INT8_TOLERANCES)

    def out(boxes, scores, labels):
        return {"boxes": torch.tensor([boxes + [[0.0] * 4] * (4 - len(boxes))]),
                "scores": torch.tensor([scores + [0.0] * (4 - len(scores))]),
                "labels": torch.tensor([labels + [0] * (4 - len(labels))]), "num": torch.tensor([len(boxes)])}

    def verdict(actual):
        return {k: d.error <= d.tolerance for k, d in judge(ref, actual).items() if d.tolerance is not None}

    a, b, tail = [0.0, 0, 40, 40], [50.0, 50, 90, 90], [10.0, 60, 30, 80]
    ref = out([a, b, tail], [0.9, 0.55, 0.05], [1, 2, 0])
    # a slightly moved box (IoU 0.9), scores within 0.1, a low-score tail reshuffled, the box at the cut dropped
    assert all(verdict(out([[0.0, 0, 40, 36], [70.0, 0, 90, 20]], [0.86, 0.2], [1, 3])).values())
    assert not verdict(out([[0.0, 0, 40, 28]], [0.9], [1]))["boxes"]  # IoU 0.7
    assert not verdict(out([b], [0.55], [2]))["boxes"]  # the confident box is gone
    assert not verdict(out([a], [0.7], [1]))["scores"]  # its score moved by 0.2
    assert not verdict(out([a], [0.9], [3]))["labels"]  # it changed class


def test_deploy_spec_takes_the_models_own_bounds_and_image_like_inputs():
    from oarkit.core.engine.deploy_spec import Dim
    from oarkit.core.export.prepare import random_inputs

    from .conftest import ToyDetector

    task = DetectionTask(ToyDetector, score_threshold=0.05)
    task.preprocessing = {"size": [64, 64], "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}
    model = ToyDetector().eval()
    assert task.deploy_spec(model).compare.tolerances == {}  # the format's tolerance
    model.export_tolerances = {"boxes": 2e-2, "scores": 2e-3}  # as the two-stage R-CNNs state
    spec = task.deploy_spec(model)
    assert spec.compare.tolerances == {"boxes": 2e-2, "scores": 2e-3}
    # random verification images span the normalised range of pixels in [0, 1], not standard normal noise
    low, high = (0 - 0.485) / 0.229, (1 - 0.406) / 0.225
    assert (spec.inputs[0].low, spec.inputs[0].high) == pytest.approx((low, high))
    x, = random_inputs(spec, {d.name: 2 for d in spec.inputs[0].dims if isinstance(d, Dim)}, seed=0)
    assert x.shape == (2, 3, 64, 64) and low <= float(x.min()) and float(x.max()) < high
