"""PaddleSeg's segmentation-only layers (``paddleseg/models/layers/layer_libs.py``) with Paddle's module names.

The convolution blocks both kits use (``ConvBN``, ``ConvBNReLU``, ``SeparableConvBNReLU``, ``DepthwiseConvBN``,
Paddle's ``"same"`` padding, ``resize``, ``init_weights``) live in :mod:`oarkit.core.backbones.layers`.
"""

from __future__ import annotations

import torch
from torch import nn

from oarkit.core.backbones.layers import ConvBNReLU


class AuxLayer(nn.Module):
    """The auxiliary head used for deep supervision: ConvBNReLU, dropout, a 1x1 classifier."""

    def __init__(self, in_channels: int, inter_channels: int, out_channels: int, dropout_prob: float = 0.1) -> None:
        super().__init__()
        self.conv_bn_relu = ConvBNReLU(in_channels, inter_channels, 3, padding=1)
        self.dropout = nn.Dropout(p=dropout_prob)
        self.conv = nn.Conv2d(inter_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.dropout(self.conv_bn_relu(x)))
