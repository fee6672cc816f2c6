"""Parity with real Paddle: PP-YOLOE+ and PicoDet built from paddledet 2.6.0's layers on paddlepaddle 3.3.1 (in
.venv-paddle), converted with ``convert_paddle``, must give Paddle's eval outputs (the heads' raw outputs).

The Paddle side (paddle_side/det_parity.py) runs once for the module in a subprocess; a missing Paddle
environment fails these tests (``make paddle-env`` builds it), it does not skip them. Beside the eval outputs, the
heads' training losses are compared before and after the ATSS -> task-aligned switch. RT-DETR has no Paddle side:
paddledet 2.6.0, the newest on the package registry, predates it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

from oarkit.core.engine.checkpoint import load_model_dir
from oarkit.core.interop import convert_paddle

# the Paddle side's model -> oarkit registry name (the smallest width of each family)
FAMILIES = {"ppyoloe_plus_crn_s": "det/ppyoloe_plus_crn_s", "ppyoloe_crn_s": "det/ppyoloe_crn_s",
            "picodet_s_320": "det/picodet_s_320", "picodet_lcnet_x1_0_layout": "det/picodet_lcnet_x1_0_layout"}
WITH_LOSSES = ("ppyoloe_plus_crn_s", "ppyoloe_crn_s", "picodet_s_320")  # the layout PicoDet trained with SimOTA
WITH_INFERENCE_MODEL = "ppyoloe_plus_crn_s"  # also saved with paddle.jit.save (what PaddleDetection deploys)
TOLERANCE = 1e-5  # max |ours - Paddle's| relative to max |Paddle's|, per output


@pytest.fixture(scope="module")
def paddle_outputs(tmp_path_factory: pytest.TempPathFactory, run_paddle_side: Callable[..., None]) -> Path:
    out = tmp_path_factory.mktemp("paddle_det")
    run_paddle_side("det_parity.py", out, *FAMILIES, "--inference", WITH_INFERENCE_MODEL)
    return out


@pytest.mark.parametrize("paddle_name", sorted(FAMILIES))
def test_converted_pdparams_give_paddles_head_outputs(paddle_outputs: Path, tmp_path: Path, paddle_name: str):
    folder = paddle_outputs / paddle_name
    out = convert_paddle(folder / "model.pdparams", model=FAMILIES[paddle_name], out=tmp_path / "converted")
    model, meta = load_model_dir(out)
    assert meta["model"]["name"] == FAMILIES[paddle_name] and meta["converted_from"]["format"] == "pdparams"
    assert meta["task"] == "det"
    with torch.no_grad():
        ours = model.eval()(torch.from_numpy(np.load(folder / "input.npy")))
    expected = sorted(folder.glob("output_*.npy"))
    assert len(ours) == len(expected)
    for i, tensor in enumerate(ours):
        paddle = np.load(folder / f"output_{i}.npy")
        assert tuple(tensor.shape) == paddle.shape
        error = float(np.abs(tensor.numpy() - paddle).max() / np.abs(paddle).max())
        print(f"{paddle_name} output {i} {list(paddle.shape)}: max abs diff {np.abs(tensor.numpy() - paddle).max():.3g}"
              f", relative {error:.3g}")
        assert error <= TOLERANCE
    scores = np.load(folder / "output_0.npy")
    assert 0.01 < np.median(scores) < 0.99  # the perturbed model's scores are not saturated: every layer shows


@pytest.mark.parametrize("paddle_name", WITH_LOSSES)
def test_training_losses_equal_paddles_before_and_after_the_assigner_switch(paddle_outputs: Path, paddle_name: str):
    # The head's losses on the same features and ground truths: ATSS assignment at epoch 0, task-aligned after the
    # switch; varifocal, GIoU and DFL (and PP-YOLOE's logged L1) as PaddleDetection computes them.
    from oarkit.core.interop import apply_mapping, read_pdparams
    from oarkit.core.registry import create_model, model_info

    folder = paddle_outputs / paddle_name
    name = FAMILIES[paddle_name]
    model = create_model(name).eval()
    model.load_state_dict(apply_mapping(read_pdparams(folder / "model.pdparams"), model,
                                        model_info(name).paddle_mapping), strict=False)
    gt = np.load(folder / "targets.npz")
    targets = [{"boxes": torch.from_numpy(b[m[:, 0] > 0]), "labels": torch.from_numpy(c[m[:, 0] > 0, 0])}
               for b, c, m in zip(gt["gt_bbox"], gt["gt_class"], gt["pad_gt_mask"])]
    expected = json.loads((folder / "losses.json").read_text())
    head = model.yolo_head if hasattr(model, "yolo_head") else model.head
    with torch.no_grad():
        feats = model.neck(model.backbone(torch.from_numpy(np.load(folder / "input.npy"))))
        for epoch, paddle_losses in expected.items():
            ours = head.forward_train(feats, targets, int(epoch))
            for key, value in paddle_losses.items():
                print(f"{paddle_name} epoch {epoch} {key}: Paddle {value:.6g}, ours {float(ours[key]):.6g}")
                assert abs(float(ours[key]) - value) <= 1e-5 * abs(value) + 1e-6, (epoch, key)


def test_inference_model_converts_to_the_same_outputs(paddle_outputs: Path, tmp_path: Path):
    # Paddle Inference cannot run this program on 3.3.1 (see det_parity.main): the weights read
    # from inference.pdiparams + .pdiparams.info give the dygraph model's outputs.
    folder = paddle_outputs / WITH_INFERENCE_MODEL
    out = convert_paddle(folder / "inference", model=FAMILIES[WITH_INFERENCE_MODEL], out=tmp_path / "converted")
    model, meta = load_model_dir(out)
    assert meta["converted_from"]["format"] == "inference_model"
    with torch.no_grad():
        ours = model.eval()(torch.from_numpy(np.load(folder / "input.npy")))
    for i, tensor in enumerate(ours):
        paddle = np.load(folder / f"output_{i}.npy")
        assert float(np.abs(tensor.numpy() - paddle).max() / np.abs(paddle).max()) <= TOLERANCE


def test_picodet_checkpoint_aliases_and_unused_scales_are_dropped(paddle_outputs: Path):
    from oarkit.core.interop import apply_mapping, read_pdparams
    from oarkit.core.registry import create_model, model_info

    state = read_pdparams(paddle_outputs / "picodet_s_320" / "model.pdparams")
    assert "head.head_cls0.weight" in state and "head.p3_feat.scale_reg" in state  # what PaddleDetection saves
    model = create_model("det/picodet_s_320")
    converted = apply_mapping(state, model, model_info("det/picodet_s_320").paddle_mapping)
    np.testing.assert_array_equal(converted["head.head_cls_list.0.weight"].numpy(), state["head.head_cls0.weight"])
