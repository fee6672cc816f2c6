"""Backbones only PaddleOCR's recognizers use: MobileNetV1-enhance (PP-OCRv3's SVTR-LCNet) and the recognition
layout of ResNet-vd (CRNN).

- :class:`MobileNetV1Enhance` mirrors ``ppocr/modeling/backbones/rec_mv1_enhance.py``: a stem and 13 depthwise-
  separable blocks (``conv1``, ``block_list.<i>._depthwise_conv`` / ``._se`` / ``._pointwise_conv``, each
  ``_conv`` + ``_batch_norm`` with hardswish), channels ``int(c * scale)``; the strided blocks stride the height
  only (``(2, 1)``). PP-OCRv3 strides the last block ``(1, 2)`` and ends with a 2x2 average pool: a 48 x W line
  becomes 1 x W/8. Its SE gate is Paddle's default hardsigmoid (slope 1/6).
- :class:`RecResNet_vd` mirrors ``ppocr/modeling/backbones/rec_resnet_vd.py``: a stride-1 deep stem
  (``conv1_1..3``), a 3x3 max pool, basic blocks ``bb_<stage>_<block>`` whose first block of stages 2-4 strides
  ``(2, 1)`` (average-pool shortcuts, Paddle's exclusive ``ceil_mode`` pool), and a 2x2 max pool: a 32 x W line
  becomes 1 x W/4.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.base import Backbone, stage
from oarkit.core.backbones.layers import PADDLE_HARDSIGMOID_SLOPE, SEModule, Size2


class ConvBNLayer(nn.Module):
    """PaddleOCR's ``_conv`` + ``_batch_norm`` (+ activation), with the vd average-pool shortcut mode."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: Size2 = 1,
                 padding: int | None = None, groups: int = 1, act: str | None = None, is_vd_mode: bool = False) -> None:
        super().__init__()
        self.is_vd_mode, self.stride = is_vd_mode, stride
        self._conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=1 if is_vd_mode else stride,
                               padding=(kernel_size - 1) // 2 if padding is None else padding, groups=groups,
                               bias=False)
        self._batch_norm = nn.BatchNorm2d(out_channels)
        self.act = {"relu": nn.ReLU(), "hard_swish": nn.Hardswish(), None: nn.Identity()}[act]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.is_vd_mode:
            x = F.avg_pool2d(x, self.stride, self.stride, ceil_mode=True, count_include_pad=False)
        return self.act(self._batch_norm(self._conv(x)))


class DepthwiseSeparable(nn.Module):
    """Depthwise kxk ConvBN-hardswish, optional SE, pointwise ConvBN-hardswish."""

    def __init__(self, in_channels: int, mid: int, out: int, stride: Size2, dw_size: int = 3,
                 use_se: bool = False) -> None:
        super().__init__()
        self.use_se = use_se
        self._depthwise_conv = ConvBNLayer(in_channels, mid, dw_size, stride, padding=dw_size // 2, groups=mid,
                                           act="hard_swish")
        if use_se:
            self._se = SEModule(mid, slope=PADDLE_HARDSIGMOID_SLOPE)
        self._pointwise_conv = ConvBNLayer(mid, out, 1, act="hard_swish")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self._depthwise_conv(x)
        if self.use_se:
            x = self._se(x)
        return self._pointwise_conv(x)


#: per block: depthwise channels, output channels, stride, kernel, SE (at scale 1)
MV1_BLOCKS: list[tuple[int, int, Size2, int, bool]] = [
    (32, 64, 1, 3, False), (64, 128, 1, 3, False), (128, 128, 1, 3, False), (128, 256, (2, 1), 3, False),
    (256, 256, 1, 3, False), (256, 512, (2, 1), 3, False), *[(512, 512, 1, 5, False)] * 5,
    (512, 1024, (2, 1), 5, True), (1024, 1024, 1, 5, True),
]


