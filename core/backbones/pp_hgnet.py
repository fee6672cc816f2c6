"""PP-HGNet in PaddleOCR's layout: the backbone of PP-OCRv4's server detector and recognizer.

PP-HGNet (PaddleClas, "PP-HGNet: a high-performance GPU network", 2022; no paper, see PaddleClas
``docs/en/models/PP-HGNet_en.md``): a stem of three 3x3 ConvBN-ReLU, then stages of HG blocks - a chain of
3x3 ConvBN-ReLU layers whose outputs are concatenated with the input, aggregated by a 1x1 ConvBN-ReLU and gated by
effective squeeze-and-excitation (ESE: one 1x1 convolution, sigmoid). Each stage but the first in detection starts
with a depthwise 3x3 ConvBN (no activation) that strides.

:class:`PPHGNet` mirrors PaddleOCR ``ppocr/modeling/backbones/rec_hgnet.py`` ``PPHGNet`` (module paths
``stem.<i>.conv``/``.bn``, ``stages.<s>.downsample``, ``stages.<s>.blocks.<b>.layers.<l>``,
``...aggregation_conv``, ``...att.conv``). ``oarkit.clas``'s PP-HGNet is timm's layout of PaddleClas' model,
with other names. With ``det=True`` a 3x3 max pool follows the stem and the four stage outputs (strides 4, 8, 16,
32) are returned; otherwise the recognizer's strides keep the width (``(2, 1)``) and the last feature is pooled to
height 1 (``avg_pool2d((3, 2))`` in eval mode, ``adaptive_avg_pool2d((1, 40))`` in training, as PaddleOCR does).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .base import Backbone, stage
from .layers import ConvBNAct, Size2

#: per stage: input, middle and output channels, blocks, whether it downsamples, its stride
StageConfig = tuple[int, int, int, int, bool, Size2]

SMALL_DET: list[StageConfig] = [(128, 128, 256, 1, False, 2), (256, 160, 512, 1, True, 2),
                                (512, 192, 768, 2, True, 2), (768, 224, 1024, 1, True, 2)]
SMALL_REC: list[StageConfig] = [(128, 128, 256, 1, True, (2, 1)), (256, 160, 512, 1, True, (1, 2)),
                                (512, 192, 768, 2, True, (2, 1)), (768, 224, 1024, 1, True, (2, 1))]


class ESEModule(nn.Module):
    """Effective squeeze-and-excitation: ``x * sigmoid(conv(avg_pool(x)))``."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.conv(F.adaptive_avg_pool2d(x, 1)))


class HG_Block(nn.Module):
    """``layer_num`` 3x3 ConvBN-ReLU in a chain, all outputs (and the input) aggregated by a 1x1 ConvBN-ReLU,
    ESE, and a residual connection when ``identity``."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, layer_num: int,
                 identity: bool = False) -> None:
        super().__init__()
        self.identity = identity
        self.layers = nn.ModuleList([ConvBNAct(in_channels if i == 0 else mid_channels, mid_channels, 3)
                                     for i in range(layer_num)])
        self.aggregation_conv = ConvBNAct(in_channels + layer_num * mid_channels, out_channels, 1)
        self.att = ESEModule(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outputs = [x]
        y = x
        for layer in self.layers:
            y = layer(y)
            outputs.append(y)
        y = self.att(self.aggregation_conv(torch.cat(outputs, dim=1)))
        return y + x if self.identity else y


class HG_Stage(nn.Module):
    """An optional depthwise strided ConvBN (``downsample``) and ``block_num`` HG blocks."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int, block_num: int, layer_num: int,
                 downsample: bool, stride: Size2) -> None:
        super().__init__()
        self.downsample = (ConvBNAct(in_channels, in_channels, 3, stride=stride, groups=in_channels, act=None)
                           if downsample else None)
        self.blocks = nn.Sequential(*[HG_Block(in_channels if i == 0 else out_channels, mid_channels, out_channels,
                                               layer_num, identity=i > 0) for i in range(block_num)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(self.downsample(x) if self.downsample is not None else x)


def _pair(s: Size2) -> tuple[int, int]:
    return s if isinstance(s, tuple) else (s, s)


class PPHGNet(Backbone):
    """PP-HGNet in PaddleOCR's detection (``det=True``) or recognition layout.

    Args:
        stem_channels: output channels of the three stem convolutions.
        stage_config: one :data:`StageConfig` per stage.
        layer_num: 3x3 layers per HG block.
        det: the detection layout (a max pool after the stem, four features) instead of the recognition one.
        in_channels: channels of the input image.
        out_indices: with ``det=True``, which of the four stage features to return; all by default.
    """

    def __init__(self, *, stem_channels: Sequence[int], stage_config: Sequence[StageConfig], layer_num: int,
                 det: bool = False, in_channels: int = 3, out_indices: Sequence[int] | None = None) -> None:
        super().__init__()
        if not det and out_indices is not None:
            raise ValueError("PPHGNet out_indices applies to det=True only: the recognizer returns one feature")
        self.det = det
        chans = [in_channels, *stem_channels]
        self.stem = nn.Sequential(*[ConvBNAct(chans[i], chans[i + 1], 3, stride=2 if i == 0 else 1)
                                    for i in range(len(stem_channels))])
        self.pool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1) if det else None
        self.stages = nn.ModuleList([HG_Stage(*cfg[:4], layer_num, cfg[4], cfg[5]) for cfg in stage_config])
        height = width = 4 if det else 2
        stages = []
        for i, cfg in enumerate(stage_config):
            if cfg[4]:
                sh, sw = _pair(cfg[5])
                height, width = height * sh, width * sw
            stages.append(stage(cfg[2], height if height == width else (height, width), f"stages.{i}"))
        if det:
            self._set_stages(stages, out_indices)
        else:
            self._set_stages([stage(stage_config[-1][2], (height * 3, width * 2), "stages.3")])

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem(x)
        if self.pool is not None:
            x = self.pool(x)
        feats = []
        for s in self.stages:
            x = s(x)
            feats.append(x)
        if self.det:
            return self._select(feats)
        if self.training:
            return [F.adaptive_avg_pool2d(x, (1, 40))]
        return [F.avg_pool2d(x, (3, 2))]


def PPHGNet_small(*, det: bool = False, **kwargs) -> PPHGNet:
    """PaddleOCR's ``PPHGNet_small`` (PP-OCRv4 server): stem 64-64-128, HG blocks of 6 layers."""
    return PPHGNet(stem_channels=(64, 64, 128), stage_config=SMALL_DET if det else SMALL_REC, layer_num=6, det=det,
                   **kwargs)
