"""Export of the OCR models (verified against eager) and of the whole pipeline: OCR(export folder) on onnxruntime
reads rendered pages exactly as the eager pipeline does.

The classifier's export (about 15 s on two quiet cores) runs in ``make test``; the recognizer's and the whole
pipeline's (several minutes) are marked slow (``make test-slow``).
"""

from __future__ import annotations

import pytest
import torch

from oarkit.core.deploy import read_manifest
from oarkit.core.deploy.pipeline import read_pipeline
from oarkit.core.export import export
from oarkit.ocr import OCR, export_pipeline, export_source, render_page


def test_orientation_classifier_exports_and_verifies(tmp_path):
    report = export(export_source("ocr/cls_mv3_mobile"), "onnx,openvino", output_dir=tmp_path)
    assert [r.status for r in report.rows] == ["pass", "pass"], [r.message for r in report.rows]
    manifest = read_manifest(tmp_path / "onnx")
    assert manifest.task == "ocr/cls" and manifest.labels == ["0", "180"]
    assert manifest.preprocessing["height"] == 48 and manifest.preprocessing["width"] == 192


@pytest.mark.slow
def test_recognizer_export_keeps_a_dynamic_width(tmp_path):
    source = export_source("ocr/rec_mv3_bilstm_ctc", pretrained=False)
    spec = source.task.deploy_spec(source.model)
    assert [d.name for d in spec.input_specs()[0].dynamic().values()] == ["batch", "width"]
    assert spec.dims()["width"].multiple == 8 and spec.postprocessing["decode"] == "ctc_greedy"
    report = export(source, "onnx", output_dir=tmp_path, example_inputs=(torch.randn(1, 3, 32, 64),))
    assert report.rows[0].status == "pass", report.rows[0].message


@pytest.mark.slow
def test_exported_pipeline_reads_like_eager(tmp_path):
    folder, reports = export_pipeline(tmp_path / "ocr", cls="ocr/cls_mv3_mobile", det_example=(160, 160),
                                      rec_example_width=160)
    assert read_pipeline(folder).glue == "ocr/det_cls_rec"
    assert all(r.rows[0].status == "pass" for r in reports.values())
    exported, eager = OCR(folder), OCR(use_cls=True)
    for language in ("en", "ch"):
        page = render_page(6, size=(480, 640), language=language, seed=2)
        assert exported(page.image).text == eager(page.image).text == page.text
