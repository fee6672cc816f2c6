"""Parity with real Paddle: PaddleClas models built by paddleclas 2.6.0 on paddlepaddle 3.3.1 (in .venv-paddle),
converted with ``convert_paddle``, must give Paddle's eval output.

The Paddle side (paddle_side/clas_parity.py) runs once for the module in a subprocess; a missing Paddle
environment fails these tests (``make paddle-env`` builds it), it does not skip them.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from oarkit.core.engine.checkpoint import load_model_dir, read_meta
from oarkit.core.interop import apply_mapping, convert_paddle, read_pdparams
from oarkit.core.registry import create_model, model_info

ROOT = Path(__file__).resolve().parents[2]
# PaddleClas name -> oarkit registry name: the smallest variant of each family (both MobileNetV3 sizes, both
# ResNet-vd block types)
FAMILIES = {
    "PPLCNet_x1_0": "clas/pp_lcnet_x1_0",
    "ResNet50_vd": "clas/resnet50_vd",
    "ResNet18_vd": "clas/resnet18_vd",  # basic blocks, with PaddleClas's first projection shortcut
    "PPLCNetV2_small": "clas/pp_lcnetv2_small",
    "PPHGNet_tiny": "clas/pp_hgnet_tiny",
    "PPHGNetV2_B0": "clas/pp_hgnetv2_b0",
    "MobileNetV3_small_x0_35": "clas/mobilenetv3_small_x0_35",
    "MobileNetV3_large_x0_35": "clas/mobilenetv3_large_x0_35",
}
WITH_INFERENCE_MODEL = "PPLCNet_x1_0"  # also exported with paddle.jit.save and run by Paddle Inference
TOLERANCE = 1e-5  # max |ours - Paddle's| relative to max |Paddle's|


@pytest.fixture(scope="module")
def paddle_outputs(tmp_path_factory: pytest.TempPathFactory, run_paddle_side: Callable[..., None]) -> Path:
    out = tmp_path_factory.mktemp("paddle")
    run_paddle_side("clas_parity.py", out, *FAMILIES, "--inference", WITH_INFERENCE_MODEL)
    return out


def _ours(model: torch.nn.Module, x: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model.eval()(torch.from_numpy(x)).numpy()


def _relative_error(ours: np.ndarray, paddle: np.ndarray) -> float:
    return float(np.abs(ours - paddle).max() / np.abs(paddle).max())


@pytest.mark.parametrize("paddle_name", sorted(FAMILIES))
def test_converted_pdparams_give_paddles_output(paddle_outputs: Path, tmp_path: Path, paddle_name: str):
    folder = paddle_outputs / paddle_name
    out = convert_paddle(folder / "model.pdparams", model=FAMILIES[paddle_name], out=tmp_path / "converted")
    model, meta = load_model_dir(out)
    x, expected = np.load(folder / "input.npy"), np.load(folder / "output.npy")
    error = _relative_error(_ours(model, x), expected)
    print(f"{paddle_name}: max abs diff {np.abs(_ours(model, x) - expected).max():.3g}, "
          f"relative {error:.3g} (output scale {np.abs(expected).max():.3g})")
    assert error <= TOLERANCE
    assert meta["model"]["name"] == FAMILIES[paddle_name] and meta["converted_from"]["format"] == "pdparams"
    assert meta["task"] == "clas" and meta["preprocessing"]


def test_inference_model_gives_paddle_inferences_output(paddle_outputs: Path, tmp_path: Path):
    folder = paddle_outputs / WITH_INFERENCE_MODEL
    out = convert_paddle(folder / "inference", model=FAMILIES[WITH_INFERENCE_MODEL], out=tmp_path / "converted")
    model, meta = load_model_dir(out)
    x = np.load(folder / "input.npy")
    inference, dygraph = np.load(folder / "inference_output.npy"), np.load(folder / "output.npy")
    assert meta["converted_from"]["format"] == "inference_model"
    assert _relative_error(_ours(model, x), inference) <= TOLERANCE
    assert _relative_error(inference, dygraph) <= TOLERANCE


def _converted(paddle_outputs: Path, paddle_name: str) -> tuple[torch.nn.Module, np.ndarray, np.ndarray]:
    """The converted model of ``paddle_name`` with Paddle's input and output."""
    folder = paddle_outputs / paddle_name
    name = FAMILIES[paddle_name]
    model = create_model(name)
    state = apply_mapping(read_pdparams(folder / "model.pdparams"), model, model_info(name).paddle_mapping)
    model.load_state_dict(state, strict=False)
    return model, np.load(folder / "input.npy"), np.load(folder / "output.npy")


