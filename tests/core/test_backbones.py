"""Shared backbones: they build, run forward and backward, describe their outputs truthfully in ``feature_info``,
keep Paddle's module paths, reproduce Paddle's semantics (exclusive average pooling, hardsigmoid slopes) and fold
their re-parameterizable layers without changing their outputs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from torch import nn

from oarkit.core.backbones import (
    STDC1,
    Backbone,
    DetMobileNetV3,
    HRNet,
    MobileNetV3,
    PPLCNet,
    PPLCNetV3,
    RecMobileNetV3,
    ResNet_vd,
    STDCNet,
)
from oarkit.core.backbones.layers import SE_HARDSIGMOID_SLOPE, Hardsigmoid, SEModule, make_divisible
from oarkit.core.backbones.pp_lcnet import LearnableAffineBlock, LearnableRepLayer
from oarkit.core.backbones.stdcnet import CatBottleneck
from oarkit.core.export.prepare import reparameterize

TINY_HRNET = {"stage2_num_channels": (8, 16), "stage3_num_modules": 1, "stage3_num_channels": (8, 16, 32),
              "stage4_num_modules": 1, "stage4_num_channels": (8, 16, 32, 64), "stage1_num_blocks": (1,),
              "stage2_num_blocks": (1, 1), "stage3_num_blocks": (1, 1, 1), "stage4_num_blocks": (1, 1, 1, 1)}

#: id -> (builder, input height and width)
BACKBONES: dict[str, tuple[Callable[[], Backbone], tuple[int, int]]] = {
    "resnet18_vd_os8": (lambda: ResNet_vd(layers=18, output_stride=8), (64, 64)),
    "resnet18_vd_os32_last2": (lambda: ResNet_vd(layers=18, output_stride=32, out_indices=(2, 3)), (64, 64)),
    "stdc1": (lambda: STDC1(), (64, 64)),
    "stdc_add_conv_last": (lambda: STDCNet(base=16, layers=(1, 1, 1), block_num=3, type="add", use_conv_last=True),
                           (64, 64)),
    "hrnet_tiny": (lambda: HRNet(**TINY_HRNET), (64, 64)),
    "mobilenet_v3_large_x0_35": (lambda: MobileNetV3(model_name="large", scale=0.35), (64, 64)),
    "mobilenet_v3_small_x0_5": (lambda: MobileNetV3(model_name="small", scale=0.5, out_indices=(1, 3)), (64, 64)),
    "det_mobilenet_v3_large_x0_5": (lambda: DetMobileNetV3(model_name="large", scale=0.5, disable_se=True), (64, 64)),
    "det_mobilenet_v3_small_x0_35": (lambda: DetMobileNetV3(model_name="small", scale=0.35), (64, 64)),
    "rec_mobilenet_v3_large_x0_5": (lambda: RecMobileNetV3(model_name="large", scale=0.5), (32, 64)),
    "pp_lcnet_x0_25_all": (lambda: PPLCNet(scale=0.25, out_indices=None), (64, 64)),
    "pp_lcnetv3_det_x0_5": (lambda: PPLCNetV3(scale=0.5, det=True, conv_kxk_num=2), (64, 64)),
    "pp_lcnetv3_rec_x0_5": (lambda: PPLCNetV3(scale=0.5, conv_kxk_num=2), (48, 64)),
}


def _strides(stride: int | tuple[int, int]) -> tuple[int, int]:
    return stride if isinstance(stride, tuple) else (stride, stride)


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_backbone_builds_runs_and_describes_its_outputs(name: str) -> None:
    builder, (height, width) = BACKBONES[name]
    torch.manual_seed(0)
    model = builder()
    x = torch.randn(2, 3, height, width)
    feats = model(x)  # training mode
    sum(f.float().mean() for f in feats).backward()
    # as in Paddle, a stride-2 LearnableRepLayer keeps the parameters of the activation it skips
    unused = [n for n, p in model.named_parameters() if p.grad is None
              if not (".act.lab." in n and model.get_submodule(n.split(".act.lab.")[0]).stride == 2)]
    assert not unused, f"no gradient reached {unused}"

    model.eval()
    with torch.no_grad():
        feats = model(x)
    assert isinstance(feats, list) and len(feats) == len(model.feature_info) == len(model.out_channels)
    assert model.out_channels == model.feat_channels == [f.shape[1] for f in feats]
    for feat, info in zip(feats, model.feature_info):
        assert set(info) == {"channels", "stride", "name"}
        assert (height // feat.shape[-2], width // feat.shape[-1]) == _strides(info["stride"]), info
        model.get_submodule(info["name"])  # names a module of the model (Paddle's path)


def test_module_paths_are_paddles() -> None:
    """A few parameter names from each Paddle source, so a converter only renames BatchNorm leaves."""
    expected = {
        ResNet_vd(layers=18): {"conv1_1._conv.weight", "bb_3_1.conv1._batch_norm.running_mean",
                               "bb_1_0.short._conv.weight"},
        STDC1(): {"features.0.conv.weight", "features.2.conv_list.0.bn.running_var", "features.2.avd_layer.0.weight"},
        HRNet(**TINY_HRNET): {"conv_layer1_1._conv.weight", "la1.bb_layer2_1.conv_down._conv.weight",
                              "st4.stage_st4_1.fuse_func.residual_st4_1_layer_1_2._conv.weight",
                              "tr3.transition_tr3_layer_4._batch_norm.weight"},
        MobileNetV3(scale=0.5): {"conv.conv.weight", "blocks.3.mid_se.conv1.weight", "blocks.14.linear_conv.bn.bias",
                                 "last_second_conv.conv.weight"},
        DetMobileNetV3(scale=0.5): {"conv.bn.running_mean", "stage0.0.expand_conv.conv.weight",
                                    "stage1.0.mid_se.conv2.bias", "stage3.3.conv.weight"},
        RecMobileNetV3(scale=0.5): {"conv1.conv.weight", "blocks.10.bottleneck_conv.bn.weight", "conv2.bn.running_var"},
        PPLCNet(scale=0.5): {"conv1.conv.weight", "blocks2.0.dw_conv.conv.weight", "blocks6.0.se.conv1.weight",
                             "blocks5.5.pw_conv.bn.running_mean"},
        PPLCNetV3(scale=0.5, det=True): {"conv1.conv.weight", "blocks2.0.dw_conv.conv_kxk.3.conv.weight",
                                         "blocks2.0.dw_conv.conv_1x1.bn.weight",
                                         "blocks2.0.dw_conv.identity.running_mean",
                                         "blocks2.0.dw_conv.lab.scale", "blocks2.0.pw_conv.act.lab.bias",
                                         "blocks6.0.se.conv2.weight", "layer_list.3.bias"},
    }
    for model, names in expected.items():
        missing = names - set(model.state_dict())
        assert not missing, f"{type(model).__name__} lacks {missing}"


def test_channels_match_paddles_published_heads() -> None:
    # PP-OCRv3 det (DBFPN in_channels), PP-OCRv4 mobile det and rec, PaddleClas PP-LCNet x1.0
    assert DetMobileNetV3(model_name="large", scale=0.5, disable_se=True).out_channels == [16, 24, 56, 480]
    assert PPLCNetV3(scale=0.75, det=True).out_channels == [12, 18, 42, 360]
    assert PPLCNetV3(scale=0.95).out_channels == [480]
    assert PPLCNet(scale=1.0).out_channels == [64, 128, 256, 512]
    assert RecMobileNetV3(model_name="small", scale=0.5).out_channels == [288]


def test_make_divisible_rounds_like_paddle() -> None:
    assert [make_divisible(16 * s) for s in (0.35, 0.5, 0.75, 1.0, 1.25)] == [8, 8, 16, 16, 24]
    assert make_divisible(72 * 0.5) == 40 and make_divisible(960 * 0.35) == 336
    assert make_divisible(512 * 0.95, 16) == 480 and make_divisible(16 * 0.5, 16) == 16


def test_hardsigmoid_slopes_follow_the_paddle_layer() -> None:
    x = torch.linspace(-4, 4, 81)
    assert torch.equal(Hardsigmoid(0.2, 0.5)(x), torch.clamp(0.2 * x + 0.5, 0, 1))
    assert torch.allclose(Hardsigmoid()(x), torch.nn.functional.hardsigmoid(x), atol=1e-6)  # Paddle's 0.1666667
    mv3_slopes = {m.slope for m in MobileNetV3(scale=0.35).modules() if isinstance(m, Hardsigmoid)}
    lcnet_slopes = {m.slope for m in PPLCNet(scale=0.25).modules() if isinstance(m, Hardsigmoid)}
    v3_slopes = {m.slope for m in PPLCNetV3(scale=0.25, conv_kxk_num=1).modules() if isinstance(m, Hardsigmoid)}
    assert mv3_slopes == {SE_HARDSIGMOID_SLOPE} and lcnet_slopes == v3_slopes == {0.1666667}
    se = SEModule(8)
    assert se.hardsigmoid.slope == 0.2 and se.conv1.out_channels == 2


def test_stdc_skip_pool_averages_only_pixels_inside_the_image() -> None:
    """Paddle's AvgPool2D(3, 2, 1) is exclusive: a border window averages its in-image pixels only."""
    block = CatBottleneck(8, 16, block_num=2, stride=2)
    x = torch.randn(1, 8, 9, 7)
    out = block.skip(x)
    assert torch.allclose(out[0, :, 0, 0], x[0, :, :2, :2].mean(dim=(-2, -1)), atol=1e-6)  # corner: 4 pixels
    assert torch.allclose(out[0, :, 0, 1], x[0, :, :2, 1:4].mean(dim=(-2, -1)), atol=1e-6)  # top edge: 6 pixels
    assert torch.allclose(out[0, :, 1, 1], x[0, :, 1:4, 1:4].mean(dim=(-2, -1)), atol=1e-6)  # interior: 9 pixels


