"""Convolution-BN-activation blocks shared by the Paddle ports, with Paddle's module names.

Two families of blocks live here:

- PaddleSeg's ``paddleseg/models/layers/layer_libs.py`` blocks (:class:`ConvBNReLU`, :class:`ConvBN`,
  :class:`SeparableConvBNReLU`, :class:`DepthwiseConvBN`) whose sub-modules are ``_conv`` and ``_batch_norm``
  (and the ``piontwise_conv`` spelling): those are the parameter names of PaddleSeg's checkpoints.
- PaddleClas / PaddleOCR / PaddleDetection's ``ConvBNLayer`` (:class:`ConvBNAct`: ``conv``, ``bn``, then an
  activation without parameters) and their squeeze-and-excitation :class:`SEModule` (``conv1``, ``conv2``).

Paddle semantics kept here: Paddle convolutions carry a bias unless told otherwise (``bias_attr=False`` there,
``bias=False`` here); Paddle's ``padding="same"`` is TensorFlow-style, asymmetric for strided convolutions
(:class:`Conv2d`); Paddle's hardsigmoid is ``clip(slope * x + offset, 0, 1)`` with a slope that differs between
layers (:class:`Hardsigmoid`); ``hardswish`` is ``x * relu6(x + 3) / 6`` in both frameworks; BatchNorm's epsilon
(1e-5) and momentum (Paddle's 0.9 is PyTorch's 0.1) are the same by default.

Checkpoint names: module paths equal Paddle's, so a Paddle state dict maps onto these modules by renaming only
BatchNorm's statistics (``_mean`` -> ``running_mean``, ``_variance`` -> ``running_var``; PyTorch's
``num_batches_tracked`` has no Paddle counterpart) and transposing Linear weights (Paddle stores ``[in, out]``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

Padding = int | tuple[int, int] | str
Size2 = int | tuple[int, int]

#: ``paddle.nn.functional.hardsigmoid``'s default slope, used by ``paddle.nn.Hardsigmoid()`` (PP-LCNet's and
#: PP-LCNetV3's SE). It equals PyTorch's ``hardsigmoid`` (``x / 6 + 1 / 2``) to within 4e-8 * |x|.
PADDLE_HARDSIGMOID_SLOPE = 0.1666667
#: the slope MobileNetV3's SE passes explicitly: PaddleClas ``Hardsigmoid(slope=0.2, offset=0.5)``, PaddleOCR
#: ``F.hardsigmoid(x, slope=0.2, offset=0.5)`` (and the old ``fluid.layers.hard_sigmoid`` default).
SE_HARDSIGMOID_SLOPE = 0.2
HARDSIGMOID_OFFSET = 0.5


def fuse_conv_bn(kernel: torch.Tensor, bn: nn.BatchNorm2d, bias: torch.Tensor | None = None, *,
                 out_dim: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """The kernel and bias of ``bn(conv(x))`` as one convolution (BatchNorm's running statistics); ``bias`` is the
    convolution's own, if any; ``out_dim`` is the kernel's output-channel dimension (1 for a transposed one)."""
    scale = bn.weight / (bn.running_var + bn.eps).sqrt()
    shape = [1] * kernel.ndim
    shape[out_dim] = -1
    mean = bn.running_mean if bias is None else bn.running_mean - bias
    return kernel * scale.reshape(shape), bn.bias - mean * scale


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round ``value`` to the nearest multiple of ``divisor``, never below ``min_value`` nor 10% below ``value``.

    The channel rounding of MobileNetV3 and PP-LCNet (``divisor=8``) and PP-LCNetV3 (``divisor=16``) in Paddle's
    kits: ``make_divisible(16 * 0.35) == 8``, ``make_divisible(72 * 0.5) == 40``.
    """
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if rounded < 0.9 * value:
        rounded += divisor
    return rounded


class Hardsigmoid(nn.Module):
    """Paddle's hardsigmoid, ``clip(slope * x + offset, 0, 1)``; PyTorch's is the slope 1/6 case only."""

    def __init__(self, slope: float = PADDLE_HARDSIGMOID_SLOPE, offset: float = HARDSIGMOID_OFFSET) -> None:
        super().__init__()
        self.slope, self.offset = slope, offset

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(x * self.slope + self.offset, 0.0, 1.0)

    def extra_repr(self) -> str:
        return f"slope={self.slope}, offset={self.offset}"


_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU, "relu6": nn.ReLU6, "hardswish": nn.Hardswish, "hard_swish": nn.Hardswish,
    "hswish": nn.Hardswish, "sigmoid": nn.Sigmoid, "identity": nn.Identity, "swish": nn.SiLU, "silu": nn.SiLU,
}


