"""Classification export: Classifier on an export folder equals Classifier on the run, deploy.yaml preprocessing
equals the training eval transform, the export verb, and the quant=qat config group."""

from __future__ import annotations

import numpy as np
import pytest

from oarkit.clas import Classifier, export_source
from oarkit.clas.data.transforms import apply_spec, build_eval_transform
from oarkit.core.cli import main
from oarkit.core.deploy import read_manifest
from oarkit.core.engine.checkpoint import read_meta
from oarkit.core.export import export
from oarkit.core.quant.ptq import int8_dot_products_are_exact

EXACT_INT8 = pytest.mark.xfail(not int8_dot_products_are_exact(), strict=False,
                               reason="onnxruntime's AVX2 u8s8 kernels saturate 16-bit pair sums without VNNI")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")


@pytest.fixture(scope="module")
def run_dir(shapes_root, tmp_path_factory):
    """A one-epoch PP-LCNet x0.25 run on the shapes set, exported to ONNX fp32 and int8."""
    from oarkit.core.config import build_trainer, load_config

    out = tmp_path_factory.mktemp("clas_export") / "run"
    cfg = load_config("clas/pp_lcnet_x0_5_digits_32x32", [
        f"data.root={shapes_root}", f"output_dir={out}", "task.model.name=clas/pp_lcnet_x0_25",
        "trainer.max_epochs=1", "data.batch_size=8", "trainer.progress=false", "trainer.tensorboard=false"])
    build_trainer(cfg).fit()
    report = export(export_source(out), "onnx", quantize="int8")
    assert {r.format: r.status for r in report.rows}.keys() == {"onnx", "onnx_int8"}
    assert report.row("onnx").status == "pass", report.table()
    return out


def _images(shapes_root) -> list[str]:
    return sorted(str(p) for p in (shapes_root / "val").rglob("*.png"))[:6]


def test_classifier_on_the_onnx_export_matches_the_run(run_dir, shapes_root) -> None:
    images = _images(shapes_root)
    eager = Classifier(run_dir, topk=3)(images)
    deployed = Classifier(run_dir / "export" / "onnx", topk=3)(images)
    for e, d in zip(eager, deployed):
        assert d.class_ids == e.class_ids and d.labels == e.labels
        np.testing.assert_allclose(d.scores, e.scores, atol=1e-4)
    int8 = Classifier(run_dir / "export" / "onnx_int8", topk=3)(images)
    assert all(len(r.scores) == 3 and r.label in ("circle", "square", "triangle") for r in int8)


def test_deploy_preprocessing_equals_the_training_eval_transform(run_dir) -> None:
    manifest = read_manifest(run_dir / "export" / "onnx")
    meta = read_meta(run_dir / "best")
    assert manifest.preprocessing == meta["preprocessing"] and manifest.labels == meta["labels"]
    transform = build_eval_transform(meta["preprocessing"])
    rng = np.random.default_rng(0)
    for shape in ((32, 32, 3), (45, 61, 3), (80, 40, 3)):
        image = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_allclose(apply_spec(image, manifest.preprocessing), transform(image=image)["image"].numpy(),
                                   atol=1e-5)


def test_export_and_predict_verbs(run_dir, shapes_root, capsys) -> None:
    assert main(["export", str(run_dir), "--format", "pt2", "--verify", "--data", str(shapes_root)]) == 0
    out = capsys.readouterr().out
    assert "| pt2 |" in out and "pass" in out
    assert main(["predict", str(run_dir / "export" / "onnx_int8"), _images(shapes_root)[0], "--topk", "2"]) == 0
    assert '"label"' in capsys.readouterr().out
    assert main(["export", str(run_dir), "--format", "onxx"]) == 2
    assert "Did you mean 'onnx'" in capsys.readouterr().err


def test_qat_config_group_composes_and_requires_a_checkpoint(shapes_root) -> None:
    from oarkit.core import ConfigError, load_config

    cfg = load_config("clas/pp_lcnet_x0_5_digits_32x32", ["quant=qat", "quant.checkpoint=runs/x"])
    assert cfg.quant.backend == "onnxruntime" and cfg.trainer.ema_decay is None and cfg.trainer.max_epochs == 3
    assert load_config("clas/pp_lcnet_x0_5_digits_32x32", ["quant=none"]).get("quant") is None
    with pytest.raises(ConfigError, match="quant.checkpoint is required"):
        load_config("clas/pp_lcnet_x0_5_digits_32x32", ["quant=qat"])
    with pytest.raises(ConfigError, match="quant.backend"):
        load_config("clas/pp_lcnet_x0_5_digits_32x32", ["quant=qat", "quant.checkpoint=x", "quant.backed=x86"])


@EXACT_INT8
def test_qat_fine_tunes_in_the_trainer_and_exports_int8_onnx(run_dir, shapes_root, tmp_path) -> None:
    from oarkit.core.config import build_trainer, load_config

    cfg = load_config("clas/pp_lcnet_x0_5_digits_32x32", [
        "quant=qat", f"quant.checkpoint={run_dir}", f"data.root={shapes_root}", f"output_dir={tmp_path / 'qat'}",
        "task.model.name=clas/pp_lcnet_x0_25", "trainer.max_epochs=1", "data.batch_size=8",
        "trainer.progress=false", "trainer.tensorboard=false"])
    trainer = build_trainer(cfg)
    summary = trainer.fit()
    assert summary["int8_export"].endswith("report.md")
    folder = tmp_path / "qat" / "export" / "onnx_int8"
    manifest = read_manifest(folder)
    assert manifest.quantization["method"] == "qat" and manifest.verification["status"] in ("pass", "fail")
    # the artifact is the converted module (up to rare rounding ties), not merely close to it
    assert manifest.verification["outputs"]["logits"]["max_rel"] < 0.05
    assert read_meta(tmp_path / "qat" / "best")["quant"]["backend"] == "onnxruntime"
    # every convolution runs as onnxruntime's int8 QLinearConv (the x86 scheme left them float: Conv+HardSwish)
    import onnx
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.optimized_model_filepath = str(tmp_path / "optimized.onnx")
    ort.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])
    ops = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    assert ops.count("QLinearConv") > 10 and "Conv" not in ops and "FusedConv" not in ops
    result = Classifier(folder)(_images(shapes_root)[0])
    assert result.label in ("circle", "square", "triangle")
    # Resuming rebuilds the fake-quantized graph and loads its state (observer buffers included).
    resumed = build_trainer(cfg, resume=True)
    resumed.setup()
    assert resumed.start_epoch == 1
