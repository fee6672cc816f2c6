"""Export formats, deploy.yaml, verification and the table, on a toy MLP task (no kit involved)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
import torch
import yaml
from torch import nn

from oarkit.core import ConfigError, UnknownNameError
from oarkit.core.deploy import DeployedModel, MissingDependencyError, read_manifest, require
from oarkit.core.engine.task import DeploySpec
from oarkit.core.export import ExportSource, export, get_format, list_formats, parse_formats, reparameterize

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


def _blob_task(toy):
    class DeployToyTask(toy.ToyTask):
        def deploy_spec(self, model: nn.Module) -> DeploySpec:
            return DeploySpec(module=model, example_inputs=(torch.randn(1, 8),), input_names=["x"],
                              output_names=["logits"], dynamic_axes={"x": {0: "batch"}},
                              preprocessing={"kind": "none"}, labels=["a", "b", "c"])

    return DeployToyTask


def _source(toy, tmp_path) -> ExportSource:
    torch.manual_seed(0)
    data = toy.BlobData(n=192)
    task = _blob_task(toy)(dropout=0.0)
    model = task.setup(data)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    model.train()
    for _ in range(60):  # full-batch steps: enough to separate the blobs
        x, y = data.train.tensors
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()

    def dataset(root: str, split: str) -> Any:
        return data.train if split == "train" else data.val

    return ExportSource(task=task, model=model, origin="toy", output_dir=tmp_path / "export", meta={"epoch": 1},
                        data_root=str(tmp_path), dataset=dataset)


def test_format_names_expand_and_order() -> None:
    assert parse_formats("all") == [n for n in ("executorch", "onnx", "openvino", "pt2") if n in parse_formats("all")]
    assert parse_formats("openvino") == ["onnx", "openvino"]  # built from the ONNX artifact
    assert parse_formats("onnx,pt2", quantize="int8") == ["onnx", "pt2", "onnx_int8", "pt2_int8"]
    assert set(list_formats(quantized=True)) == {"onnx_int8", "openvino_int8", "executorch_int8", "pt2_int8"}


def test_unknown_format_and_option_name_the_closest() -> None:
    with pytest.raises(UnknownNameError, match="'onnx'"):
        parse_formats("onxx")
    with pytest.raises(ConfigError, match="opset"):
        get_format("onnx").resolve_options({"opsett": 17})
    with pytest.raises(ConfigError, match="int8"):
        parse_formats("onnx", quantize="int4")


def test_missing_package_raises_with_install_hint() -> None:
    with pytest.raises(MissingDependencyError, match=r"pip install 'oarkit\[openvino\]'"):
        require("openvino.not_a_module_xyz", purpose="a test")


def test_reparameterize_fuses_blocks_in_place() -> None:
    class Rep(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fused = False

        def reparameterize(self) -> None:
            self.fused = True

    model = nn.Sequential(nn.Linear(2, 2), nn.Sequential(Rep(), Rep()))
    assert reparameterize(model) == 2 and all(m.fused for m in model[1])


def test_onnx_pt2_export_verify_and_deploy_yaml(toy, tmp_path) -> None:
    source = _source(toy, tmp_path)
    report = export(source, "onnx,pt2")
    assert [r.format for r in report.rows] == ["onnx", "pt2"]
    assert report.ok, report.table()
    onnx_row = report.row("onnx")
    assert onnx_row.max_rel < 1e-4 and onnx_row.metric_delta == pytest.approx(0.0) and onnx_row.size_bytes > 0
    manifest = read_manifest(tmp_path / "export" / "onnx")
    assert manifest.labels == ["a", "b", "c"] and manifest.inputs[0].shape == ["batch", 8]
    assert manifest.verification["status"] == "pass" and manifest.versions["torch"]
    raw = yaml.safe_load((tmp_path / "export" / "onnx" / "deploy.yaml").read_text())
    assert raw["format"] == "onnx" and raw["runtime"] == "onnxruntime"
    import onnx

    props = {p.key: p.value for p in onnx.load(str(tmp_path / "export" / "onnx" / "model.onnx")).metadata_props}
    assert json.loads(props["oarkit.labels"]) == ["a", "b", "c"]
    # Dynamic batch: any batch size runs, and matches eager.
    deployed = DeployedModel(tmp_path / "export" / "onnx")
    x = torch.randn(5, 8)
    torch.testing.assert_close(deployed(x), source.model(x), atol=1e-5, rtol=1e-4)
    assert (tmp_path / "export" / "report.md").read_text().count("| pass") == 2


def test_int8_onnx_calibrates_and_keeps_the_metric(toy, tmp_path) -> None:
    report = export(_source(toy, tmp_path), "onnx", quantize="int8")
    row = report.row("onnx_int8")
    assert row.status == "pass", report.table()
    manifest = read_manifest(tmp_path / "export" / "onnx_int8")
    assert manifest.quantization["activations"] == "uint8" and manifest.quantization["weights"] == "int8"
    import onnx

    ops = {n.op_type for n in onnx.load(str(tmp_path / "export" / "onnx_int8" / "model.onnx")).graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops


def test_a_failing_format_is_a_row_and_the_others_continue(toy, tmp_path, monkeypatch) -> None:
    import oarkit.core.deploy.optional as optional

    real = optional.importlib.import_module

    def no_openvino(name: str, *args: Any) -> Any:
        if name.split(".")[0] == "openvino":
            raise ImportError(f"No module named {name!r}")
        return real(name, *args)

    monkeypatch.setattr(optional.importlib, "import_module", no_openvino)
    report = export(_source(toy, tmp_path), "onnx,openvino,pt2", verify=False)
    status = {r.format: r.status for r in report.rows}
    assert status == {"onnx": "unverified", "openvino": "error", "pt2": "unverified"}
    assert "pip install 'oarkit[openvino]'" in report.row("openvino").message
    assert "openvino" in report.table() and not report.ok


def test_int8_without_calibration_data_says_how_to_fix(toy, tmp_path) -> None:
    source = _source(toy, tmp_path)
    source.dataset = None
    report = export(source, "onnx_int8", verify=False)
    assert report.row("onnx").status == "unverified"
    assert "--data" in report.row("onnx_int8").message


def test_deployed_model_chunks_batches_over_max_batch(toy, tmp_path) -> None:
    source = _source(toy, tmp_path)
    export(source, "onnx", verify=False)
    manifest = read_manifest(tmp_path / "export" / "onnx")
    manifest.max_batch = 2
    manifest.write(tmp_path / "export" / "onnx")
    deployed = DeployedModel(tmp_path / "export" / "onnx")
    x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    out = deployed.run_numpy(x)[0]
    np.testing.assert_allclose(out, source.model(torch.from_numpy(x)).detach().numpy(), atol=1e-5, rtol=1e-4)
