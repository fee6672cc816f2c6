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
from oarkit.core.errors import OarkitError
from oarkit.core.export import export
from oarkit.ocr import OCR, OCRResult, export_pipeline, export_source, render_page

#: the pipeline tests export PP-OCRv4 mobile (smaller than the default PP-OCRv6 small: the mechanism is the point)
V4 = {"det": "ocr/ppocrv4_det_mobile", "rec": "ocr/ppocrv4_rec_mobile"}


def _int8_checks(report, int8_share: float) -> None:
    """Every row passed (int8: the decisions its outputs drive and the task metric within their bounds), and the
    int8 artifact is at most ``int8_share`` of the float one."""
    rows = {r.format: r for r in report.rows}
    assert all(r.status == "pass" for r in rows.values()), {f: r.message for f, r in rows.items()}
    int8, fp32 = rows["onnx_int8"], rows["onnx"]
    print(f"{report.source}: fp32 {fp32.size_bytes / 1e6:.2f} MB, int8 {int8.size_bytes / 1e6:.2f} MB, "
          f"{report.main_indicator} {report.eager_metric:.4f} -> {int8.metric:.4f}, outputs {int8.outputs}")
    assert int8.size_bytes < int8_share * fp32.size_bytes
    assert int8.metric_delta >= -0.01  # one point of a fraction
    quantization = read_manifest(int8.folder).quantization
    assert quantization["activations"] == "uint8" and quantization["reduce_range"] is True


def test_orientation_classifier_exports_and_verifies(tmp_path, rec_root):
    # float formats against eager outputs; int8 (Conv only, 7-bit weights, calibrated on rendered lines) by its
    # turn decisions
    report = export(export_source("ocr/cls_mv3_mobile"), "onnx,openvino,onnx_int8", output_dir=tmp_path,
                    data_root=str(rec_root), calibration_images=8, batch_size=8)
    _int8_checks(report, int8_share=0.6)
    manifest = read_manifest(tmp_path / "onnx")
    assert manifest.task == "ocr/cls" and manifest.labels == ["0", "180"]
    assert manifest.preprocessing["height"] == 48 and manifest.preprocessing["width"] == 192


@pytest.mark.slow
def test_detector_int8_keeps_the_binary_map_and_hmean(tmp_path, det_root):
    report = export(export_source("ocr/ppocrv4_det_mobile"), "onnx,onnx_int8", output_dir=tmp_path,
                    data_root=str(det_root), calibration_images=4, batch_size=4,
                    example_inputs=(torch.randn(1, 3, 160, 160),))
    _int8_checks(report, int8_share=0.4)


@pytest.mark.slow
def test_recognizer_int8_reads_the_same_text(tmp_path, rec_root):
    # Conv and MatMul only, 7-bit weights (the task's export options): the rest of the SVTR neck stays float
    report = export(export_source("ocr/ppocrv4_rec_mobile"), "onnx,onnx_int8", output_dir=tmp_path,
                    data_root=str(rec_root), calibration_images=8, batch_size=8)
    _int8_checks(report, int8_share=0.4)
    assert read_manifest(tmp_path / "onnx_int8").source["options"]["op_types"] == ["Conv", "MatMul"]


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
def test_int8_pipeline_with_a_float_recognizer_reads_like_eager(tmp_path, det_root, rec_root):
    # int8 det and cls (calibrated on rendered pages and lines), the recognizer kept float (stage_formats)
    folder, reports = export_pipeline(tmp_path / "ocr", **V4, cls="ocr/cls_mv3_mobile", format="onnx_int8",
                                      stage_formats={"rec": "onnx"}, det_example=(160, 160), rec_example_width=160,
                                      data_roots={"det": str(det_root), "cls": str(rec_root)}, calibration_images=8)
    assert {k: v.model for k, v in read_pipeline(folder).stages.items()} == {
        "det": "det/onnx_int8", "cls": "cls/onnx_int8", "rec": "rec/onnx"}
    exported, eager = OCR(folder), OCR(version="PP-OCRv4", use_cls=True)  # the exported det + rec
    for language in ("en", "ch"):
        page = render_page(6, size=(480, 640), language=language, seed=2)
        # int8 boxes end a few pixels off, which can take a space between words with them ("how666")
        assert exported(page.image).text.replace(" ", "") == eager(page.image).text.replace(" ", "")


def test_pipeline_stage_formats_name_known_stages(tmp_path):
    with pytest.raises(OarkitError, match="the stages are det, cls and rec"):
        export_pipeline(tmp_path, stage_formats={"recognizer": "onnx"})


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
    folder, reports = export_pipeline(tmp_path / "ocr", **V4, cls="ocr/cls_mv3_mobile", det_example=(160, 160),
                                      rec_example_width=160)
    assert read_pipeline(folder).glue == "ocr/det_cls_rec"
    assert all(r.rows[0].status == "pass" for r in reports.values())
    exported, eager = OCR(folder), OCR(version="PP-OCRv4", use_cls=True)  # the exported det + rec
    for language in ("en", "ch"):
        page = render_page(6, size=(480, 640), language=language, seed=2)
        assert exported(page.image).text == eager(page.image).text == page.text
    # the folder is a first-class input of the command line too
    image = tmp_path / "page.png"
    Image.fromarray(page.image).save(image)
    assert main(["predict", str(folder), str(image)]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["text"] == page.text


def test_verification_batches_fit_the_detectors_graph(tmp_path):
    # a text detector's graph takes batches of 1 to 16: the exporter's metric and calibration passes stay within
    from oarkit.core.export.pipeline import Exporter, largest_batch

    exporter = Exporter(export_source("ocr/ppocrv4_det_mobile"), output_dir=tmp_path, verify=False, batch_size=32)
    assert largest_batch(exporter.spec) == 16 and exporter.batch_size == 16
    assert Exporter(export_source("ocr/ppocrv4_det_mobile"), output_dir=tmp_path, batch_size=4).batch_size == 4
