"""The detection task on the kit-agnostic Trainer with a toy detector: it learns, its metric is COCO mAP over
per-image results, its meta.json carries the classes and preprocessing, and its export holds NMS inside."""

from __future__ import annotations

import json

import pytest
import torch

from oarkit.core.engine.trainer import Trainer
from oarkit.core.export.compare import compare_batch
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


def test_export_graph_holds_nms_and_matches_eager_in_onnxruntime(fitted, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    _, task, data, _ = fitted
    model = fitted[0].model.eval()
    spec = task.deploy_spec(model)
    assert spec.output_names == ["boxes", "scores", "labels", "num"]
    batch = torch.export.Dim("batch", min=1, max=64)
    torch.onnx.export(spec.module, spec.example_inputs, tmp_path / "det.onnx", dynamo=True, external_data=False,
                      input_names=spec.input_names, output_names=spec.output_names,
                      dynamic_shapes=({0: batch},))
    session = ort.InferenceSession(str(tmp_path / "det.onnx"))
    images = torch.stack([data.val_dataset()[i][0] for i in range(4)])
    with torch.no_grad():
        eager = spec.module(images)
    got = [torch.from_numpy(a) for a in session.run(None, {"images": images.numpy()})]
    diffs = compare_batch(spec.output_names, eager, got, spec.compare)
    assert all(d.error < 1e-4 for d in diffs.values()), diffs
    assert int(eager[3].sum()) > 0  # something was detected and compared


def test_comparator_flags_a_moved_box_and_excuses_a_cut():
    ref = {"boxes": torch.tensor([[[0., 0, 10, 10], [20, 20, 30, 30], [0, 0, 0, 0]]]),
           "scores": torch.tensor([[0.9, 0.5, 0.0]]), "labels": torch.tensor([[1, 2, 0]]), "num": torch.tensor([2])}
    moved = {**ref, "boxes": torch.tensor([[[0., 0, 10, 10], [21, 20, 31, 30], [0, 0, 0, 0]]])}
    assert DetectionComparator()(ref, moved)["boxes"].error > 0.1
    at_cut = {**ref, "num": torch.tensor([1]), "scores": torch.tensor([[0.9, 0.0, 0.0]])}
    diffs = DetectionComparator(score_threshold=0.4995)(ref, at_cut)  # the second box sits at the threshold
    assert diffs["boxes"].error == 0 and "1 images keep another number" in diffs["num"].note
