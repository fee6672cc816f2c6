"""Parity with real Paddle for every seg port: PaddleSeg 2.8.0 models on paddlepaddle 3.3.1 (in .venv-paddle),
converted with the family's declared mapping, must give Paddle's logits, auxiliary heads included.

The Paddle side (paddle_side/seg_parity.py) runs once for the module in a subprocess; a missing Paddle
environment fails these tests (``make paddle-env`` builds it), it does not skip them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from oarkit.core.backbones.layers import Conv2d
from oarkit.core.backbones.resnet_vd import ResNet18_vd
from oarkit.core.engine.checkpoint import load_model_dir
from oarkit.core.interop import apply_mapping, convert_paddle, read_pdparams
from oarkit.core.registry import model_info
from oarkit.seg.models.deeplab import DeepLabV3
from oarkit.seg.models.pspnet import PSPNet

TOLERANCE = 1e-5  # max |ours - Paddle's| relative to max |Paddle's|

# Paddle-side family -> the registry model whose card declares the mapping
FAMILIES = {
    "pp_liteseg_stdc1": "seg/pp_liteseg_stdc1",
    "pp_mobileseg_tiny": "seg/pp_mobileseg_tiny",
    "bisenetv1_resnet18_vd": "seg/bisenetv1_resnet18_vd",
    "bisenetv2": "seg/bisenetv2",
    "deeplabv3_resnet18_vd_os8": "seg/deeplabv3_resnet50_vd_os8",
    "deeplabv3p_resnet50_vd_os8": "seg/deeplabv3p_resnet50_vd_os8",
    "fcn_hrnet_w18": "seg/fcn_hrnet_w18",
    "ocrnet_hrnet_w18": "seg/ocrnet_hrnet_w18",
    "pspnet_resnet18_vd_os8": "seg/pspnet_resnet50_vd_os8",
    "unet": "seg/unet",
}
# Families tested on a smaller backbone than the registered variant (ResNet18-vd, the smallest PaddleSeg builds):
# the module is built here and the registered card's mapping applied to it.
SMALLER: dict[str, Callable[[], nn.Module]] = {
    "deeplabv3_resnet18_vd_os8": lambda: DeepLabV3(num_classes=19, aspp_ratios=(1, 12, 24, 36),
                                                   backbone=ResNet18_vd(output_stride=8, multi_grid=(1, 2, 4))),
    "pspnet_resnet18_vd_os8": lambda: PSPNet(num_classes=19, backbone=ResNet18_vd(output_stride=8)),
}


@pytest.fixture(scope="module")
def paddle_outputs(tmp_path_factory: pytest.TempPathFactory, run_paddle_side: Callable[..., None]) -> Path:
    out = tmp_path_factory.mktemp("paddle_seg")
    run_paddle_side("seg_parity.py", out, *FAMILIES)
    return out


def _converted(paddle_outputs: Path, tmp_path: Path, family: str) -> nn.Module:
    pdparams = paddle_outputs / family / "model.pdparams"
    if family in SMALLER:
        model = SMALLER[family]()
        state = apply_mapping(read_pdparams(pdparams), model, model_info(FAMILIES[family]).paddle_mapping)
        model.load_state_dict(state, strict=False)  # apply_mapping checked every name against this module
        return model.eval()
    model, meta = load_model_dir(convert_paddle(pdparams, model=FAMILIES[family], out=tmp_path / "converted"))
    assert meta["task"] == "seg" and meta["converted_from"]["format"] == "pdparams"
    return model.eval()


def _forward(model: nn.Module, x: np.ndarray, *, all_heads: bool = False) -> list[np.ndarray]:
    # The top-level training flag alone asks for every head while every layer stays in eval mode, as the Paddle
    # side does with PaddleSeg's models.
    model.training = all_heads
    try:
        with torch.no_grad():
            return [t.numpy() for t in model(torch.from_numpy(x))]
    finally:
        model.training = False


def _relative_error(ours: np.ndarray, paddle: np.ndarray) -> float:
    assert ours.shape == paddle.shape, f"shape {ours.shape} differs from Paddle's {paddle.shape}"
    return float(np.abs(ours - paddle).max() / np.abs(paddle).max())


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_converted_pdparams_give_paddles_logits(paddle_outputs: Path, tmp_path: Path, family: str):
    folder = paddle_outputs / family
    model = _converted(paddle_outputs, tmp_path, family)
    x, expected = np.load(folder / "input.npy"), np.load(folder / "output.npy")
    ours = _forward(model, x)
    assert len(ours) == 1, "a port's eval forward returns the main logits only"
    error = _relative_error(ours[0], expected)
    print(f"{family}: max abs diff {np.abs(ours[0] - expected).max():.3g}, relative {error:.3g} "
          f"(logit scale {np.abs(expected).max():.3g})")
    assert error <= TOLERANCE
    heads = np.load(folder / "heads.npz")
    paddle_heads = [heads[f"arr_{i}"] for i in range(len(heads.files))]
    if len(paddle_heads) == 1:  # no auxiliary head
        return
    ours_heads = _forward(model, x, all_heads=True)
    assert len(ours_heads) == len(paddle_heads)
    errors = [_relative_error(o, p) for o, p in zip(ours_heads, paddle_heads)]
    print(f"{family}: {len(errors)} head(s), relative errors {', '.join(f'{e:.3g}' for e in errors)}")
    assert max(errors) <= TOLERANCE


def _error(model: nn.Module, folder: Path) -> float:
    return _relative_error(_forward(model, np.load(folder / "input.npy"))[0], np.load(folder / "output.npy"))


@pytest.mark.parametrize("family", ["pp_liteseg_stdc1", "bisenetv2"])
def test_average_pooling_must_exclude_padding(paddle_outputs: Path, tmp_path: Path, family: str):
    # Paddle's AvgPool2D(3, 2, 1) averages over the pixels inside the image (STDC's skip, BiSeNetV2's BGA);
    # counting the zero padding, as nn.AvgPool2d does by default, changes the logits at the borders.
    model = _converted(paddle_outputs, tmp_path, family)
    pools = [m for m in model.modules() if isinstance(m, nn.AvgPool2d) and m.padding]
    assert pools and all(not p.count_include_pad for p in pools)
    assert _error(model, paddle_outputs / family) <= TOLERANCE
    for pool in pools:
        pool.count_include_pad = True
    assert _error(model, paddle_outputs / family) > 100 * TOLERANCE


def test_same_padding_must_be_paddles_asymmetric_one(paddle_outputs: Path, tmp_path: Path):
    # PaddleSeg's ConvBN(ReLU) pads 'same' (BiSeNetV2, HRNet): a stride-2 3x3 convolution on an even size pads one
    # pixel at the bottom and right only; a symmetric padding of 1 shifts every output by half a pixel.
    family = "bisenetv2"
    model = _converted(paddle_outputs, tmp_path, family)
    strided = [m for m in model.modules() if isinstance(m, Conv2d) and m.same_pad]
    assert strided
    for conv in strided:
        conv.same_pad, conv.padding = False, tuple(d * (k - 1) // 2 for d, k in zip(conv.dilation, conv.kernel_size))
    assert _error(model, paddle_outputs / family) > 100 * TOLERANCE


def test_every_paddleseg_card_declares_its_mapping():
    from oarkit.core.interop import PaddleMapping
    from oarkit.core.registry import list_models

    paddle_cards = [n for n in list_models("seg/*") if model_info(n).weights.format == "pdparams"]
    assert set(FAMILIES.values()) <= set(paddle_cards)
    assert [n for n in paddle_cards if not isinstance(model_info(n).paddle_mapping, PaddleMapping)] == []


def test_pp_mobileseg_cards_show_paddlesegs_80k_results():
    # PaddleSeg's configs/pp_mobileseg/README.md: both trained 80k iterations at a total batch of 32
    tiny, base = model_info("seg/pp_mobileseg_tiny"), model_info("seg/pp_mobileseg_base")
    assert tiny.metrics == {"ade20k_miou": 36.39} and base.metrics == {"ade20k_miou": 41.57}
    assert tiny.weights.source.endswith("(pp_mobileseg_tiny_ade20k_512x512_80k)")
    assert base.weights.source.endswith("(pp_mobileseg_base_ade20k_512x512_80k)")


def test_cli_converts_with_another_number_of_classes_for_the_segmenter(paddle_outputs: Path, tmp_path: Path):
    from oarkit.core.cli import main
    from oarkit.core.engine.checkpoint import read_meta
    from oarkit.seg import Segmenter

    pdparams = paddle_outputs / "pp_liteseg_stdc1" / "model.pdparams"
    out = tmp_path / "four_classes"
    assert main(["convert", "paddle", str(pdparams), "--model", "seg/pp_liteseg_stdc1", "--out", str(out),
                 "--num-classes", "4"]) == 0
    model, meta = load_model_dir(out)
    assert [head.conv_out.out_channels for head in model.seg_heads] == [4, 4, 4]
    assert meta["converted_from"]["head_reinitialised"] and len(read_meta(out)["labels"]) == 4
    result = Segmenter(out)(np.zeros((40, 50, 3), np.uint8))  # the kit's predictor takes the directory as it is
    assert result.label_map.shape == (40, 50) and result.label_map.max() < 4
    # Everything but the classifiers is Paddle's: the features before them agree with a full conversion.
    full = _converted(paddle_outputs, tmp_path, "pp_liteseg_stdc1")
    x = torch.from_numpy(np.load(paddle_outputs / "pp_liteseg_stdc1" / "input.npy"))
    with torch.no_grad():
        ours = model.seg_heads[0].conv(model.ppseg_head(model.backbone(x)[2:])[0])
        theirs = full.seg_heads[0].conv(full.ppseg_head(full.backbone(x)[2:])[0])
    torch.testing.assert_close(ours, theirs)


def test_strideformer_se_uses_paddles_hardsigmoid_slope(paddle_outputs: Path, tmp_path: Path):
    # StrideFormer's SE gates with Paddle's Hardsigmoid(slope=0.2, offset=0.5); PyTorch's hardsigmoid is slope 1/6.
    from oarkit.core.backbones.layers import Hardsigmoid

    model = _converted(paddle_outputs, tmp_path, "pp_mobileseg_tiny")
    gates = [m for m in model.modules() if isinstance(m, Hardsigmoid)]
    assert gates and all(g.slope == 0.2 for g in gates)
    for gate in gates:
        gate.slope = 1 / 6
    assert _error(model, paddle_outputs / "pp_mobileseg_tiny") > 100 * TOLERANCE


def test_resizing_by_a_scale_factor_keeps_the_factor(paddle_outputs: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch):
    # PP-MobileSeg's AAM halves the stride-8 feature with scale_factor=0.5: on odd sizes (9x13 -> 4x6) Paddle, like
    # PyTorch by default, samples at the factor's spacing, not at the ratio of the sizes.
    model = _converted(paddle_outputs, tmp_path, "pp_mobileseg_tiny")
    interpolate = torch.nn.functional.interpolate

    def from_sizes(x: torch.Tensor, size=None, scale_factor=None, **kwargs) -> torch.Tensor:
        if scale_factor is None:
            return interpolate(x, size=size, **kwargs)
        return interpolate(x, scale_factor=scale_factor, recompute_scale_factor=True, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "interpolate", from_sizes)
    assert _error(model, paddle_outputs / "pp_mobileseg_tiny") > 100 * TOLERANCE


def test_pretrained_paddle_checkpoint_converts_on_load(paddle_outputs: Path):
    # create_model(pretrained="x.pdparams") converts through the card's mapping in memory (U-Net: Paddle 3 saves its
    # shared classifier twice, as cls and conv, and the mapping keeps one).
    from oarkit.core.registry import create_model

    folder = paddle_outputs / "unet"
    assert {"cls.weight", "conv.weight"} <= set(read_pdparams(folder / "model.pdparams"))
    model = create_model("seg/unet", pretrained=str(folder / "model.pdparams"))
    assert _error(model.eval(), folder) <= TOLERANCE
