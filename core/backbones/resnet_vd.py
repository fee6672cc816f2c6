"""ResNet-vd with optional dilation: PaddleSeg's ``paddleseg/models/backbones/resnet_vd.py`` ``ResNet_vd``, which
has the module layout of PaddleOCR's ``ppocr/modeling/backbones/det_resnet_vd.py`` ``ResNet_vd`` too.

"Bag of Tricks for Image Classification with Convolutional Neural Networks", He et al., 2019,
https://arxiv.org/abs/1812.01187 (the "D" tweaks: a deep 3x3 stem, average-pool shortcuts). For segmentation the
last stages trade stride for dilation: output stride 8 dilates stages 3 and 4 by 2 and 4, output stride 16
dilates stage 4 by 2; ``multi_grid`` further scales the dilations inside stage 4. Output stride 32 is the plain
network that PaddleOCR's DB detector uses.

Module paths (Paddle's): ``conv1_1``, ``conv1_2``, ``conv1_3`` (the deep stem), ``bb_<stage>_<block>`` for the
residual blocks, inside them ``conv0``, ``conv1``, ``conv2`` and ``short``, each a ``ConvBNLayer`` of ``_conv`` and
``_batch_norm`` (e.g. ``bb_3_1.conv1._conv.weight``, ``conv1_1._batch_norm._mean`` -> ``running_mean``).
``oarkit.clas``'s ResNet-vd is timm's layout of the same network, with other names.
PaddleSeg's ImageNet weights: https://bj.bcebos.com/paddleseg/dygraph/resnet50_vd_ssld_v2.tar.gz (and 18, 101).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .base import Backbone, FeatureInfo, stage

DEPTHS = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3),
          200: (3, 12, 48, 3)}


class ConvBNLayer(nn.Module):
    """Optional 2x2 average pool (``is_vd_mode``), convolution without bias, batch norm, optional ReLU."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1, dilation: int = 1,
                 groups: int = 1, is_vd_mode: bool = False, act: str | None = None) -> None:
        super().__init__()
        if dilation != 1 and kernel_size != 3:
            raise ValueError("a dilated ConvBNLayer must have kernel_size 3")
        self.is_vd_mode = is_vd_mode
        # Paddle's AvgPool2D is exclusive; with ceil_mode the last window of an odd size is cut by the border.
        self._pool2d_avg = nn.AvgPool2d(kernel_size=2, stride=2, padding=0, ceil_mode=True, count_include_pad=False)
        self._conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                               padding=(kernel_size - 1) // 2 if dilation == 1 else dilation, dilation=dilation,
                               groups=groups, bias=False)
        self._batch_norm = nn.BatchNorm2d(out_channels)
        self._act_op = nn.ReLU() if act == "relu" else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.is_vd_mode:
            x = self._pool2d_avg(x)
        return self._act_op(self._batch_norm(self._conv(x)))