def make_act(name: str | None) -> nn.Module:
    """The activation Paddle's kits name by string (``None`` is no activation); PaddleDetection says
    ``hard_swish`` and PaddleOCR ``hswish`` for ``hardswish``."""
    if name is None:
        return nn.Identity()
    if name not in _ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}: choose one of {sorted(_ACTIVATIONS)} or None")
    return _ACTIVATIONS[name]()


class ConvBNAct(nn.Module):
    """Convolution without bias, batch norm, activation: the ``ConvBNLayer`` of PaddleClas, PaddleOCR and
    PaddleDetection (sub-modules ``conv`` and ``bn``; the activation holds no parameters).

    Args:
        in_channels: input channels.
        out_channels: output channels.
        kernel_size: kernel size.
        stride: stride, a pair for the height/width strides of text recognizers (``(2, 1)``).
        padding: padding; ``None`` is Paddle's usual ``(kernel_size - 1) // 2``.
        groups: convolution groups (``in_channels`` for a depthwise convolution).
        act: activation name for :func:`make_act`, or ``None``.
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: Size2 = 1,
                 padding: Size2 | None = None, groups: int = 1, act: str | None = "relu") -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                              padding=(kernel_size - 1) // 2 if padding is None else padding, groups=groups, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        self.act = make_act(act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))


class SEModule(nn.Module):
    """Squeeze-and-excitation with 1x1 convolutions (``conv1``, ReLU, ``conv2``, hardsigmoid), as in
    MobileNetV3 and PP-LCNet.

    Args:
        channels: input and output channels.
        reduction: squeeze ratio (the hidden width is ``channels // reduction``).
        slope: the hardsigmoid slope, which differs between Paddle models: 0.2 (:data:`SE_HARDSIGMOID_SLOPE`)
            in MobileNetV3, 0.1666667 (:data:`PADDLE_HARDSIGMOID_SLOPE`) in PP-LCNet and PP-LCNetV3.
        offset: the hardsigmoid offset (0.5 everywhere).
    """

    def __init__(self, channels: int, *, reduction: int = 4, slope: float = SE_HARDSIGMOID_SLOPE,
                 offset: float = HARDSIGMOID_OFFSET) -> None:
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv1 = nn.Conv2d(channels, channels // reduction, 1)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(channels // reduction, channels, 1)
        self.hardsigmoid = Hardsigmoid(slope, offset)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.hardsigmoid(self.conv2(self.relu(self.conv1(self.avg_pool(x)))))


# ------------------------------------------------------------------------------------ PaddleSeg's layer_libs
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
    """Convolution, batch norm, ReLU (PaddleSeg's ``layers.ConvBNReLU``)."""

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
    """Convolution and batch norm (PaddleSeg's ``layers.ConvBN``)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, *, stride: int = 1,
                 padding: Padding = "same", dilation: int = 1, groups: int = 1, bias: bool = True) -> None:
        super().__init__()
        self._conv = Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            dilation=dilation, groups=groups, bias=bias)
        self._batch_norm = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._batch_norm(self._conv(x))


class SeparableConvBNReLU(nn.Module):
    """Depthwise ConvBN then pointwise ConvBNReLU (PaddleSeg's ``layers.SeparableConvBNReLU``, typo included)."""

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
