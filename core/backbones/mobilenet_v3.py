"""MobileNetV3 small and large at any width ``scale``, in the three module layouts of Paddle's kits.

"Searching for MobileNetV3", Howard et al., ICCV 2019, https://arxiv.org/abs/1905.02244. Inverted residual units
(1x1 expand, kxk depthwise, optional squeeze-and-excitation, 1x1 linear projection) with ReLU in the early
units and hardswish later; channels are ``make_divisible(scale * c)`` (multiples of 8, at most 10% below).

One set of blocks, three classes, one per Paddle layout (their module paths are Paddle's):

- :class:`MobileNetV3`: PaddleClas ``ppcls/arch/backbone/legendary_models/mobilenet_v3.py`` ``MobileNetV3`` —
  ``conv`` (stem), ``blocks.<i>`` (units), ``last_second_conv``; e.g. ``blocks.3.mid_se.conv1.weight``.
  PaddleClas' classifier head adds ``last_conv`` (1x1 conv, no bias) and ``fc`` (Linear) at the top level.
- :class:`DetMobileNetV3`: PaddleOCR ``ppocr/modeling/backbones/det_mobilenet_v3.py`` ``MobileNetV3`` (DB text
  detection; PP-OCRv3 det uses large, scale 0.5, ``disable_se=True``) — ``conv`` (stem), ``stage0 .. stage3``
  holding the units, the last one ending with the 1x1 ``conv_last``; e.g. ``stage3.3.conv.weight``.
- :class:`RecMobileNetV3`: PaddleOCR ``ppocr/modeling/backbones/rec_mobilenet_v3.py`` ``MobileNetV3`` (CRNN text
  recognition: strides ``(2, 1)`` keep the width) — ``conv1``, ``blocks.<i>``, ``conv2``, then a 2x2 max pool.

Inside a unit: ``expand_conv``, ``bottleneck_conv``, ``mid_se`` (``conv1``, ``conv2``), ``linear_conv``, each
``ConvBNLayer`` being ``conv`` + ``bn``. A Paddle state dict maps by renaming BatchNorm's ``_mean`` /
``_variance`` to ``running_mean`` / ``running_var`` (and the head's ``fc`` weight is transposed).

Paddle constants: the SE gate is ``clip(0.2 * x + 0.5, 0, 1)`` — PaddleClas' SE builds
``Hardsigmoid(slope=0.2, offset=0.5)`` and PaddleOCR's calls ``F.hardsigmoid(x, slope=0.2, offset=0.5)``
(early PaddleOCR 2.0 code called ``F.hardsigmoid(x)``, whose default slope is 0.1666667; the released weights
were trained with 0.2), unlike PyTorch's ``hardsigmoid`` (slope 1/6). ``hardswish`` is ``x * relu6(x + 3) / 6``
in both frameworks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import nn

from .base import Backbone, FeatureInfo, Stride, stage
from .layers import SE_HARDSIGMOID_SLOPE, ConvBNAct, SEModule, Size2, make_divisible

ModelName = Literal["large", "small"]

#: per unit: kernel, expanded channels, output channels, squeeze-and-excitation, activation, stride
NET_CONFIG: dict[str, list[tuple[int, int, int, bool, str, int]]] = {
    "large": [
        (3, 16, 16, False, "relu", 1), (3, 64, 24, False, "relu", 2), (3, 72, 24, False, "relu", 1),
        (5, 72, 40, True, "relu", 2), (5, 120, 40, True, "relu", 1), (5, 120, 40, True, "relu", 1),
        (3, 240, 80, False, "hardswish", 2), (3, 200, 80, False, "hardswish", 1),
        (3, 184, 80, False, "hardswish", 1), (3, 184, 80, False, "hardswish", 1),
        (3, 480, 112, True, "hardswish", 1), (3, 672, 112, True, "hardswish", 1),
        (5, 672, 160, True, "hardswish", 2), (5, 960, 160, True, "hardswish", 1),
        (5, 960, 160, True, "hardswish", 1),
    ],
    "small": [
        (3, 16, 16, True, "relu", 2), (3, 72, 24, False, "relu", 2), (3, 88, 24, False, "relu", 1),
        (5, 96, 40, True, "hardswish", 2), (5, 240, 40, True, "hardswish", 1), (5, 240, 40, True, "hardswish", 1),
        (5, 120, 48, True, "hardswish", 1), (5, 144, 48, True, "hardswish", 1),
        (5, 288, 96, True, "hardswish", 2), (5, 576, 96, True, "hardswish", 1), (5, 576, 96, True, "hardswish", 1),
    ],
}
#: channels of the last 1x1 convolution before the classifier (PaddleClas ``class_squeeze``)
LAST_SECOND_CONV = {"large": 960, "small": 576}
STEM_CHANNELS = 16


class ResidualUnit(nn.Module):
    """Inverted residual: 1x1 expand, kxk depthwise, optional SE, 1x1 linear; identity shortcut when the stride
    is 1 and the channels match (as in Paddle, a ``(2, 1)`` stride is not 1: no shortcut)."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, kernel_size: int, stride: Size2,
                 use_se: bool, act: str) -> None:
        super().__init__()
        self.if_shortcut = stride == 1 and in_channels == out_channels
        self.if_se = use_se
        self.expand_conv = ConvBNAct(in_channels, mid_channels, 1, act=act)
        self.bottleneck_conv = ConvBNAct(mid_channels, mid_channels, kernel_size, stride=stride, groups=mid_channels,
                                         act=act)
        if use_se:
            self.mid_se = SEModule(mid_channels, slope=SE_HARDSIGMOID_SLOPE)
        self.linear_conv = ConvBNAct(mid_channels, out_channels, 1, act=None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bottleneck_conv(self.expand_conv(x))
        if self.if_se:
            y = self.mid_se(y)
        y = self.linear_conv(y)
        return x + y if self.if_shortcut else y


def _check(model_name: str, scale: float) -> list[tuple[int, int, int, bool, str, int]]:
    if model_name not in NET_CONFIG:
        raise ValueError(f"MobileNetV3 model_name={model_name!r} must be one of {sorted(NET_CONFIG)}")
    if not scale > 0:
        raise ValueError(f"MobileNetV3 scale={scale} must be positive (Paddle ships 0.35, 0.5, 0.75, 1.0, 1.25)")
    return NET_CONFIG[model_name]


def _units(config: Sequence[tuple[int, int, int, bool, str, int]], scale: float, in_channels: int,
           disable_se: bool, strides: Sequence[Size2] | None = None) -> list[ResidualUnit]:
    """The residual units of ``config`` at width ``scale``, starting from ``in_channels``."""
    units = []
    for i, (k, exp, c, se, act, s) in enumerate(config):
        out_channels = make_divisible(scale * c)
        units.append(ResidualUnit(in_channels, make_divisible(scale * exp), out_channels, k,
                                  s if strides is None else strides[i], se and not disable_se, act))
        in_channels = out_channels
    return units


def _stage_ends(config: Sequence[tuple[int, int, int, bool, str, int]]) -> list[int]:
    """Index of the last unit at each stride 4, 8, 16, 32 (the stem strides by 2): PaddleClas' stage patterns
    and PaddleOCR's det stages both end there."""
    ends, stride = {}, 2
    for i, unit in enumerate(config):
        stride *= unit[5]
        if stride >= 4:
            ends[stride] = i
    return [ends[s] for s in sorted(ends)]


class MobileNetV3(Backbone):
    """MobileNetV3 in PaddleClas' layout, returning the stride 4, 8, 16 and 32 features.

    The stride-32 feature is the output of ``last_second_conv`` (960 or 576 channels times ``scale``), the input
    of PaddleClas' classifier head; the others are the outputs of the units PaddleClas' ``stages_pattern`` names.

    Args:
        model_name: ``"large"`` or ``"small"``.
        scale: width multiplier (PaddleClas ships 0.35, 0.5, 0.75, 1.0, 1.25).
        in_channels: channels of the input image.
        disable_se: drop every squeeze-and-excitation module (PaddleOCR's option).
        out_indices: which of the four features to return; all by default.
    """

    def __init__(self, *, model_name: ModelName = "large", scale: float = 1.0, in_channels: int = 3,
                 disable_se: bool = False, out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        config = _check(model_name, scale)
        stem = make_divisible(STEM_CHANNELS * scale)
        self.conv = ConvBNAct(in_channels, stem, 3, stride=2, act="hardswish")
        self.blocks = nn.Sequential(*_units(config, scale, stem, disable_se))
        last = make_divisible(scale * LAST_SECOND_CONV[model_name])
        self.last_second_conv = ConvBNAct(make_divisible(scale * config[-1][2]), last, 1, act="hardswish")
        self.stage_ends = _stage_ends(config)
        stages = [stage(make_divisible(scale * config[e][2]), 4 * 2**i, f"blocks.{e}")
                  for i, e in enumerate(self.stage_ends[:-1])]
        stages.append(stage(last, 32, "last_second_conv"))
        self._set_stages(stages, out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.conv(x)
        feats = []
        for i, block in enumerate(self.blocks):
            x = block(x)
            if i in self.stage_ends[:-1]:
                feats.append(x)
        feats.append(self.last_second_conv(x))
        return self._select(feats)


class DetMobileNetV3(Backbone):
    """MobileNetV3 in PaddleOCR's detection layout: four stages at strides 4, 8, 16, 32.

    Args:
        model_name: ``"large"`` or ``"small"``.
        scale: width multiplier (PaddleOCR accepts 0.35, 0.5, 0.75, 1.0, 1.25).
        in_channels: channels of the input image.
        disable_se: drop every squeeze-and-excitation module (PP-OCRv3's detector does).
        out_indices: which of the four stages to return; all by default.
    """

    def __init__(self, *, model_name: ModelName = "large", scale: float = 0.5, in_channels: int = 3,
                 disable_se: bool = False, out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        config = _check(model_name, scale)
        stem = make_divisible(STEM_CHANNELS * scale)
        self.conv = ConvBNAct(in_channels, stem, 3, stride=2, act="hardswish")
        units = _units(config, scale, stem, disable_se)
        last = make_divisible(scale * LAST_SECOND_CONV[model_name])
        units.append(ConvBNAct(make_divisible(scale * config[-1][2]), last, 1, act="hardswish"))  # conv_last
        stages: list[FeatureInfo] = []
        start = 0
        for i, end in enumerate(_stage_ends(config)):
            stop = len(units) if i == 3 else end + 1
            self.add_module(f"stage{i}", nn.Sequential(*units[start:stop]))
            stages.append(stage(last if i == 3 else make_divisible(scale * config[end][2]), 4 * 2**i, f"stage{i}"))
            start = stop
        self._set_stages(stages, out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.conv(x)
        feats = []
        for i in range(4):
            x = getattr(self, f"stage{i}")(x)
            feats.append(x)
        return self._select(feats)


class RecMobileNetV3(Backbone):
    """MobileNetV3 in PaddleOCR's recognition layout: one feature, strided mostly along the height.

    The units PaddleOCR strides get ``(stride, 1)`` strides (the first large unit an integer stride): the large
    model with its default strides turns a 32 x W crop into a 1 x W/4 feature (stride ``(32, 4)``) after the
    final 2x2 max pool.

    Args:
        model_name: ``"large"`` or ``"small"``.
        scale: width multiplier (PaddleOCR accepts 0.35, 0.5, 0.75, 1.0, 1.25).
        in_channels: channels of the input image.
        large_stride: the four height strides of the large model (PaddleOCR's default ``(1, 2, 2, 2)``).
        small_stride: the four height strides of the small model (PaddleOCR's default ``(2, 2, 2, 2)``).
        disable_se: drop every squeeze-and-excitation module.
    """

    def __init__(self, *, model_name: ModelName = "small", scale: float = 0.5, in_channels: int = 3,
                 large_stride: Sequence[int] = (1, 2, 2, 2), small_stride: Sequence[int] = (2, 2, 2, 2),
                 disable_se: bool = False) -> None:
        super().__init__()
        config = _check(model_name, scale)
        given = tuple(large_stride if model_name == "large" else small_stride)
        if len(given) != 4:
            raise ValueError(f"RecMobileNetV3 {model_name}_stride={list(given)} must have 4 entries")
        # the units PaddleOCR strides, and whether that stride is a (height, 1) pair or a plain integer
        strided = {"large": {0: False, 1: True, 3: True, 12: True}, "small": {0: True, 1: True, 3: True, 8: True}}
        strides: list[Size2] = [1] * len(config)
        for (unit, pair), s in zip(strided[model_name].items(), given):
            strides[unit] = (s, 1) if pair else s
        stem = make_divisible(STEM_CHANNELS * scale)
        self.conv1 = ConvBNAct(in_channels, stem, 3, stride=2, act="hardswish")
        self.blocks = nn.Sequential(*_units(config, scale, stem, disable_se, strides))
        last = make_divisible(scale * LAST_SECOND_CONV[model_name])
        self.conv2 = ConvBNAct(make_divisible(scale * config[-1][2]), last, 1, act="hardswish")
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2, padding=0)
        height, width = 4, 4  # the stem's 2 and the pool's 2
        for s in strides:
            height *= s[0] if isinstance(s, tuple) else s
            width *= 1 if isinstance(s, tuple) else s
        out_stride: Stride = height if height == width else (height, width)
        self._set_stages([stage(last, out_stride, "pool")])

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [self.pool(self.conv2(self.blocks(self.conv1(x))))]


def MobileNetV3_large_x1_0(**kwargs) -> MobileNetV3:
    """PaddleClas' MobileNetV3_large_x1_0 backbone."""
    return MobileNetV3(model_name="large", scale=1.0, **kwargs)


def MobileNetV3_small_x1_0(**kwargs) -> MobileNetV3:
    """PaddleClas' MobileNetV3_small_x1_0 backbone."""
    return MobileNetV3(model_name="small", scale=1.0, **kwargs)
