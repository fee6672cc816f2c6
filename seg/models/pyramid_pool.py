"""PaddleSeg's pyramid pooling (``paddleseg/models/layers/pyramid_pool.py``): ASPP and PSPNet's PPModule.

ASPP: "Rethinking Atrous Convolution for Semantic Image Segmentation", https://arxiv.org/abs/1706.05587.
PPModule: "Pyramid Scene Parsing Network", https://arxiv.org/abs/1612.01105.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from oarkit.core.backbones.layers import ConvBNReLU, SeparableConvBNReLU, resize


class ASPPModule(nn.Module):
    """Atrous spatial pyramid pooling: parallel dilated convolutions plus image-level pooling, then a 1x1 fuse.

    Args:
        aspp_ratios: dilation of each branch; a ratio of 1 is a 1x1 convolution.
        in_channels: channels of the input feature.
        out_channels: channels of every branch and of the output.
        align_corners: bilinear resize convention.
        use_sep_conv: use separable convolutions for the dilated branches (DeepLabV3+).
        image_pooling: add the global-average-pooling branch.
    """

    def __init__(self, aspp_ratios: Sequence[int], in_channels: int, out_channels: int, align_corners: bool = False,
                 use_sep_conv: bool = False, image_pooling: bool = False) -> None:
        super().__init__()
        self.align_corners = align_corners
        self.aspp_blocks = nn.ModuleList()
        for ratio in aspp_ratios:
            block = SeparableConvBNReLU if use_sep_conv and ratio > 1 else ConvBNReLU
            self.aspp_blocks.append(block(in_channels, out_channels, 1 if ratio == 1 else 3, dilation=ratio,
                                          padding=0 if ratio == 1 else ratio))
        branches = len(self.aspp_blocks)
        self.image_pooling = image_pooling
        if image_pooling:
            self.global_avg_pool = nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)),
                                                 ConvBNReLU(in_channels, out_channels, 1, bias=False))
            branches += 1
        self.conv_bn_relu = ConvBNReLU(out_channels * branches, out_channels, 1)
        self.dropout = nn.Dropout(p=0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        size = x.shape[2:]
        outputs = [resize(block(x), size, align_corners=self.align_corners) for block in self.aspp_blocks]
        if self.image_pooling:
            outputs.append(resize(self.global_avg_pool(x), size, align_corners=self.align_corners))
        return self.dropout(self.conv_bn_relu(torch.cat(outputs, dim=1)))


class PPModule(nn.Module):
    """PSPNet's pyramid pooling: average pools at several bin sizes, 1x1 reduction, upsample, concatenate.

    Args:
        in_channels: channels of the input feature.
        out_channels: channels after the fusing 3x3 ConvBNReLU.
        bin_sizes: output sizes of the pools.
        dim_reduction: reduce each pooled branch to ``in_channels // len(bin_sizes)`` channels.
        align_corners: bilinear resize convention.
    """

    def __init__(self, in_channels: int, out_channels: int, bin_sizes: Sequence[int] = (1, 2, 3, 6),
                 dim_reduction: bool = True, align_corners: bool = False) -> None:
        super().__init__()
        inter = in_channels // len(bin_sizes) if dim_reduction else in_channels
        self.stages = nn.ModuleList([nn.Sequential(nn.AdaptiveAvgPool2d((size, size)),
                                                   ConvBNReLU(in_channels, inter, 1)) for size in bin_sizes])
        self.conv_bn_relu2 = ConvBNReLU(in_channels + inter * len(bin_sizes), out_channels, 3, padding=1)
        self.align_corners = align_corners

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = [resize(stage(x), x.shape[2:], align_corners=self.align_corners) for stage in self.stages]
        return self.conv_bn_relu2(torch.cat([x, *pooled[::-1]], dim=1))
