"""PaddleSeg's building blocks (``paddleseg/models/layers/layer_libs.py``) with Paddle's module names.

The attribute names (``_conv``, ``_batch_norm``, the ``piontwise_conv`` spelling, ...) are kept on purpose: they
are the parameter names of PaddleSeg's released checkpoints, so a converted ``.pdparams`` file loads by name.
Paddle convolutions carry a bias unless told otherwise (``bias_attr=False`` there, ``bias=False`` here), and
Paddle's ``padding="same"`` is TensorFlow-style: for a strided convolution it pads more at the bottom and right.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

Padding = int | tuple[int, int] | str


class Conv2d(nn.Conv2d):
    """``nn.Conv2d`` that also accepts Paddle's ``padding="same"`` (asymmetric when the stride is above one).

    For stride 1 ``"same"`` becomes the symmetric padding ``dilation * (kernel - 1) // 2``; for larger strides
    the padding depends on the input size and is applied in :meth:`forward`, exactly as Paddle computes it.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1,
                 padding: Padding = 0, dilation: int = 1, groups: int = 1, bias: bool = True) -> None:
        self.same_pad = padding == "same" and stride > 1
        if padding == "same":
            padding = 0 if self.same_pad else dilation * (kernel_size - 1) // 2
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias)

    def _pad_amounts(self, size: int, axis: int) -> tuple[int, int]:
        stride, kernel, dilation = self.stride[axis], self.kernel_size[axis], self.dilation[axis]
        total = max((math.ceil(size / stride) - 1) * stride + dilation * (kernel - 1) + 1 - size, 0)
        return total // 2, total - total // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.same_pad:
            top, bottom = self._pad_amounts(x.shape[-2], 0)
            left, right = self._pad_amounts(x.shape[-1], 1)
            x = F.pad(x, (left, right, top, bottom))
        return super().forward(x)


class ConvBNReLU(nn.Module):
    """Convolution, batch norm, ReLU (Paddle's ``layers.ConvBNReLU``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1,
                 padding: Padding = "same", dilation: int = 1, groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        self._conv = Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            dilation=dilation, groups=groups, bias=bias)
        self._batch_norm = nn.BatchNorm2d(out_channels)
        self._relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._relu(self._batch_norm(self._conv(x)))


class ConvBN(nn.Module):
    """Convolution and batch norm (Paddle's ``layers.ConvBN``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1,
                 padding: Padding = "same", dilation: int = 1, groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        self._conv = Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            dilation=dilation, groups=groups, bias=bias)
        self._batch_norm = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._batch_norm(self._conv(x))


class SeparableConvBNReLU(nn.Module):
    """Depthwise ConvBN then pointwise ConvBNReLU (Paddle's ``layers.SeparableConvBNReLU``, typo included)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1,
                 padding: Padding = "same", dilation: int = 1, bias: bool = True, pointwise_bias: bool = True) -> None:
        super().__init__()
        self.depthwise_conv = ConvBN(in_channels, in_channels, kernel_size, stride=stride, padding=padding,
                                     dilation=dilation, groups=in_channels, bias=bias)
        self.piontwise_conv = ConvBNReLU(in_channels, out_channels, 1, bias=pointwise_bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.piontwise_conv(self.depthwise_conv(x))


class DepthwiseConvBN(nn.Module):
    """A grouped (depthwise) ConvBN; ``out_channels`` may be a multiple of ``in_channels``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1,
                 padding: Padding = "same", bias: bool = True) -> None:
        super().__init__()
        self.depthwise_conv = ConvBN(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                                     groups=in_channels, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.depthwise_conv(x)


class AuxLayer(nn.Module):
    """The auxiliary head used for deep supervision: ConvBNReLU, dropout, a 1x1 classifier."""

    def __init__(self, in_channels: int, inter_channels: int, out_channels: int, dropout_prob: float = 0.1) -> None:
        super().__init__()
        self.conv_bn_relu = ConvBNReLU(in_channels, inter_channels, 3, padding=1)
        self.dropout = nn.Dropout(p=dropout_prob)
        self.conv = nn.Conv2d(inter_channels, out_channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(self.dropout(self.conv_bn_relu(x)))


def resize(x: torch.Tensor, size: tuple[int, int] | torch.Size, *, align_corners: bool = False) -> torch.Tensor:
    """Bilinear resize to ``size`` (Paddle's default ``align_mode`` is PyTorch's half-pixel convention)."""
    return F.interpolate(x, size=tuple(size), mode="bilinear", align_corners=align_corners)


def init_weights(module: nn.Module) -> None:
    """Kaiming-normal convolutions and unit batch norms, for training from scratch.

    PaddleSeg initialises most models for fine-tuning from ImageNet weights (normal with std 0.001 in several
    backbones); oarkit's models also train from scratch, where that initialisation stalls.
    """
    for m in module.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, (nn.BatchNorm2d, nn.SyncBatchNorm)):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
