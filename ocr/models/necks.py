"""The feature-pyramid necks of PaddleOCR's DB detectors: ``ppocr/modeling/necks/db_fpn.py``.

"Real-time Scene Text Detection with Differentiable Binarization", Liao et al., AAAI 2020,
https://arxiv.org/abs/1911.08947 (the FPN), and PP-OCRv3's RSE-FPN / PP-OCRv4 server's LKPAN
("PP-OCRv3: More Attempts for the Improvement of Ultra Lightweight OCR System", https://arxiv.org/abs/2206.03001).
Each neck takes the four backbone features at strides 4, 8, 16, 32 and returns one stride-4 map of
``out_channels`` channels: four ``out_channels // 4`` maps concatenated deepest first.

Module paths are Paddle's (``in2_conv``, ``ins_conv.<i>.in_conv``, ``pan_lat_conv.<i>``, ...). Paddle constants:
the RSE layers' SE gate is ``hardsigmoid(slope=0.2, offset=0.5)``; upsampling is nearest-neighbour. The layers
run in Paddle's order (deepest lateral first), so that weights exported without names map by execution order.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.layers import SE_HARDSIGMOID_SLOPE, SEModule


def _up(x: torch.Tensor, factor: int) -> torch.Tensor:
    return F.interpolate(x, scale_factor=factor, mode="nearest")


def _fuse(p5: torch.Tensor, p4: torch.Tensor, p3: torch.Tensor, p2: torch.Tensor) -> torch.Tensor:
    return torch.cat([_up(p5, 8), _up(p4, 4), _up(p3, 2), p2], dim=1)


def _top_down(ins_conv: nn.ModuleList, feats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """The lateral convolutions (in Paddle's order, deepest first) and the top-down sums: ``in5, out4, out3, out2``.

    The order does not change the result; it lets weights exported without names map by execution order."""
    c2, c3, c4, c5 = feats
    in5, in4, in3, in2 = ins_conv[3](c5), ins_conv[2](c4), ins_conv[1](c3), ins_conv[0](c2)
    out4 = in4 + _up(in5, 2)
    out3 = in3 + _up(out4, 2)
    return in5, out4, out3, in2 + _up(out3, 2)


def _check(in_channels: Sequence[int], out_channels: int) -> None:
    if len(in_channels) != 4 or out_channels % 4:
        raise ValueError(f"a DB neck takes 4 features (got {len(in_channels)}) and out_channels divisible by 4 "
                         f"(got {out_channels})")


class DBFPN(nn.Module):
    """DB's FPN: 1x1 lateral convolutions, top-down sums, 3x3 output convolutions (no BN, no bias)."""

    def __init__(self, in_channels: Sequence[int], out_channels: int = 256) -> None:
        super().__init__()
        _check(in_channels, out_channels)
        self.out_channels = out_channels
        for i, c in zip((2, 3, 4, 5), in_channels):
            self.add_module(f"in{i}_conv", nn.Conv2d(c, out_channels, 1, bias=False))
        for i in (5, 4, 3, 2):
            self.add_module(f"p{i}_conv", nn.Conv2d(out_channels, out_channels // 4, 3, padding=1, bias=False))

    def forward(self, feats: Sequence[torch.Tensor]) -> torch.Tensor:
        c2, c3, c4, c5 = feats
        in5, in4, in3, in2 = self.in5_conv(c5), self.in4_conv(c4), self.in3_conv(c3), self.in2_conv(c2)
        out4 = in4 + _up(in5, 2)
        out3 = in3 + _up(out4, 2)
        out2 = in2 + _up(out3, 2)
        return _fuse(self.p5_conv(in5), self.p4_conv(out4), self.p3_conv(out3), self.p2_conv(out2))


class RSELayer(nn.Module):
    """A convolution (no bias) and a residual squeeze-and-excitation: ``x + se(x)`` (``shortcut``) or ``se(x)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, shortcut: bool = True) -> None:
        super().__init__()
        self.in_conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=False)
        self.se_block = SEModule(out_channels, slope=SE_HARDSIGMOID_SLOPE)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.in_conv(x)
        return x + self.se_block(x) if self.shortcut else self.se_block(x)


class RSEFPN(nn.Module):
    """PP-OCRv3/v4 mobile's FPN with residual SE layers (``ins_conv`` 1x1 laterals, ``inp_conv`` 3x3 outputs)."""

    def __init__(self, in_channels: Sequence[int], out_channels: int = 96, shortcut: bool = True) -> None:
        super().__init__()
        _check(in_channels, out_channels)
        self.out_channels = out_channels
        self.ins_conv = nn.ModuleList([RSELayer(c, out_channels, 1, shortcut) for c in in_channels])
        self.inp_conv = nn.ModuleList([RSELayer(out_channels, out_channels // 4, 3, shortcut) for _ in in_channels])

    def forward(self, feats: Sequence[torch.Tensor]) -> torch.Tensor:
        in5, out4, out3, out2 = _top_down(self.ins_conv, feats)
        p5, p4 = self.inp_conv[3](in5), self.inp_conv[2](out4)
        p3, p2 = self.inp_conv[1](out3), self.inp_conv[0](out2)
        return _fuse(p5, p4, p3, p2)


class IntraCLBlock(nn.Module):
    """PP-OCRv4 server's intra-class block: square, vertical and horizontal kernels on a reduced map, residual.

    Paddle's ``IntraCLBlock`` of ``ppocr/modeling/necks/intracl.py``: ``conv1x1_reduce_channel``, three
    scales (7, 5, 3) of ``c_layer_*`` (kxk), ``v_layer_*`` (kx1), ``q_layer_*`` (1xk) summed from coarse to
    fine, ``conv1x1_return_channel``, BatchNorm, ReLU, and a residual connection.
    """

    def __init__(self, in_channels: int = 96, reduce_factor: int = 4) -> None:
        super().__init__()
        c = in_channels // reduce_factor
        self.channels, self.rf = in_channels, reduce_factor
        self.conv1x1_reduce_channel = nn.Conv2d(in_channels, c, 1)
        self.conv1x1_return_channel = nn.Conv2d(c, in_channels, 1)
        for k in (7, 5, 3):
            self.add_module(f"v_layer_{k}x1", nn.Conv2d(c, c, (k, 1), padding=(k // 2, 0)))
            self.add_module(f"q_layer_1x{k}", nn.Conv2d(c, c, (1, k), padding=(0, k // 2)))
            self.add_module(f"c_layer_{k}x{k}", nn.Conv2d(c, c, k, padding=k // 2))
        self.bn = nn.BatchNorm2d(in_channels)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_new = self.conv1x1_reduce_channel(x)
        for k in (7, 5, 3):
            x_new = (getattr(self, f"c_layer_{k}x{k}")(x_new) + getattr(self, f"v_layer_{k}x1")(x_new)
                     + getattr(self, f"q_layer_1x{k}")(x_new))
        return x + self.relu(self.bn(self.conv1x1_return_channel(x_new)))


class LKPAN(nn.Module):
    """PP-OCRv4 server's large-kernel PAN: 9x9 output convolutions, a bottom-up path, optional IntraCL blocks.

    Args:
        in_channels: channels of the four backbone features.
        out_channels: channels of the fused map.
        intracl: apply an :class:`IntraCLBlock` to each level before fusion (PP-OCRv4 server det does).
    """

    def __init__(self, in_channels: Sequence[int], out_channels: int = 256, intracl: bool = False) -> None:
        super().__init__()
        _check(in_channels, out_channels)
        self.out_channels = out_channels
        q = out_channels // 4
        self.ins_conv = nn.ModuleList([nn.Conv2d(c, out_channels, 1, bias=False) for c in in_channels])
        self.inp_conv = nn.ModuleList([nn.Conv2d(out_channels, q, 9, padding=4, bias=False) for _ in in_channels])
        self.pan_head_conv = nn.ModuleList([nn.Conv2d(q, q, 3, padding=1, stride=2, bias=False) for _ in range(3)])
        self.pan_lat_conv = nn.ModuleList([nn.Conv2d(q, q, 9, padding=4, bias=False) for _ in in_channels])
        self.intracl = intracl
        if intracl:
            for i in range(1, 5):
                self.add_module(f"incl{i}", IntraCLBlock(q, reduce_factor=2))

    def forward(self, feats: Sequence[torch.Tensor]) -> torch.Tensor:
        in5, out4, out3, out2 = _top_down(self.ins_conv, feats)
        f5, f4 = self.inp_conv[3](in5), self.inp_conv[2](out4)
        f3, f2 = self.inp_conv[1](out3), self.inp_conv[0](out2)
        pan3 = f3 + self.pan_head_conv[0](f2)
        pan4 = f4 + self.pan_head_conv[1](pan3)
        pan5 = f5 + self.pan_head_conv[2](pan4)
        p2, p3, p4, p5 = (conv(f) for conv, f in zip(self.pan_lat_conv, (f2, pan3, pan4, pan5)))
        if self.intracl:
            p5, p4, p3, p2 = self.incl4(p5), self.incl3(p4), self.incl2(p3), self.incl1(p2)
        return _fuse(p5, p4, p3, p2)