class MobileNetV1Enhance(Backbone):
    """PaddleOCR's MobileNetV1-enhance (see the module docstring).

    Args:
        scale: width multiplier (PP-OCRv3: 0.5).
        last_conv_stride: stride of the last block (PP-OCRv3: ``(1, 2)``).
        last_pool_type: ``"avg"`` (PP-OCRv3) or ``"max"`` (2x2).
        last_pool_kernel_size: kernel and stride of the final average pool.
        in_channels: channels of the input image.
    """

    def __init__(self, *, scale: float = 0.5, last_conv_stride: Size2 = 1, last_pool_type: str = "max",
                 last_pool_kernel_size: tuple[int, int] = (2, 2), in_channels: int = 3) -> None:
        super().__init__()
        if last_pool_type not in ("avg", "max"):
            raise ValueError(f"MobileNetV1Enhance last_pool_type={last_pool_type!r} must be 'avg' or 'max'")
        self.conv1 = ConvBNLayer(in_channels, int(32 * scale), 3, 2, act="hard_swish")
        blocks, channels = [], int(32 * scale)
        height, width = 2, 2
        for i, (mid, out, s, k, se) in enumerate(MV1_BLOCKS):
            s = last_conv_stride if i == len(MV1_BLOCKS) - 1 else s
            blocks.append(DepthwiseSeparable(channels, int(mid * scale), int(out * scale), s, k, se))
            channels = int(out * scale)
            sh, sw = s if isinstance(s, tuple) else (s, s)
            height, width = height * sh, width * sw
        self.block_list = nn.Sequential(*blocks)
        kernel = tuple(last_pool_kernel_size) if last_pool_type == "avg" else (2, 2)
        self.pool: nn.Module = (nn.AvgPool2d(kernel, kernel, count_include_pad=False) if last_pool_type == "avg"
                                else nn.MaxPool2d(2, 2))
        self._set_stages([stage(channels, (height * kernel[0], width * kernel[1]), "pool")])

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [self.pool(self.block_list(self.conv1(x)))]


class BasicBlock(nn.Module):
    """Two 3x3 ConvBN, a shortcut (``short``: 1x1 ConvBN, average-pooled in vd mode) when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: tuple[int, int], shortcut: bool,
                 if_first: bool) -> None:
        super().__init__()
        self.conv0 = ConvBNLayer(in_channels, out_channels, 3, stride, act="relu")
        self.conv1 = ConvBNLayer(out_channels, out_channels, 3)
        self.shortcut = shortcut
        if not shortcut:
            self.short = ConvBNLayer(in_channels, out_channels, 1, stride, is_vd_mode=not if_first and stride[0] != 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu((x if self.shortcut else self.short(x)) + self.conv1(self.conv0(x)))


class RecResNet_vd(Backbone):
    """ResNet-vd (18 or 34 layers) in PaddleOCR's recognition layout (see the module docstring)."""

    def __init__(self, *, layers: int = 34, in_channels: int = 3) -> None:
        super().__init__()
        depths = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3)}
        if layers not in depths:
            raise ValueError(f"RecResNet_vd layers={layers} must be one of {sorted(depths)} (basic blocks)")
        num_channels, num_filters = (64, 64, 128, 256), (64, 128, 256, 512)
        self.conv1_1 = ConvBNLayer(in_channels, 32, 3, 1, act="relu")
        self.conv1_2 = ConvBNLayer(32, 32, 3, 1, act="relu")
        self.conv1_3 = ConvBNLayer(32, 64, 3, 1, act="relu")
        self.pool2d_max = nn.MaxPool2d(3, 2, 1)
        self.block_names: list[str] = []
        for b, depth in enumerate(depths[layers]):
            for i in range(depth):
                stride = (2, 1) if i == 0 and b != 0 else (1, 1)
                name = f"bb_{b}_{i}"
                self.add_module(name, BasicBlock(num_channels[b] if i == 0 else num_filters[b], num_filters[b],
                                                 stride, shortcut=i != 0, if_first=b == i == 0))
                self.block_names.append(name)
        self.out_pool = nn.MaxPool2d(2, 2)
        self._set_stages([stage(num_filters[-1], (32, 4), "out_pool")])

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.pool2d_max(self.conv1_3(self.conv1_2(self.conv1_1(x))))
        for name in self.block_names:
            x = getattr(self, name)(x)
        return [self.out_pool(x)]
