"""STDCNet, the backbone of PP-LiteSeg: PaddleSeg's ``paddleseg/models/backbones/stdcnet.py`` ``STDCNet``.

"Rethinking BiSeNet For Real-time Semantic Segmentation", Fan et al., CVPR 2021, https://arxiv.org/abs/2104.13188.
STDC1 has two blocks per stage, STDC2 four, five and three; each Short-Term Dense Concatenate block halves its
channels from one convolution to the next and concatenates them all. PaddleSeg's ImageNet weights:
https://bj.bcebos.com/paddleseg/dygraph/PP_STDCNet1.tar.gz (and PP_STDCNet2).

Module paths (Paddle's): ``features.<i>`` is the flat list of the two stem convolutions and every STDC block
(PaddleSeg's ``x2 .. x32`` are slices of it that own no parameters); inside a block ``conv_list.<j>`` (``conv``,
``bn``), ``avd_layer.0`` / ``avd_layer.1`` and, in the ``add`` variant, ``skip.0 .. skip.3``; ``conv_last``
when ``use_conv_last``. E.g. ``features.2.conv_list.0.conv.weight``, ``features.0.bn._variance`` -> ``running_var``.

Paddle semantics: the stride-2 ``cat`` block's skip is Paddle's ``AvgPool2D(3, 2, 1)``, which averages over
the pixels inside the image only (``count_include_pad=False``); counting the zero padding made PP-LiteSeg's
logits differ from Paddle's by 1.45e-4 at image borders.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from .base import Backbone, stage
from .layers import ConvBNAct


def _stdc_convs(in_planes: int, out_planes: int, block_num: int) -> nn.ModuleList:
    """The chain of convolutions of an STDC block: out/2, out/4, out/8, ... and the last one repeated.

    The chain never strides: a stride-2 block down-samples with its ``avd_layer`` between the first and second.
    """
    convs = nn.ModuleList()
    for idx in range(block_num):
        if idx == 0:
            convs.append(ConvBNAct(in_planes, out_planes // 2, 1))
        elif idx == 1 and block_num == 2:
            convs.append(ConvBNAct(out_planes // 2, out_planes // 2, 3))
        elif idx == 1:
            convs.append(ConvBNAct(out_planes // 2, out_planes // 4, 3))
        elif idx < block_num - 1:
            convs.append(ConvBNAct(out_planes // 2**idx, out_planes // 2 ** (idx + 1), 3))
        else:
            convs.append(ConvBNAct(out_planes // 2**idx, out_planes // 2**idx, 3))
    return convs


class _STDCBlock(nn.Module):
    """What both STDC blocks share: the convolution chain and, at stride 2, the depthwise down-sampling."""

    def __init__(self, in_planes: int, out_planes: int, block_num: int, stride: int) -> None:
        super().__init__()
        if block_num < 2:
            raise ValueError(f"an STDC block needs block_num > 1, got {block_num}")
        self.stride = stride
        if stride == 2:
            self.avd_layer = nn.Sequential(
                nn.Conv2d(out_planes // 2, out_planes // 2, 3, stride=2, padding=1, groups=out_planes // 2,
                          bias=False),
                nn.BatchNorm2d(out_planes // 2))
        self.conv_list = _stdc_convs(in_planes, out_planes, block_num)


class CatBottleneck(_STDCBlock):
    """The STDC block with concatenation (the one both STDC variants use)."""

    def __init__(self, in_planes: int, out_planes: int, block_num: int = 3, stride: int = 1) -> None:
        super().__init__(in_planes, out_planes, block_num, stride)
        if stride == 2:
            self.skip = nn.AvgPool2d(kernel_size=3, stride=2, padding=1, count_include_pad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out1 = self.conv_list[0](x)
        out = self.avd_layer(out1) if self.stride == 2 else out1
        outs = []
        for conv in self.conv_list[1:]:
            out = conv(out)
            outs.append(out)
        if self.stride == 2:
            out1 = self.skip(out1)
        return torch.cat([out1, *outs], dim=1)


class AddBottleneck(_STDCBlock):
    """The STDC block with addition (PaddleSeg's ``type="add"``)."""

    def __init__(self, in_planes: int, out_planes: int, block_num: int = 3, stride: int = 1) -> None:
        super().__init__(in_planes, out_planes, block_num, stride)
        if stride == 2:
            self.skip = nn.Sequential(
                nn.Conv2d(in_planes, in_planes, 3, stride=2, padding=1, groups=in_planes, bias=False),
                nn.BatchNorm2d(in_planes),
                nn.Conv2d(in_planes, out_planes, 1, bias=False),
                nn.BatchNorm2d(out_planes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs, out = [], x
        for idx, conv in enumerate(self.conv_list):
            out = self.avd_layer(conv(out)) if idx == 0 and self.stride == 2 else conv(out)
            outs.append(out)
        return torch.cat(outs, dim=1) + (self.skip(x) if self.stride == 2 else x)


class STDCNet(Backbone):
    """STDCNet: two stem convolutions and three stages of STDC blocks, returning the stride 2..32 features.

    The returned features are PaddleSeg's ``[x2, x4, x8, x16, x32]``; :attr:`feature_info` names the module
    ending each (``features.<i>``, or ``conv_last``) and :attr:`stage_ends` holds where each ends in ``features``.

    Args:
        base: channels of the second stem convolution; stage ``i`` ends with ``base * 2**(i + 2)`` channels.
        layers: blocks per stage (STDC1: ``(2, 2, 2)``, STDC2: ``(4, 5, 3)``).
        block_num: convolutions per STDC block.
        type: ``"cat"`` or ``"add"`` blocks.
        use_conv_last: add PaddleSeg's final 1x1 ConvBNRelu on the stride-32 feature.
        in_channels: channels of the input image.
        out_indices: which of the five features to return; all by default.
    """

    def __init__(self, *, base: int = 64, layers: Sequence[int] = (4, 5, 3), block_num: int = 4, type: str = "cat",
                 use_conv_last: bool = False, in_channels: int = 3, out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        block = {"cat": CatBottleneck, "add": AddBottleneck}.get(type)
        if block is None:
            raise ValueError(f"STDCNet type={type!r} must be 'cat' or 'add'")
        if len(layers) != 3:
            raise ValueError(f"STDCNet layers={tuple(layers)} must give the blocks of 3 stages, e.g. (2, 2, 2)")
        features: list[nn.Module] = [ConvBNAct(in_channels, base // 2, 3, stride=2),
                                     ConvBNAct(base // 2, base, 3, stride=2)]
        for i, depth in enumerate(layers):
            for j in range(depth):
                if i == 0 and j == 0:
                    features.append(block(base, base * 4, block_num, 2))
                elif j == 0:
                    features.append(block(base * 2 ** (i + 1), base * 2 ** (i + 2), block_num, 2))
                else:
                    features.append(block(base * 2 ** (i + 2), base * 2 ** (i + 2), block_num, 1))
        self.features = nn.Sequential(*features)
        ends = [1, 2]
        for depth in layers:
            ends.append(ends[-1] + depth)
        self.stage_ends = tuple(ends)
        self.use_conv_last = use_conv_last
        channels = [base // 2, base, base * 4, base * 8, base * 16]
        if use_conv_last:
            self.conv_last = ConvBNAct(base * 16, max(1024, base * 16), 1)
            channels[-1] = max(1024, base * 16)
        names = [f"features.{end - 1}" for end in ends]
        if use_conv_last:
            names[-1] = "conv_last"
        self._set_stages([stage(c, 2 ** (i + 1), n) for i, (c, n) in enumerate(zip(channels, names))], out_indices)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats, start = [], 0
        for end in self.stage_ends:
            for i in range(start, end):
                x = self.features[i](x)
            feats.append(x)
            start = end
        if self.use_conv_last:
            feats[-1] = self.conv_last(feats[-1])
        return self._select(feats)


def STDC1(**kwargs) -> STDCNet:
    """STDC1: blocks (2, 2, 2)."""
    return STDCNet(base=64, layers=(2, 2, 2), **kwargs)


def STDC2(**kwargs) -> STDCNet:
    """STDC2: blocks (4, 5, 3)."""
    return STDCNet(base=64, layers=(4, 5, 3), **kwargs)
