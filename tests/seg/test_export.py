"""Segmentation models through the core exporters: logits within tolerance, argmax agreement, deploy.yaml, and the
Segmenter on the exported artifact."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from oarkit.core.deploy import DeployedModel, read_manifest
from oarkit.core.export import export
from oarkit.core.export.zoo import sample_names
from oarkit.seg import Segmenter, export_source

pytest.importorskip("onnxruntime")


@pytest.mark.slow
def test_registry_model_exports_to_onnx_and_pt2(tmp_path):
    source = export_source("seg/pp_liteseg_stdc1", pretrained=False)
    spec = source.task.deploy_spec(source.model)
    assert spec.output_names == ["logits"] and spec.postprocessing["inference"]["mode"] == "whole"
    assert spec.preprocessing["crop_size"] == [512, 1024] and len(spec.labels) == 19
    small = (torch.randn(1, 3, 64, 64),)
    report = export(source, "onnx,pt2", output_dir=tmp_path, example_inputs=small)
    assert report.ok, report.table()
    manifest = read_manifest(tmp_path / "onnx")
    assert manifest.task == "seg" and manifest.postprocessing["activation"] == "argmax"
    x = torch.randn(3, 3, 64, 64)
    with torch.no_grad():
        eager = spec.module.eval()(x)
        for fmt in ("onnx", "pt2"):
            got = DeployedModel(tmp_path / fmt)(x)
            assert got.shape == eager.shape == (3, 19, 64, 64)
            assert float((got - eager).abs().max() / eager.abs().max()) < 1e-4
            assert float((got.argmax(1) == eager.argmax(1)).float().mean()) > 0.999


def test_trained_run_exports_and_predicts(tmp_path, shapes_root):
    from oarkit.core.cli import main

    run = tmp_path / "run"
    assert main(["train", "-c", "seg/pp_liteseg_stdc1_shapes_256x256", f"data.root={shapes_root}",
                 f"output_dir={run}", "trainer.max_iters=4", "data.batch_size=4", "data.crop_size=[32,32]",
                 "trainer.progress=false", "trainer.tensorboard=false", "trainer.precision=fp32"]) == 0
    report = export(export_source(run), "onnx", output_dir=tmp_path / "export", data_root=str(shapes_root))
    assert report.ok and report.main_indicator == "miou", report.table()
    assert abs(report.rows[0].metric_delta) < 1e-6
    folder = tmp_path / "export" / "onnx"
    assert read_manifest(folder).postprocessing["inference"]["scales"] == [0.5]
    image = np.asarray(Image.open(shapes_root / "images/val/00000.jpg"))
    eager, deployed = Segmenter(run)(image), Segmenter(folder)(image)
    assert (eager.label_map == deployed.label_map).mean() > 0.999
    np.testing.assert_allclose(eager.scores, deployed.scores, atol=1e-4)


@pytest.mark.parametrize("name", sample_names("seg/*"))
def test_every_family_exports_to_onnx(tmp_path, name):
    source = export_source(name, pretrained=False)
    report = export(source, "onnx", output_dir=tmp_path, example_inputs=(torch.randn(1, 3, 64, 64),))
    assert report.ok, report.table()
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        eager = source.task.deploy_spec(source.model).module.eval()(x)
        got = DeployedModel(tmp_path / "onnx")(x)
    assert float((got.argmax(1) == eager.argmax(1)).float().mean()) > 0.99
