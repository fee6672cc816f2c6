"""PP-LCNet and PP-LCNetV3, native modules with Paddle's module paths.

"PP-LCNet: A Lightweight CPU Convolutional Neural Network", Cui et al., 2021, https://arxiv.org/abs/2109.15099:
a 3x3 stem and five stages (``blocks2 .. blocks6``) of depthwise-separable blocks, hardswish throughout, 5x5
kernels and squeeze-and-excitation only at the end.

:class:`PPLCNet` mirrors PaddleClas ``ppcls/arch/backbone/legendary_models/pp_lcnet.py`` ``PPLCNetBaseNet`` (the
same paths as PaddleOCR's ``det_pp_lcnet.py`` ``PPLCNet`` and PaddleDetection's ``lcnet.py`` ``LCNet``):
``conv1``, ``blocks<n>.<i>.dw_conv`` / ``.se`` / ``.pw_conv``, each ``ConvBNLayer`` being ``conv`` + ``bn``; e.g.
``blocks6.0.se.conv1.weight``, ``blocks5.2.pw_conv.bn._mean`` -> ``running_mean``. PaddleClas' classifier head
adds ``last_conv`` (1x1, no bias) and ``fc`` (Linear, transposed) at the top level.

:class:`PPLCNetV3` mirrors PaddleOCR ``ppocr/modeling/backbones/rec_lcnetv3.py`` ``PPLCNetV3`` (PP-OCRv4's mobile
detector with ``det=True``, its recognizer without): every convolution of a block is a
:class:`LearnableRepLayer` (``conv_kxk.<b>`` branches, a ``conv_1x1`` branch, an ``identity`` BatchNorm, each
``ConvBNLayer`` being ``conv`` + ``bn``), scaled and shifted by a :class:`LearnableAffineBlock` (``lab.scale``,
``lab.bias``, shape ``[1]``) before its activation (``act.act`` + ``act.lab``). The detector adds 1x1
convolutions ``layer_list.0 .. 3`` on its four outputs. :meth:`PPLCNetV3.reparameterize` folds the branches of
every layer into one ``reparam_conv`` (Paddle's ``rep()`` and its name, so a re-parameterized Paddle export maps
too). Paddle trains the LearnableAffineBlock parameters at ``lab_lr`` = 0.1 times the learning rate: a task that
wants the same gives parameters named ``*.lab.scale`` / ``*.lab.bias`` their own group.

Paddle constants: both SE modules use ``paddle.nn.Hardsigmoid()``, slope 0.1666667 (not MobileNetV3's 0.2);
PP-LCNetV3 rounds channels to multiples of 16 (PP-LCNet to 8); its stem has no activation; a stride-2
LearnableRepLayer skips its activation while a ``(2, 1)`` stride does not (Paddle compares the stride with 2).
The recognizer ends with ``avg_pool2d(kernel (3, 2))`` in eval mode and ``adaptive_avg_pool2d((1, 40))`` in
training, as PaddleOCR does (equal for 48 x 320 inputs).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .base import Backbone, FeatureInfo, stage
from .layers import PADDLE_HARDSIGMOID_SLOPE, ConvBNAct, SEModule, Size2, fuse_conv_bn, make_act, make_divisible

#: per block: kernel, input channels, output channels, stride, squeeze-and-excitation (at scale 1)
BlockConfig = tuple[int, int, int, Size2, bool]
STAGES = ("blocks2", "blocks3", "blocks4", "blocks5", "blocks6")

NET_CONFIG: dict[str, list[BlockConfig]] = {
    "blocks2": [(3, 16, 32, 1, False)],
    "blocks3": [(3, 32, 64, 2, False), (3, 64, 64, 1, False)],
    "blocks4": [(3, 64, 128, 2, False), (3, 128, 128, 1, False)],
    "blocks5": [(3, 128, 256, 2, False)] + [(5, 256, 256, 1, False)] * 5,
    "blocks6": [(5, 256, 512, 2, True), (5, 512, 512, 1, True)],
}
NET_CONFIG_V3_DET: dict[str, list[BlockConfig]] = {
    "blocks2": [(3, 16, 32, 1, False)],
    "blocks3": [(3, 32, 64, 2, False), (3, 64, 64, 1, False)],
    "blocks4": [(3, 64, 128, 2, False), (3, 128, 128, 1, False)],
    "blocks5": [(3, 128, 256, 2, False)] + [(5, 256, 256, 1, False)] * 4,
    "blocks6": [(5, 256, 512, 2, True), (5, 512, 512, 1, True), (5, 512, 512, 1, False), (5, 512, 512, 1, False)],
}
NET_CONFIG_V3_REC: dict[str, list[BlockConfig]] = {
    "blocks2": [(3, 16, 32, 1, False)],
    "blocks3": [(3, 32, 64, 1, False), (3, 64, 64, 1, False)],
    "blocks4": [(3, 64, 128, (2, 1), False), (3, 128, 128, 1, False)],
    "blocks5": [(3, 128, 256, (1, 2), False)] + [(5, 256, 256, 1, False)] * 4,
    "blocks6": [(5, 256, 512, (2, 1), True), (5, 512, 512, 1, True), (5, 512, 512, (2, 1), False),
                (5, 512, 512, 1, False)],
}
#: output channels of PPLCNetV3's detection 1x1 convolutions (times ``scale``)
V3_DET_CHANNELS = (16, 24, 56, 480)


def _strides(config: dict[str, list[BlockConfig]]) -> list[tuple[int, int]]:
    """The (height, width) stride after each stage, the stem's 2 included."""
    height = width = 2
    out = []
    for name in STAGES:
        for block in config[name]:
            s = block[3]
            height, width = (height * s[0], width * s[1]) if isinstance(s, tuple) else (height * s, width * s)
        out.append((height, width))
    return out


