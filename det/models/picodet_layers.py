"""PicoDet's necks and head blocks, ported from PaddleDetection 2.6 with its module paths.

- ``ppdet/modeling/necks/csp_pan.py``: :class:`DPModule` (depthwise ``dwconv``/``bn1`` + pointwise ``pwconv``/
  ``bn2``), :class:`CSPLayer` (``main_conv``, ``short_conv``, ``blocks``, ``final_conv``), :class:`ChannelT`
  (``conv_t.convs.<i>``) and :class:`CSPPAN` (the first PicoDet's neck, kept by the layout model);
- ``ppdet/modeling/necks/lc_pan.py``: :class:`LCPAN` (PicoDet 2.x: PP-LCNet depthwise-separable blocks instead of
  CSP layers);
- ``ppdet/modeling/heads/pico_head.py``: :class:`PicoFeat` (per level ``cls_conv_dw<l>.<i>`` / ``cls_conv_pw<l>.<i>``
  ConvNorm layers, ``se.<l>``), and ``gfl_head.py``'s :class:`Integral` (``distribution_project``).

Every activation is hardswish, as PicoDet's configs set it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.layers import ConvBNAct
from oarkit.core.backbones.pp_lcnet import DepthwiseSeparable

ACT = "hardswish"


class DPModule(nn.Module):
    """Depthwise kxk conv + BN + act, pointwise 1x1 conv + BN (+ act when ``use_act_in_out``)."""

    def __init__(self, in_channel: int, out_channel: int, kernel_size: int = 3, stride: int = 1,
                 use_act_in_out: bool = True) -> None:
        super().__init__()
        self.use_act_in_out = use_act_in_out
        self.dwconv = nn.Conv2d(in_channel, out_channel, kernel_size, stride=stride, padding=(kernel_size - 1) // 2,
                                groups=out_channel, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channel)
        self.pwconv = nn.Conv2d(out_channel, out_channel, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn2(self.pwconv(F.hardswish(self.bn1(self.dwconv(x)))))
        return F.hardswish(x) if self.use_act_in_out else x


class DarknetBottleneck(nn.Module):
    """1x1 ConvBNLayer then a kxk DPModule (no identity in PicoDet's CSP layers)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3) -> None:
        super().__init__()
        self.conv1 = ConvBNAct(in_channels, out_channels, 1, act=ACT)
        self.conv2 = DPModule(out_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(self.conv1(x))


class CSPLayer(nn.Module):
    """Cross-stage partial layer: ``final_conv(cat(blocks(main_conv(x)), short_conv(x)))``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, num_blocks: int = 1) -> None:
        super().__init__()
        mid = int(out_channels * 0.5)
        self.main_conv = ConvBNAct(in_channels, mid, 1, act=ACT)
        self.short_conv = ConvBNAct(in_channels, mid, 1, act=ACT)
        self.final_conv = ConvBNAct(2 * mid, out_channels, 1, act=ACT)
        self.blocks = nn.Sequential(*[DarknetBottleneck(mid, mid, kernel_size) for _ in range(num_blocks)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x_short = self.short_conv(x)  # Paddle's order, which the ONNX execution-order mapping relies on
        x_main = self.blocks(self.main_conv(x))
        return self.final_conv(torch.cat([x_main, x_short], dim=1))


class ChannelT(nn.Module):
    """A 1x1 ConvBNLayer per input bringing every level to ``out_channels`` (Paddle's ``Channel_T``)."""

    def __init__(self, in_channels: Sequence[int], out_channels: int) -> None:
        super().__init__()
        self.convs = nn.ModuleList([ConvBNAct(c, out_channels, 1, act=ACT) for c in in_channels])

    def forward(self, xs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [conv(x) for conv, x in zip(self.convs, xs)]


class _PAN(nn.Module):
    """The path aggregation both PicoDet necks share; subclasses build ``top_down_blocks`` and
    ``bottom_up_blocks``. Outputs shallow to deep, plus a stride-64 level when ``num_features`` is 4."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, kernel_size: int, num_features: int) -> None:
        super().__init__()
        if num_features not in (3, 4):
            raise ValueError(f"num_features={num_features} must be 3 or 4")
        self.conv_t = ChannelT(in_channels, out_channels)
        self.num_levels, self.num_features, self.out_channels = len(in_channels), num_features, out_channels
        if num_features == 4:
            self.first_top_conv = DPModule(out_channels, out_channels, kernel_size, stride=2)
            self.second_top_conv = DPModule(out_channels, out_channels, kernel_size, stride=2)
        self.downsamples = nn.ModuleList([DPModule(out_channels, out_channels, kernel_size, stride=2)
                                          for _ in range(self.num_levels - 1)])

    def forward(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        inputs = self.conv_t(inputs)
        inner_outs = [inputs[-1]]
        for idx in range(self.num_levels - 1, 0, -1):
            upsampled = F.interpolate(inner_outs[0], scale_factor=2.0, mode="nearest")
            inner_outs.insert(0, self.top_down_blocks[self.num_levels - 1 - idx](
                torch.cat([upsampled, inputs[idx - 1]], dim=1)))
        outs = [inner_outs[0]]
        for idx in range(self.num_levels - 1):
            outs.append(self.bottom_up_blocks[idx](torch.cat([self.downsamples[idx](outs[-1]), inner_outs[idx + 1]],
                                                             dim=1)))
        if self.num_features == 4:
            outs.append(self.first_top_conv(inputs[-1]) + self.second_top_conv(outs[-1]))
        return outs


class CSPPAN(_PAN):
    """The first PicoDet's neck: CSP layers of depthwise bottlenecks (``csp_pan.py``)."""

    def __init__(self, *, in_channels: Sequence[int], out_channels: int, kernel_size: int = 5, num_features: int = 4,
                 num_csp_blocks: int = 1) -> None:
        super().__init__(in_channels, out_channels, kernel_size, num_features)
        c = out_channels
        self.top_down_blocks = nn.ModuleList([CSPLayer(2 * c, c, kernel_size, num_csp_blocks)
                                              for _ in range(self.num_levels - 1)])
        self.bottom_up_blocks = nn.ModuleList([CSPLayer(2 * c, c, kernel_size, num_csp_blocks)
                                               for _ in range(self.num_levels - 1)])


class LCPAN(_PAN):
    """PicoDet 2.x's neck: two PP-LCNet depthwise-separable blocks per fusion (``lc_pan.py``)."""

    def __init__(self, *, in_channels: Sequence[int], out_channels: int, kernel_size: int = 5,
                 num_features: int = 4) -> None:
        super().__init__(in_channels, out_channels, kernel_size, num_features)
        c = out_channels

        def block() -> nn.Sequential:
            return nn.Sequential(DepthwiseSeparable(2 * c, 2 * c, 1, kernel_size, False, ACT),
                                 DepthwiseSeparable(2 * c, c, 1, kernel_size, False, ACT))

        self.top_down_blocks = nn.ModuleList([block() for _ in range(self.num_levels - 1)])
        self.bottom_up_blocks = nn.ModuleList([block() for _ in range(self.num_levels - 1)])


class ConvNorm(nn.Module):
    """PaddleDetection's ``ConvNormLayer`` without bias: ``conv`` then ``norm`` (no activation)."""

    def __init__(self, ch_in: int, ch_out: int, filter_size: int, groups: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(ch_in, ch_out, filter_size, padding=(filter_size - 1) // 2, groups=groups, bias=False)
        self.norm = nn.BatchNorm2d(ch_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.conv(x))


class PicoSE(nn.Module):
    """``conv(feat * sigmoid(fc(avg_feat)))``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc = nn.Conv2d(channels, channels, 1)
        self.conv = ConvNorm(channels, channels, 1)
        nn.init.normal_(self.fc.weight, std=0.001)

    def forward(self, feat: torch.Tensor, avg_feat: torch.Tensor) -> torch.Tensor:
        return self.conv(feat * torch.sigmoid(self.fc(avg_feat)))


class PicoFeat(nn.Module):
    """The shared class/box tower of each level: ``num_convs`` depthwise 5x5 + pointwise ConvNorm pairs with
    hardswish (class and box share them), and an SE per level in PicoDet 2.x.

    Returns ``(cls_feat, reg_feat)``: with SE the second is ``hardswish(se(cls_feat))``, else ``cls_feat``.
    """

    def __init__(self, *, feat_in: int, feat_out: int, num_fpn_stride: int, num_convs: int, use_se: bool) -> None:
        super().__init__()
        self.num_fpn_stride, self.use_se = num_fpn_stride, use_se
        for level in range(num_fpn_stride):
            dws, pws = nn.ModuleList(), nn.ModuleList()
            for i in range(num_convs):
                in_c = feat_in if i == 0 else feat_out
                dws.append(ConvNorm(in_c, feat_out, 5, groups=feat_out))
                pws.append(ConvNorm(in_c, feat_out, 1))
            self.add_module(f"cls_conv_dw{level}", dws)
            self.add_module(f"cls_conv_pw{level}", pws)
        if use_se:
            self.se = nn.ModuleList([PicoSE(feat_out) for _ in range(num_fpn_stride)])

    def forward(self, x: torch.Tensor, level: int) -> tuple[torch.Tensor, torch.Tensor]:
        for dw, pw in zip(getattr(self, f"cls_conv_dw{level}"), getattr(self, f"cls_conv_pw{level}")):
            x = F.hardswish(pw(F.hardswish(dw(x))))
        if self.use_se:
            return x, F.hardswish(self.se[level](x, F.adaptive_avg_pool2d(x, 1)))
        return x, x


class Integral(nn.Module):
    """Expected distance of a softmax over the bins ``0 .. reg_max`` (GFL's integral; buffer ``project``)."""

    def __init__(self, reg_max: int) -> None:
        super().__init__()
        self.reg_max = reg_max
        self.register_buffer("project", torch.linspace(0, reg_max, reg_max + 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` [..., 4 * (reg_max + 1)] -> distances [..., 4]."""
        x = F.softmax(x.reshape(*x.shape[:-1], 4, self.reg_max + 1), dim=-1)
        return x @ self.project.to(x.dtype)
