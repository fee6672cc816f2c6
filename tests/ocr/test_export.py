"""Export of the OCR models (verified against eager) and of the whole pipeline: OCR(export folder) on onnxruntime
reads rendered pages exactly as the eager pipeline does.

The classifier's export (about 15 s on two quiet cores) runs in ``make test``; the recognizer's and the whole
pipeline's (several minutes) are marked slow (``make test-slow``).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
from PIL import Image

from oarkit.core.cli import main
from oarkit.core.deploy import read_manifest
from oarkit.core.deploy.pipeline import read_pipeline
from oarkit.core.export import export
from oarkit.ocr import OCR, OCRResult, export_pipeline, export_source, render_page


def test_orientation_classifier_exports_and_verifies(tmp_path):
    report = export(export_source("ocr/cls_mv3_mobile"), "onnx,openvino", output_dir=tmp_path)
    assert [r.status for r in report.rows] == ["pass", "pass"], [r.message for r in report.rows]
    manifest = read_manifest(tmp_path / "onnx")
    assert manifest.task == "ocr/cls" and manifest.labels == ["0", "180"]
    assert manifest.preprocessing["height"] == 48 and manifest.preprocessing["width"] == 192


def test_predict_takes_a_pipeline_folder(tmp_path, monkeypatch, capsys):
    # pipeline.yaml names the task id "ocr", which the kit registers with OCR as its predictor (no deploy.yaml
    # needed); the exported stages themselves are exercised by the slow test below
    from oarkit.core import kits
    from oarkit.core.deploy.pipeline import PipelineManifest, StageSpec

    folder = tmp_path / "pipeline"
    folder.mkdir()
    stages = {"det": StageSpec(model="det/onnx"), "rec": StageSpec(model="rec/onnx")}
    PipelineManifest(glue="ocr/det_rec", stages=stages, task="ocr").write(folder)  # the stand-in loads no stage
    entry = kits.source_entry(folder)
    assert entry.task_id == "ocr" and entry.task_class is None and entry.export_source is None
    built = []

    def predictor(source, **kwargs):
        built.append((source, kwargs))
        return lambda inputs: [OCRResult(lines=[], source=str(x)) for x in inputs]

    monkeypatch.setitem(kits._ENTRIES, "ocr", dataclasses.replace(entry, predictor=predictor))
    image = tmp_path / "page.png"
    image.write_bytes(b"")  # the stand-in predictor never reads it
    assert main(["predict", str(folder), str(image)]) == 0
    assert built == [(str(folder), {"device": "cpu"})]
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["source"] == str(image)


@pytest.mark.slow
def test_recognizer_export_keeps_a_dynamic_width(tmp_path):
    source = export_source("ocr/rec_mv3_bilstm_ctc", pretrained=False)
    spec = source.task.deploy_spec(source.model)
    assert [d.name for d in spec.input_specs()[0].dynamic().values()] == ["batch", "width"]
    assert spec.dims()["width"].multiple == 8 and spec.postprocessing["decode"] == "ctc_greedy"
    report = export(source, "onnx", output_dir=tmp_path, example_inputs=(torch.randn(1, 3, 32, 64),))
    assert report.rows[0].status == "pass", report.rows[0].message


@pytest.mark.slow
def test_exported_pipeline_reads_like_eager(tmp_path, capsys):
    folder, reports = export_pipeline(tmp_path / "ocr", cls="ocr/cls_mv3_mobile", det_example=(160, 160),
                                      rec_example_width=160)
    assert read_pipeline(folder).glue == "ocr/det_cls_rec"
    assert all(r.rows[0].status == "pass" for r in reports.values())
    exported, eager = OCR(folder), OCR(use_cls=True)
    for language in ("en", "ch"):
        page = render_page(6, size=(480, 640), language=language, seed=2)
        assert exported(page.image).text == eager(page.image).text == page.text
    # the folder is a first-class input of the command line too
    image = tmp_path / "page.png"
    Image.fromarray(page.image).save(image)
    assert main(["predict", str(folder), str(image)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["text"] == page.text