def _stride(hw: tuple[int, int]) -> int | tuple[int, int]:
    return hw[0] if hw[0] == hw[1] else hw


# --------------------------------------------------------------------------------------------------- PP-LCNet
class DepthwiseSeparable(nn.Module):
    """Depthwise kxk ConvBNLayer, optional SE, pointwise 1x1 ConvBNLayer, both with the activation."""

    def __init__(self, in_channels: int, out_channels: int, stride: Size2, dw_size: int, use_se: bool,
                 act: str) -> None:
        super().__init__()
        self.use_se = use_se
        self.dw_conv = ConvBNAct(in_channels, in_channels, dw_size, stride=stride, groups=in_channels, act=act)
        if use_se:
            self.se = SEModule(in_channels, slope=PADDLE_HARDSIGMOID_SLOPE)
        self.pw_conv = ConvBNAct(in_channels, out_channels, 1, act=act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dw_conv(x)
        if self.use_se:
            x = self.se(x)
        return self.pw_conv(x)


class PPLCNet(Backbone):
    """PP-LCNet returning the features of ``blocks3 .. blocks6`` (strides 4, 8, 16, 32) by default.

    Args:
        scale: width multiplier (PaddleClas ships 0.25, 0.35, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5).
        in_channels: channels of the input image.
        act: activation of every block (PaddleDetection's ``act``).
        out_indices: which of the five stages ``blocks2 .. blocks6`` (strides 2..32) to return; ``(1, 2, 3, 4)``
            by default, the four PaddleOCR and PaddleDetection use.
    """

    def __init__(self, *, scale: float = 1.0, in_channels: int = 3, act: str = "hardswish",
                 out_indices: Sequence[int] | None = (1, 2, 3, 4)) -> None:
        super().__init__()
        if not scale > 0:
            raise ValueError(f"PPLCNet scale={scale} must be positive (PaddleClas ships 0.25 .. 2.5)")
        make_act(act)  # fail early on an unknown name
        self.scale = scale
        self.conv1 = ConvBNAct(in_channels, make_divisible(16 * scale), 3, stride=2, act=act)
        for name in STAGES:
            self.add_module(name, nn.Sequential(*[
                DepthwiseSeparable(make_divisible(in_c * scale), make_divisible(out_c * scale), s, k, se, act)
                for k, in_c, out_c, s, se in NET_CONFIG[name]]))
        stages = [stage(make_divisible(NET_CONFIG[name][-1][2] * scale), _stride(hw), name)
                  for name, hw in zip(STAGES, _strides(NET_CONFIG))]
        self._set_stages(stages, out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.conv1(x)
        feats = []
        for name in STAGES:
            x = getattr(self, name)(x)
            feats.append(x)
        return self._select(feats)


def PPLCNet_x0_25(**kwargs) -> PPLCNet:
    return PPLCNet(scale=0.25, **kwargs)


def PPLCNet_x0_35(**kwargs) -> PPLCNet:
    return PPLCNet(scale=0.35, **kwargs)


def PPLCNet_x0_5(**kwargs) -> PPLCNet:
    return PPLCNet(scale=0.5, **kwargs)


def PPLCNet_x0_75(**kwargs) -> PPLCNet:
    return PPLCNet(scale=0.75, **kwargs)


def PPLCNet_x1_0(**kwargs) -> PPLCNet:
    return PPLCNet(scale=1.0, **kwargs)


def PPLCNet_x1_5(**kwargs) -> PPLCNet:
    return PPLCNet(scale=1.5, **kwargs)


def PPLCNet_x2_0(**kwargs) -> PPLCNet:
    return PPLCNet(scale=2.0, **kwargs)


def PPLCNet_x2_5(**kwargs) -> PPLCNet:
    return PPLCNet(scale=2.5, **kwargs)


# ------------------------------------------------------------------------------------------------- PP-LCNetV3
class LearnableAffineBlock(nn.Module):
    """``scale * x + bias`` with a learnable scalar scale (1) and bias (0)."""

    def __init__(self, scale_value: float = 1.0, bias_value: float = 0.0) -> None:
        super().__init__()
        self.scale = nn.Parameter(torch.full((1,), scale_value))
        self.bias = nn.Parameter(torch.full((1,), bias_value))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.scale * x + self.bias


class Act(nn.Module):
    """An activation followed by a :class:`LearnableAffineBlock` (PaddleOCR's ``Act``)."""

    def __init__(self, act: str = "hswish") -> None:
        super().__init__()
        if act not in ("hswish", "relu"):
            raise ValueError(f"PPLCNetV3 Act act={act!r} must be 'hswish' or 'relu'")
        self.act = make_act(act)
        self.lab = LearnableAffineBlock()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lab(self.act(x))


class LearnableRepLayer(nn.Module):
    """Sum of ``num_conv_branches`` kxk ConvBN branches, a 1x1 ConvBN branch (when k > 1) and a BatchNorm
    identity (when shape-preserving), then a LearnableAffineBlock and, unless the stride is 2, an :class:`Act`.

    :meth:`reparameterize` replaces the branches by one convolution ``reparam_conv`` with a bias.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: Size2 = 1, groups: int = 1,
                 num_conv_branches: int = 1) -> None:
        super().__init__()
        self.is_repped = False
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.groups = kernel_size, stride, groups
        self.padding = (kernel_size - 1) // 2
        self.identity = nn.BatchNorm2d(in_channels) if out_channels == in_channels and stride == 1 else None
        self.conv_kxk = nn.ModuleList([ConvBNAct(in_channels, out_channels, kernel_size, stride=stride, groups=groups,
                                                 act=None) for _ in range(num_conv_branches)])
        self.conv_1x1 = (ConvBNAct(in_channels, out_channels, 1, stride=stride, groups=groups, act=None)
                         if kernel_size > 1 else None)
        self.lab = LearnableAffineBlock()
        self.act = Act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.is_repped:
            out = self.reparam_conv(x)
        else:  # Paddle's summation order: identity, 1x1, kxk branches
            out = self.identity(x) if self.identity is not None else 0
            if self.conv_1x1 is not None:
                out = out + self.conv_1x1(x)
            for conv in self.conv_kxk:
                out = out + conv(x)
        out = self.lab(out)
        # Paddle compares the raw stride with 2: a (2, 1) stride keeps the activation
        return out if self.stride == 2 else self.act(out)

    @torch.no_grad()
    def reparameterize(self) -> None:
        """Fold every branch into ``reparam_conv`` (eval-mode outputs are unchanged); a second call does nothing."""
        if self.is_repped:
            return
        kernel, bias = self._fused_kernel_bias()
        ref = self.conv_kxk[0].conv  # its sizes, not the block's own: they hold after channel pruning too
        conv = nn.Conv2d(ref.in_channels, ref.out_channels, self.kernel_size, stride=self.stride,
                         padding=self.padding, groups=ref.groups, bias=True).to(kernel)
        conv.weight.copy_(kernel)
        conv.bias.copy_(bias)
        self.reparam_conv = conv
        del self.conv_kxk, self.conv_1x1, self.identity
        self.is_repped = True

    def _fused_kernel_bias(self) -> tuple[torch.Tensor, torch.Tensor]:
        ref = self.conv_kxk[0].conv
        kernel = torch.zeros_like(ref.weight)
        bias = torch.zeros(ref.out_channels, dtype=kernel.dtype, device=kernel.device)
        for branch in self.conv_kxk:
            k, b = fuse_conv_bn(branch.conv.weight, branch.bn)
            kernel, bias = kernel + k, bias + b
        center = self.kernel_size // 2
        if self.conv_1x1 is not None:
            k, b = fuse_conv_bn(self.conv_1x1.conv.weight, self.conv_1x1.bn)
            kernel, bias = kernel + F.pad(k, [center] * 4), bias + b
        if self.identity is not None:
            per_group = ref.in_channels // ref.groups
            eye = torch.zeros_like(kernel)
            index = torch.arange(ref.in_channels, device=kernel.device)
            eye[index, index % per_group, center, center] = 1
            k, b = fuse_conv_bn(eye, self.identity)
            kernel, bias = kernel + k, bias + b
        return kernel, bias


class LCNetV3Block(nn.Module):
    """Depthwise LearnableRepLayer, optional SE, pointwise LearnableRepLayer."""

    def __init__(self, in_channels: int, out_channels: int, stride: Size2, dw_size: int, use_se: bool = False,
                 conv_kxk_num: int = 4) -> None:
        super().__init__()
        self.use_se = use_se
        self.dw_conv = LearnableRepLayer(in_channels, in_channels, dw_size, stride=stride, groups=in_channels,
                                         num_conv_branches=conv_kxk_num)
        if use_se:
            self.se = SEModule(in_channels, slope=PADDLE_HARDSIGMOID_SLOPE)
        self.pw_conv = LearnableRepLayer(in_channels, out_channels, 1, stride=1, num_conv_branches=conv_kxk_num)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dw_conv(x)
        if self.use_se:
            x = self.se(x)
        return self.pw_conv(x)


class PPLCNetV3(Backbone):
    """PP-LCNetV3 (PaddleOCR), as a text detector's four-feature backbone or a text recognizer's encoder.

    With ``det=True`` it returns four features at strides 4, 8, 16, 32, each through a 1x1 convolution of
    ``layer_list`` to ``int(c * scale)`` channels, c in (16, 24, 56, 480). Otherwise it returns one feature of
    ``make_divisible(512 * scale, 16)`` channels pooled to height 1: a 48 x W crop becomes 1 x W/8 in eval mode
    (stride ``(48, 8)``; Paddle's eval pooling assumes height 48) and 1 x 40 in training.

    Args:
        scale: width multiplier (PP-OCRv4: 0.75 for the mobile detector, 0.95 for the mobile recognizer).
        conv_kxk_num: kxk branches of each LearnableRepLayer before re-parameterization.
        det: the detection layout (PaddleOCR's ``det``) instead of the recognition one.
        in_channels: channels of the input image.
        out_indices: with ``det=True``, which of the four features to return; all by default.
    """

    def __init__(self, *, scale: float = 1.0, conv_kxk_num: int = 4, det: bool = False, in_channels: int = 3,
                 out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        if not scale > 0:
            raise ValueError(f"PPLCNetV3 scale={scale} must be positive")
        if not det and out_indices is not None:
            raise ValueError("PPLCNetV3 out_indices applies to det=True only: the recognizer returns one feature")
        self.scale, self.det = scale, det
        config = NET_CONFIG_V3_DET if det else NET_CONFIG_V3_REC

        def width(c: float) -> int:
            return make_divisible(c * scale, 16)

        self.conv1 = ConvBNAct(in_channels, width(16), 3, stride=2, act=None)
        for name in STAGES:
            self.add_module(name, nn.Sequential(*[LCNetV3Block(width(in_c), width(out_c), s, k, se, conv_kxk_num)
                                                  for k, in_c, out_c, s, se in config[name]]))
        strides = _strides(config)
        stages: list[FeatureInfo]
        if det:
            ends = [width(config[name][-1][2]) for name in STAGES[1:]]
            self.layer_list = nn.ModuleList([nn.Conv2d(c, int(m * scale), 1) for c, m in zip(ends, V3_DET_CHANNELS)])
            stages = [stage(int(m * scale), _stride(hw), f"layer_list.{i}")
                      for i, (m, hw) in enumerate(zip(V3_DET_CHANNELS, strides[1:]))]
        else:
            height, width_stride = strides[-1]
            stages = [stage(width(512), (height * 3, width_stride * 2), "blocks6")]
        self._set_stages(stages, out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.blocks2(self.conv1(x))
        feats = []
        for name in STAGES[1:]:
            x = getattr(self, name)(x)
            feats.append(x)
        if self.det:
            return self._select([conv(f) for conv, f in zip(self.layer_list, feats)])
        if self.training:
            return [F.adaptive_avg_pool2d(x, (1, 40))]
        return [F.avg_pool2d(x, (3, 2))]

    def reparameterize(self) -> None:
        """Fold every LearnableRepLayer into one convolution (Paddle's ``rep()``), for inference and export."""
        for module in list(self.modules()):
            if isinstance(module, LearnableRepLayer):
                module.reparameterize()
