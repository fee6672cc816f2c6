"""CSPRepResNet, the backbone of PP-YOLOE / PP-YOLOE+, with PaddleDetection's module paths.

"PP-YOLOE: An evolved version of YOLO", Xu et al., 2022, https://arxiv.org/abs/2203.16250. Mirrors
``ppdet/modeling/backbones/cspresnet.py`` ``CSPResNet``: a stem (``stem.conv1`` .. ``conv3`` with the large stem),
then ``stages.<i>`` of :class:`CSPResStage` (a strided ``conv_down``, two 1x1 branches ``conv1`` / ``conv2``, the
second through ``blocks.<j>`` of :class:`BasicBlock`, an effective-SE ``attn`` and ``conv3``). Every convolution is
a ``ConvBNLayer`` (``conv`` + ``bn``); checkpoints map by renaming BatchNorm statistics only, e.g.
``stages.2.blocks.1.conv2.conv1.bn._mean`` -> ``running_mean``.

Re-parameterization: the :class:`RepVggBlock` inside every block trains as a 3x3 and a 1x1 branch (PP-YOLOE+ scales
the 1x1 branch by a learnable ``alpha``, used only while positive: Paddle's ``if self.alpha:`` is false for a
non-positive tensor); :meth:`RepVggBlock.reparameterize` folds both (and their BatchNorms) into
one 3x3 ``conv`` with bias, Paddle's ``convert_to_deploy``, with equal outputs. Paddle constants: the effective-SE
gate is ``paddle.nn.functional.hardsigmoid`` (slope 1/6, offset 0.5); ``swish`` is SiLU; width and depth
multipliers round with Python's ``round`` as Paddle does.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .base import Backbone, stage
from .layers import PADDLE_HARDSIGMOID_SLOPE, ConvBNAct, Hardsigmoid, fuse_conv_bn, make_act


class RepVggBlock(nn.Module):
    """A 3x3 ConvBN plus a 1x1 ConvBN (times ``alpha`` when learnable), summed, then the activation.

    Args:
        ch_in: input channels.
        ch_out: output channels.
        act: activation name.
        alpha: learn a scalar weight of the 1x1 branch (PP-YOLOE+).
    """

    def __init__(self, ch_in: int, ch_out: int, act: str = "relu", alpha: bool = False) -> None:
        super().__init__()
        self.ch_in, self.ch_out = ch_in, ch_out
        self.conv1 = ConvBNAct(ch_in, ch_out, 3, padding=1, act=None)
        self.conv2 = ConvBNAct(ch_in, ch_out, 1, padding=0, act=None)
        self.act = make_act(act)
        self.alpha = nn.Parameter(torch.ones(1)) if alpha else None
        self.conv: nn.Conv2d | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.conv is not None:
            return self.act(self.conv(x))
        branch = self.conv2(x)
        return self.act(self.conv1(x) + (self._alpha() * branch if self.alpha is not None else branch))

    def _alpha(self) -> torch.Tensor:
        # Paddle tests ``if self.alpha:``, and a Paddle tensor is true when positive: a non-positive alpha is unused
        return torch.where(self.alpha > 0, self.alpha, torch.ones_like(self.alpha))

    @torch.no_grad()
    def reparameterize(self) -> None:
        """Fold both branches into one 3x3 convolution ``conv`` (Paddle's ``convert_to_deploy``)."""
        if self.conv is not None:
            return
        k3, b3 = fuse_conv_bn(self.conv1.conv.weight, self.conv1.bn)
        k1, b1 = fuse_conv_bn(self.conv2.conv.weight, self.conv2.bn)
        k1 = F.pad(k1, [1, 1, 1, 1])
        if self.alpha is not None:
            k1, b1 = k1 * self._alpha(), b1 * self._alpha()
        conv = nn.Conv2d(k3.shape[1], k3.shape[0], 3, padding=1).to(k3.device, k3.dtype)  # pruned sizes too
        conv.weight.copy_(k3 + k1)
        conv.bias.copy_(b3 + b1)
        self.conv = conv
        del self.conv1, self.conv2
        self.alpha = None


class BasicBlock(nn.Module):
    """A 3x3 ConvBNLayer then a :class:`RepVggBlock`, with an identity shortcut when ``shortcut``."""

    def __init__(self, ch_in: int, ch_out: int, act: str = "relu", shortcut: bool = True,
                 use_alpha: bool = False) -> None:
        super().__init__()
        if ch_in != ch_out:
            raise ValueError(f"BasicBlock needs ch_in == ch_out, got {ch_in} and {ch_out}")
        self.conv1 = ConvBNAct(ch_in, ch_out, 3, padding=1, act=act)
        self.conv2 = RepVggBlock(ch_out, ch_out, act=act, alpha=use_alpha)
        self.shortcut = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(self.conv1(x))
        return x + y if self.shortcut else y


class EffectiveSELayer(nn.Module):
    """Effective squeeze-excitation (CenterMask, https://arxiv.org/abs/1911.06667): one 1x1 ``fc`` on the mean."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.fc = nn.Conv2d(channels, channels, 1)
        self.act = Hardsigmoid(PADDLE_HARDSIGMOID_SLOPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.act(self.fc(x.mean((2, 3), keepdim=True)))


class CSPResStage(nn.Module):
    """A strided ``conv_down``, then a cross-stage-partial split over ``n`` :class:`BasicBlock`, ESE, ``conv3``."""

    def __init__(self, ch_in: int, ch_out: int, n: int, stride: int, act: str = "relu", attn: bool = True,
                 use_alpha: bool = False) -> None:
        super().__init__()
        ch_mid = (ch_in + ch_out) // 2
        self.conv_down = ConvBNAct(ch_in, ch_mid, 3, stride=2, padding=1, act=act) if stride == 2 else None
        self.conv1 = ConvBNAct(ch_mid, ch_mid // 2, 1, act=act)
        self.conv2 = ConvBNAct(ch_mid, ch_mid // 2, 1, act=act)
        self.blocks = nn.Sequential(*[BasicBlock(ch_mid // 2, ch_mid // 2, act=act, shortcut=True,
                                                 use_alpha=use_alpha) for _ in range(n)])
        self.attn = EffectiveSELayer(ch_mid) if attn else None
        self.conv3 = ConvBNAct(ch_mid, ch_out, 1, act=act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.conv_down is not None:
            x = self.conv_down(x)
        y = torch.cat([self.conv1(x), self.blocks(self.conv2(x))], dim=1)
        if self.attn is not None:
            y = self.attn(y)
        return self.conv3(y)


class CSPResNet(Backbone):
    """CSPRepResNet returning stages ``return_idx`` (strides 8, 16, 32 by default).

    Args:
        layers: blocks per stage at depth 1.0.
        channels: stem and stage channels at width 1.0.
        act: activation (``swish`` in PP-YOLOE).
        return_idx: which of the four stages (strides 4, 8, 16, 32) to return.
        use_large_stem: three stem convolutions instead of two (PP-YOLOE and PP-YOLOE+).
        width_mult: channel multiplier (s 0.50, m 0.75, l 1.0, x 1.25).
        depth_mult: depth multiplier (s 0.33, m 0.67, l 1.0, x 1.33).
        use_alpha: learnable ``alpha`` in every RepVGG block (PP-YOLOE+).
    """

    def __init__(self, *, layers: Sequence[int] = (3, 6, 6, 3), channels: Sequence[int] = (64, 128, 256, 512, 1024),
                 act: str = "swish", return_idx: Sequence[int] = (1, 2, 3), use_large_stem: bool = True,
                 width_mult: float = 1.0, depth_mult: float = 1.0, use_alpha: bool = False) -> None:
        super().__init__()
        channels = [max(round(c * width_mult), 1) for c in channels]
        layers = [max(round(n * depth_mult), 1) for n in layers]
        stem = [("conv1", ConvBNAct(3, channels[0] // 2, 3, stride=2, padding=1, act=act))]
        if use_large_stem:
            stem += [("conv2", ConvBNAct(channels[0] // 2, channels[0] // 2, 3, padding=1, act=act)),
                     ("conv3", ConvBNAct(channels[0] // 2, channels[0], 3, padding=1, act=act))]
        else:
            stem += [("conv2", ConvBNAct(channels[0] // 2, channels[0], 3, padding=1, act=act))]
        self.stem = nn.Sequential(OrderedDict(stem))
        n = len(channels) - 1
        self.stages = nn.Sequential(*[CSPResStage(channels[i], channels[i + 1], layers[i], 2, act=act,
                                                  use_alpha=use_alpha) for i in range(n)])
        self._set_stages([stage(channels[i + 1], 4 * 2 ** i, f"stages.{i}") for i in range(n)], return_idx)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem(x)
        feats = []
        for s in self.stages:
            x = s(x)
            feats.append(x)
        return self._select(feats)

    def reparameterize(self) -> None:
        """Fold every RepVGG block (see :meth:`RepVggBlock.reparameterize`)."""
        for m in self.modules():
            if isinstance(m, RepVggBlock):
                m.reparameterize()