class BottleneckBlock(nn.Module):
    """1x1, 3x3 (strided or dilated), 1x1 x4, with a projection shortcut in the first block of a stage."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, shortcut: bool = True,
                 if_first: bool = False, dilation: int = 1) -> None:
        super().__init__()
        self.conv0 = ConvBNLayer(in_channels, out_channels, 1, act="relu")
        self.conv1 = ConvBNLayer(out_channels, out_channels, 3, stride=stride, act="relu", dilation=dilation)
        self.conv2 = ConvBNLayer(out_channels, out_channels * 4, 1)
        if not shortcut:
            self.short = ConvBNLayer(in_channels, out_channels * 4, 1, stride=1,
                                     is_vd_mode=not (if_first or stride == 1))
        self.shortcut = shortcut
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.conv1(self.conv0(x)))
        return self.relu(y + (x if self.shortcut else self.short(x)))


class BasicBlock(nn.Module):
    """3x3, 3x3, with a projection shortcut in the first block of a stage (ResNet-18/34)."""

    def __init__(self, in_channels: int, out_channels: int, stride: int, dilation: int = 1, shortcut: bool = True,
                 if_first: bool = False) -> None:
        super().__init__()
        self.conv0 = ConvBNLayer(in_channels, out_channels, 3, stride=stride, dilation=dilation, act="relu")
        self.conv1 = ConvBNLayer(out_channels, out_channels, 3, dilation=dilation)
        if not shortcut:
            self.short = ConvBNLayer(in_channels, out_channels, 1, stride=1, is_vd_mode=not (if_first or stride == 1))
        self.shortcut = shortcut
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv1(self.conv0(x))
        return self.relu(y + (x if self.shortcut else self.short(x)))


class ResNet_vd(Backbone):
    """ResNet-vd returning the four stage outputs (strides 4, 8, 16, 32, or less with dilation).

    Args:
        layers: depth, one of 18, 34, 50, 101, 152, 200.
        output_stride: 8, 16 or 32 (no dilation).
        multi_grid: dilation multipliers of the blocks of stage 4.
        in_channels: channels of the input image.
        out_indices: which of the four stages to return (PaddleOCR's ``out_indices``); all by default.
    """

    def __init__(self, *, layers: int = 50, output_stride: int = 8, multi_grid: Sequence[int] = (1, 1, 1),
                 in_channels: int = 3, out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        if layers not in DEPTHS:
            raise ValueError(f"ResNet_vd layers={layers} is not one of {sorted(DEPTHS)}")
        if output_stride not in (8, 16, 32):
            raise ValueError(f"output_stride={output_stride} must be 8, 16 or 32")
        depth = DEPTHS[layers]
        bottleneck = layers >= 50
        num_channels = (64, 256, 512, 1024) if bottleneck else (64, 64, 128, 256)
        num_filters = (64, 128, 256, 512)
        dilations = {8: {2: 2, 3: 4}, 16: {3: 2}, 32: {}}[output_stride]
        self.conv1_1 = ConvBNLayer(in_channels, 32, 3, stride=2, act="relu")
        self.conv1_2 = ConvBNLayer(32, 32, 3, stride=1, act="relu")
        self.conv1_3 = ConvBNLayer(32, 64, 3, stride=1, act="relu")
        self.pool2d_max = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.stage_names: list[list[str]] = []
        stages: list[FeatureInfo] = []
        stride_so_far = 4
        for stage_idx, blocks in enumerate(depth):
            names = []
            for i in range(blocks):
                dilation = dilations.get(stage_idx, 1) * (multi_grid[i] if stage_idx == 3 else 1)
                stride = 2 if i == 0 and stage_idx != 0 and dilation == 1 else 1
                stride_so_far *= stride
                if bottleneck:
                    block: nn.Module = BottleneckBlock(
                        num_channels[stage_idx] if i == 0 else num_filters[stage_idx] * 4, num_filters[stage_idx],
                        stride, shortcut=i != 0, if_first=stage_idx == i == 0, dilation=dilation)
                else:
                    block = BasicBlock(num_channels[stage_idx] if i == 0 else num_filters[stage_idx],
                                       num_filters[stage_idx], stride, dilation=dilation, shortcut=i != 0,
                                       if_first=stage_idx == i == 0)
                self.add_module(f"bb_{stage_idx}_{i}", block)
                names.append(f"bb_{stage_idx}_{i}")
            self.stage_names.append(names)
            channels = num_filters[stage_idx] * 4 if bottleneck else num_filters[stage_idx]
            stages.append(stage(channels, stride_so_far, names[-1]))
        self._set_stages(stages, out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        y = self.pool2d_max(self.conv1_3(self.conv1_2(self.conv1_1(x))))
        feats = []
        for names in self.stage_names:
            for name in names:
                y = getattr(self, name)(y)
            feats.append(y)
        return self._select(feats)


def ResNet18_vd(**kwargs) -> ResNet_vd:
    """ResNet18-vd (basic blocks 2, 2, 2, 2)."""
    return ResNet_vd(layers=18, **kwargs)


def ResNet34_vd(**kwargs) -> ResNet_vd:
    """ResNet34-vd (basic blocks 3, 4, 6, 3)."""
    return ResNet_vd(layers=34, **kwargs)


def ResNet50_vd(**kwargs) -> ResNet_vd:
    """ResNet50-vd (bottlenecks 3, 4, 6, 3)."""
    return ResNet_vd(layers=50, **kwargs)


def ResNet101_vd(**kwargs) -> ResNet_vd:
    """ResNet101-vd (bottlenecks 3, 4, 23, 3)."""
    return ResNet_vd(layers=101, **kwargs)
