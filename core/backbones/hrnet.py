"""HRNet: PaddleSeg's ``paddleseg/models/backbones/hrnet.py`` ``HRNet`` (the backbone of FCN and OCRNet).

"Deep High-Resolution Representation Learning for Visual Recognition", Wang et al., TPAMI 2020,
https://arxiv.org/abs/1908.07919. Four stages keep parallel branches at strides 4, 8, 16, 32 that exchange
information at the end of every module; the output concatenates all four upsampled to stride 4.
PaddleSeg's ImageNet weights: https://bj.bcebos.com/paddleseg/dygraph/hrnet_w18_ssld.tar.gz (and w48).

Module paths (PaddleSeg's): ``conv_layer1_1``, ``conv_layer1_2`` (stem), ``la1`` (stage 1, blocks
``bb_layer2_<i>``), ``tr1 .. tr3`` (transitions, ``transition_tr1_layer_<i>``), ``st2 .. st4`` (stages of
``stage_st2_<m>`` modules holding ``branches_func`` and ``fuse_func``, with ``bb_st2_1_branch_layer_<i>_<j>`` and
``residual_st2_1_layer_<i>_<j>[_<k>]``); convolution blocks are PaddleSeg's ``ConvBN(ReLU)`` (``_conv``,
``_batch_norm``), e.g. ``st4.stage_st4_3.fuse_func.residual_st4_3_layer_1_2._conv.weight``. The SE layers'
``squeeze`` and ``excitation`` are Linear layers: transpose their Paddle weights. PaddleClas' and
PaddleDetection's HRNets use other names.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .base import Backbone, stage
from .layers import ConvBN, ConvBNReLU, resize


class SELayer(nn.Module):
    def __init__(self, num_channels: int, num_filters: int, reduction_ratio: int) -> None:
        super().__init__()
        self.pool2d_gap = nn.AdaptiveAvgPool2d(1)
        med = int(num_channels / reduction_ratio)
        self.squeeze = nn.Linear(num_channels, med)
        self.excitation = nn.Linear(med, num_filters)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.sigmoid(self.excitation(F.relu(self.squeeze(self.pool2d_gap(x).flatten(1)))))
        return x * w[:, :, None, None]


class BottleneckBlock(nn.Module):
    def __init__(self, num_channels: int, num_filters: int, has_se: bool, stride: int = 1,
                 downsample: bool = False) -> None:
        super().__init__()
        self.has_se, self.downsample = has_se, downsample
        self.conv1 = ConvBNReLU(num_channels, num_filters, 1, bias=False)
        self.conv2 = ConvBNReLU(num_filters, num_filters, 3, stride=stride, bias=False)
        self.conv3 = ConvBN(num_filters, num_filters * 4, 1, bias=False)
        if downsample:
            self.conv_down = ConvBN(num_channels, num_filters * 4, 1, bias=False)
        if has_se:
            self.se = SELayer(num_filters * 4, num_filters * 4, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv3(self.conv2(self.conv1(x)))
        if self.has_se:
            y = self.se(y)
        return F.relu(y + (self.conv_down(x) if self.downsample else x))


class BasicBlock(nn.Module):
    def __init__(self, num_channels: int, num_filters: int, stride: int = 1, has_se: bool = False,
                 downsample: bool = False) -> None:
        super().__init__()
        self.has_se, self.downsample = has_se, downsample
        self.conv1 = ConvBNReLU(num_channels, num_filters, 3, stride=stride, bias=False)
        self.conv2 = ConvBN(num_filters, num_filters, 3, bias=False)
        if downsample:
            self.conv_down = ConvBNReLU(num_channels, num_filters, 1, bias=False)
        if has_se:
            self.se = SELayer(num_filters, num_filters, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.conv1(x))
        if self.has_se:
            y = self.se(y)
        return F.relu(y + (self.conv_down(x) if self.downsample else x))


class Layer1(nn.Module):
    """Stage 1: bottleneck blocks at stride 4."""

    def __init__(self, num_channels: int, num_filters: int, num_blocks: int, has_se: bool, name: str) -> None:
        super().__init__()
        self.names = []
        for i in range(num_blocks):
            block = BottleneckBlock(num_channels if i == 0 else num_filters * 4, num_filters, has_se,
                                    downsample=i == 0)
            self.add_module(f"bb_{name}_{i + 1}", block)
            self.names.append(f"bb_{name}_{i + 1}")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for name in self.names:
            x = getattr(self, name)(x)
        return x


class TransitionLayer(nn.Module):
    """Adapts the branches between stages and spawns the new, lower-resolution branch."""

    def __init__(self, in_channels: Sequence[int], out_channels: Sequence[int], name: str) -> None:
        super().__init__()
        self.names: list[str | None] = []
        for i, out_ch in enumerate(out_channels):
            layer_name = f"transition_{name}_layer_{i + 1}"
            if i < len(in_channels):
                if in_channels[i] == out_ch:
                    self.names.append(None)
                    continue
                layer = ConvBNReLU(in_channels[i], out_ch, 3, bias=False)
            else:
                layer = ConvBNReLU(in_channels[-1], out_ch, 3, stride=2, bias=False)
            self.add_module(layer_name, layer)
            self.names.append(layer_name)

    def forward(self, x: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outs = []
        for i, name in enumerate(self.names):
            if name is None:
                outs.append(x[i])
            else:
                outs.append(getattr(self, name)(x[i] if i < len(x) else x[-1]))
        return outs


class Branches(nn.Module):
    def __init__(self, num_blocks: Sequence[int], in_channels: Sequence[int], out_channels: Sequence[int],
                 has_se: bool, name: str) -> None:
        super().__init__()
        self.names: list[list[str]] = []
        for i, out_ch in enumerate(out_channels):
            names = []
            for j in range(num_blocks[i]):
                block_name = f"bb_{name}_branch_layer_{i + 1}_{j + 1}"
                self.add_module(block_name, BasicBlock(in_channels[i] if j == 0 else out_ch, out_ch, has_se=has_se))
                names.append(block_name)
            self.names.append(names)

    def forward(self, x: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outs = []
        for names, y in zip(self.names, x):
            for name in names:
                y = getattr(self, name)(y)
            outs.append(y)
        return outs


class FuseLayers(nn.Module):
    """Every output branch sums every input branch: upsampled 1x1 ConvBN from below, strided 3x3 from above."""

    def __init__(self, in_channels: Sequence[int], out_channels: Sequence[int], multi_scale_output: bool, name: str,
                 align_corners: bool) -> None:
        super().__init__()
        self.actual_ch = len(in_channels) if multi_scale_output else 1
        self.in_channels = list(in_channels)
        self.align_corners = align_corners
        self.names: list[str] = []
        for i in range(self.actual_ch):
            for j in range(len(in_channels)):
                if j > i:
                    self._add(f"residual_{name}_layer_{i + 1}_{j + 1}",
                              ConvBN(in_channels[j], out_channels[i], 1, bias=False))
                elif j < i:
                    pre = in_channels[j]
                    for k in range(i - j):
                        if k == i - j - 1:
                            layer: nn.Module = ConvBN(pre, out_channels[i], 3, stride=2, bias=False)
                            pre = out_channels[i]
                        else:
                            layer = ConvBNReLU(pre, out_channels[j], 3, stride=2, bias=False)
                            pre = out_channels[j]
                        self._add(f"residual_{name}_layer_{i + 1}_{j + 1}_{k + 1}", layer)

    def _add(self, name: str, layer: nn.Module) -> None:
        self.add_module(name, layer)
        self.names.append(name)

    def forward(self, x: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        outs, idx = [], 0
        for i in range(self.actual_ch):
            residual = x[i]
            for j in range(len(self.in_channels)):
                if j > i:
                    y = getattr(self, self.names[idx])(x[j])
                    idx += 1
                    residual = residual + resize(y, residual.shape[-2:], align_corners=self.align_corners)
                elif j < i:
                    y = x[j]
                    for _ in range(i - j):
                        y = getattr(self, self.names[idx])(y)
                        idx += 1
                    residual = residual + y
            outs.append(F.relu(residual))
        return outs


class HighResolutionModule(nn.Module):
    def __init__(self, num_channels: Sequence[int], num_blocks: Sequence[int], num_filters: Sequence[int],
                 has_se: bool, multi_scale_output: bool, name: str, align_corners: bool) -> None:
        super().__init__()
        self.branches_func = Branches(num_blocks, num_channels, num_filters, has_se, name)
        self.fuse_func = FuseLayers(num_filters, num_filters, multi_scale_output, name, align_corners)

    def forward(self, x: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return self.fuse_func(self.branches_func(x))


class Stage(nn.Module):
    def __init__(self, num_channels: Sequence[int], num_modules: int, num_blocks: Sequence[int],
                 num_filters: Sequence[int], has_se: bool, name: str, align_corners: bool,
                 multi_scale_output: bool = True) -> None:
        super().__init__()
        self.names = []
        for i in range(num_modules):
            module = HighResolutionModule(num_channels, num_blocks, num_filters, has_se,
                                          multi_scale_output or i < num_modules - 1, f"{name}_{i + 1}", align_corners)
            self.add_module(f"stage_{name}_{i + 1}", module)
            self.names.append(f"stage_{name}_{i + 1}")

    def forward(self, x: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        for name in self.names:
            x = getattr(self, name)(x)
        return list(x)


class HRNet(Backbone):
    """HRNet returning one feature: the four branches concatenated at stride 4 (``feature_info`` name ``st4``).

    Args:
        stage1_num_modules .. stage4_num_channels: PaddleSeg's stage settings (see :func:`HRNet_W18`).
        has_se: squeeze-and-excitation in every block.
        align_corners: bilinear resize convention.
        in_channels: channels of the input image.
    """

    def __init__(self, *, stage1_num_modules: int = 1, stage1_num_blocks: Sequence[int] = (4,),
                 stage1_num_channels: Sequence[int] = (64,), stage2_num_modules: int = 1,
                 stage2_num_blocks: Sequence[int] = (4, 4), stage2_num_channels: Sequence[int] = (18, 36),
                 stage3_num_modules: int = 4, stage3_num_blocks: Sequence[int] = (4, 4, 4),
                 stage3_num_channels: Sequence[int] = (18, 36, 72), stage4_num_modules: int = 3,
                 stage4_num_blocks: Sequence[int] = (4, 4, 4, 4),
                 stage4_num_channels: Sequence[int] = (18, 36, 72, 144), has_se: bool = False,
                 align_corners: bool = False, in_channels: int = 3) -> None:
        super().__init__()
        self.align_corners = align_corners
        self._set_stages([stage(sum(stage4_num_channels), 4, "st4")])
        self.conv_layer1_1 = ConvBNReLU(in_channels, 64, 3, stride=2, bias=False)
        self.conv_layer1_2 = ConvBNReLU(64, 64, 3, stride=2, bias=False)
        self.la1 = Layer1(64, stage1_num_channels[0], stage1_num_blocks[0], has_se, "layer2")
        self.tr1 = TransitionLayer([stage1_num_channels[0] * 4], stage2_num_channels, "tr1")
        self.st2 = Stage(stage2_num_channels, stage2_num_modules, stage2_num_blocks, stage2_num_channels, has_se,
                         "st2", align_corners)
        self.tr2 = TransitionLayer(stage2_num_channels, stage3_num_channels, "tr2")
        self.st3 = Stage(stage3_num_channels, stage3_num_modules, stage3_num_blocks, stage3_num_channels, has_se,
                         "st3", align_corners)
        self.tr3 = TransitionLayer(stage3_num_channels, stage4_num_channels, "tr3")
        self.st4 = Stage(stage4_num_channels, stage4_num_modules, stage4_num_blocks, stage4_num_channels, has_se,
                         "st4", align_corners)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.la1(self.conv_layer1_2(self.conv_layer1_1(x)))
        st4 = self.st4(self.tr3(self.st3(self.tr2(self.st2(self.tr1([x]))))))
        size = st4[0].shape[2:]
        ups = [resize(f, size, align_corners=self.align_corners) for f in st4[1:]]
        return [torch.cat([st4[0], *ups], dim=1)]


def HRNet_W18(**kwargs) -> HRNet:
    """HRNet-W18: branch widths 18, 36, 72, 144."""
    return HRNet(stage2_num_channels=(18, 36), stage3_num_channels=(18, 36, 72),
                 stage4_num_channels=(18, 36, 72, 144), **kwargs)


def HRNet_W48(**kwargs) -> HRNet:
    """HRNet-W48: branch widths 48, 96, 192, 384."""
    return HRNet(stage2_num_channels=(48, 96), stage3_num_channels=(48, 96, 192),
                 stage4_num_channels=(48, 96, 192, 384), **kwargs)
