"""int8 of a trained detector verifies with the det tolerances: the demo recipe (PP-YOLOE+-s from scratch on the
synthetic shapes, 150 iterations) exported to ONNX, OpenVINO and their int8 variants with the task's own int8
settings; every row passes, float rows keep the mAP, int8 rows lose less than a point (0.01 mAP). Slow: it trains
the demo model (a few minutes on two cores)."""

from __future__ import annotations

import pytest

from oarkit.core.cli import main
from oarkit.det import prepare_det_shapes

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]


def test_trained_demo_detector_exports_and_verifies_in_int8(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("openvino")
    from oarkit.core.export import export
    from oarkit.det import export_source

    root = prepare_det_shapes(tmp_path / "shapes")
    run = tmp_path / "run"
    assert main(["train", "-c", "det/ppyoloe_plus_crn_s_shapes_160x160", f"data.root={root}", f"output_dir={run}",
                 "trainer.progress=false", "trainer.tensorboard=false"]) == 0
    report = export(export_source(run), "onnx,openvino", quantize="int8", output_dir=tmp_path / "export",
                    data_root=str(root), batch_size=16)
    assert report.eager_metric > 0.6 and {r.format for r in report.rows} == {
        "onnx", "openvino", "onnx_int8", "openvino_int8"}, report.table()
    assert all(r.status == "pass" for r in report.rows), report.table()
    for row in report.rows:
        assert abs(row.metric_delta) < (0.01 if "int8" in row.format else 1e-3), report.table()
    int8 = report.row("onnx_int8")
    assert int8.metric_tolerance == pytest.approx(0.01) and int8.size_bytes < 0.3 * report.row("onnx").size_bytes