@pytest.mark.parametrize("name", sorted(BACKBONES))
def test_padded_average_pools_exclude_the_padding(name: str) -> None:
    pools = [m for m in BACKBONES[name][0]().modules() if isinstance(m, nn.AvgPool2d)]
    assert all(not p.count_include_pad for p in pools if p.padding != 0)


def test_out_indices_are_checked() -> None:
    with pytest.raises(ValueError, match=r"out_indices=\[4\] must be distinct indices in 0..3"):
        ResNet_vd(layers=18, out_indices=(4,))
    with pytest.raises(ValueError, match="det=True only"):
        PPLCNetV3(out_indices=(0,))
    with pytest.raises(ValueError, match="model_name='medium'"):
        MobileNetV3(model_name="medium")


def _perturb(model: nn.Module) -> None:
    """Non-trivial BatchNorm statistics and affine parameters, so every branch shows in the output."""
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.2)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.2)
            elif isinstance(m, LearnableAffineBlock):
                m.scale.copy_(1 + 0.3 * torch.randn(1, generator=g))
                m.bias.copy_(0.3 * torch.randn(1, generator=g))


@pytest.mark.parametrize("det, size", [(True, (64, 64)), (False, (48, 64))])
def test_pp_lcnetv3_reparameterize_keeps_outputs(det: bool, size: tuple[int, int]) -> None:
    torch.manual_seed(0)
    model = PPLCNetV3(scale=0.5, det=det, conv_kxk_num=2).eval()
    _perturb(model)
    x = torch.randn(2, 3, *size)
    with torch.no_grad():
        before = model(x)
        model.reparameterize()
        after = model(x)
    for a, b in zip(after, before):
        assert torch.allclose(a, b, atol=1e-5), float((a - b).abs().max())
    keys = set(model.state_dict())
    assert "blocks2.0.dw_conv.reparam_conv.bias" in keys and not any("conv_kxk" in k or "identity" in k for k in keys)
    model.reparameterize()  # a second call changes nothing
    with torch.no_grad():
        assert torch.equal(model(x)[0], after[0])


@pytest.mark.parametrize("kernel, stride, groups, in_out", [(3, 1, 8, (8, 8)), (5, (2, 1), 8, (8, 8)),
                                                            (3, 2, 1, (4, 6)), (1, 1, 1, (8, 8))])
def test_learnable_rep_layer_folds_every_branch(kernel: int, stride: int | tuple[int, int], groups: int,
                                                in_out: tuple[int, int]) -> None:
    torch.manual_seed(0)
    layer = LearnableRepLayer(*in_out, kernel, stride=stride, groups=groups, num_conv_branches=3).eval()
    _perturb(layer)
    x = torch.randn(2, in_out[0], 11, 10)
    with torch.no_grad():
        before = layer(x)
        assert reparameterize(nn.Sequential(layer)) == 1  # the export hook finds it
        after = layer(x)
    assert layer.is_repped and torch.allclose(after, before, atol=1e-5), float((after - before).abs().max())