@pytest.mark.parametrize("paddle_name", ["PPLCNet_x1_0", "PPLCNetV2_small", "MobileNetV3_small_x0_35"])
def test_the_downscale_in_infer_factor_is_folded(paddle_outputs: Path, paddle_name: str):
    # PaddleClas's heads multiply by 1 - 0.2 at inference (Dropout "downscale_in_infer"); without the folded
    # factor the logits are off by far more than the tolerance.
    folder = paddle_outputs / paddle_name
    name = FAMILIES[paddle_name]
    model = create_model(name)
    without = dataclasses.replace(model_info(name).paddle_mapping, transforms=())
    model.load_state_dict(apply_mapping(read_pdparams(folder / "model.pdparams"), model, without), strict=False)
    assert _relative_error(_ours(model, np.load(folder / "input.npy")), np.load(folder / "output.npy")) > 1e-2


@pytest.mark.parametrize("paddle_name", ["MobileNetV3_small_x0_35", "MobileNetV3_large_x0_35"])
def test_mobilenet_v3_gates_with_hardsigmoid_slope_0_2(paddle_outputs: Path, paddle_name: str):
    # PaddleClas's MobileNetV3 SE gate is Hardsigmoid(slope=0.2, offset=0.5); PyTorch's (and timm's) slope is 1/6.
    from oarkit.core.backbones.layers import Hardsigmoid

    model, x, expected = _converted(paddle_outputs, paddle_name)
    gates = [m for m in model.modules() if isinstance(m, Hardsigmoid)]
    assert gates and all(g.slope == 0.2 and g.offset == 0.5 for g in gates)
    assert _relative_error(_ours(model, x), expected) <= TOLERANCE
    for gate in gates:
        gate.slope = 1 / 6
    assert _relative_error(_ours(model, x), expected) > 100 * TOLERANCE


def test_pp_hgnetv2_stem_pool_ignores_its_same_padding(paddle_outputs: Path):
    # Paddle's MaxPool2D(2, 1, padding="SAME") pads right and bottom, and the padding never wins the max; timm's
    # stem pools its zero-padded input, which wins wherever a border window is negative (the Paddle side shifts
    # the first stem activation below zero so that such windows exist).
    from oarkit.clas.models.pp_hgnet import PaddleSamePool

    x = -torch.arange(1.0, 17.0).reshape(1, 1, 4, 4)  # decreasing: each 2x2 window's max is its top-left value
    torch.testing.assert_close(PaddleSamePool()(torch.nn.functional.pad(x, (0, 1, 0, 1))), x)
    model, x, expected = _converted(paddle_outputs, "PPHGNetV2_B0")
    assert isinstance(model.stem.pool, PaddleSamePool)
    assert _relative_error(_ours(model, x), expected) <= TOLERANCE
    model.stem.pool = torch.nn.MaxPool2d(2, 1, ceil_mode=True)  # timm's own
    assert _relative_error(_ours(model, x), expected) > 10 * TOLERANCE


def test_cli_converts_with_another_number_of_classes(paddle_outputs: Path, tmp_path: Path):
    folder = paddle_outputs / "PPLCNet_x1_0"
    out = tmp_path / "ten_classes"
    run = subprocess.run([sys.executable, str(ROOT / "tools" / "convert.py"), "paddle", str(folder / "model.pdparams"),
                          "--model", "clas/pp_lcnet_x1_0", "--out", str(out), "--num-classes", "10"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    model, meta = load_model_dir(out)
    assert model.classifier.out_features == 10 and meta["converted_from"]["head_reinitialised"]
    assert len(read_meta(out)["labels"]) == 10
    from oarkit.clas import Classifier  # the kit's predictor takes the converted directory as it is

    assert len(Classifier(out, topk=3)(np.zeros((40, 50, 3), np.uint8)).to_dict()["topk"]) == 3
    # The backbone is Paddle's: the pooled features before the new head agree with a full conversion.
    full, _ = load_model_dir(convert_paddle(folder / "model.pdparams", model="clas/pp_lcnet_x1_0",
                                            out=tmp_path / "full"))
    x = torch.from_numpy(np.load(folder / "input.npy"))
    with torch.no_grad():
        torch.testing.assert_close(model.forward_head(model.forward_features(x), pre_logits=True),
                                   full.forward_head(full.forward_features(x), pre_logits=True))


def test_a_model_without_a_mapping_is_refused(paddle_outputs: Path, tmp_path: Path):
    from oarkit.core.errors import ConfigError

    with pytest.raises(ConfigError, match="declares no Paddle mapping.*clas/pp_lcnet_x1_0"):
        convert_paddle(paddle_outputs / "PPLCNet_x1_0" / "model.pdparams", model="clas/convnext_atto",
                       out=tmp_path / "x")


def test_only_pp_hgnet_base_folds_a_head_dropout():
    # PPHGNet_base's head has Dropout(0.2, downscale_in_infer); tiny and small have none (dropout_prob 0).
    weight = np.ones((3, 4), np.float32)
    folds = {}
    for size in ("tiny", "small", "base"):
        mapping = model_info(f"clas/pp_hgnet_{size}").paddle_mapping
        folds[size] = [float(fn(weight).max()) for pattern, fn in mapping.transforms if "head\\.fc" in pattern]
    assert folds == {"tiny": [], "small": [], "base": [pytest.approx(0.8)]}
