"""PP-LiteSeg, ported layer for layer from PaddleSeg's ``paddleseg/models/pp_liteseg.py``.

"PP-LiteSeg: A Superior Real-Time Semantic Segmentation Model", Peng et al., 2022, https://arxiv.org/abs/2204.02681.
An STDC backbone, a Simple Pyramid Pooling Module (SPPM) on the stride-32 feature, and a Flexible Lightweight
Decoder of Unified Attention Fusion Modules (UAFM, spatial attention) that fuse it back up to stride 8.
PP-LiteSeg-T is STDC1 with the narrow decoder (``arm_out_chs=(32, 64, 128)``), PP-LiteSeg-B is STDC2 with the
default (64, 96, 128). In training the model returns the logits of its three heads (deep supervision, PaddleSeg
trains them with OHEM cross-entropy and coefficients 1, 1, 1); in eval mode only the stride-8 head.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.layers import ConvBN, ConvBNReLU, init_weights, resize
from oarkit.core.backbones.stdcnet import STDC1, STDC2
from oarkit.core.interop import PaddleMapping

from .zoo import register_paddleseg

PAPER = "PP-LiteSeg: A Superior Real-Time Semantic Segmentation Model, https://arxiv.org/abs/2204.02681"


def avg_max_reduce_channel(xs: Sequence[torch.Tensor]) -> torch.Tensor:
    """``[mean_c(x0), max_c(x0), mean_c(x1), max_c(x1), ...]`` stacked on the channel axis."""
    out = []
    for x in xs:
        out += [x.mean(dim=1, keepdim=True), x.amax(dim=1, keepdim=True)]
    return torch.cat(out, dim=1)


class UAFM(nn.Module):
    """Unified Attention Fusion Module, the base: ``conv_out(conv_x(low) + upsample(high))``.

    Args:
        x_ch: channels of the low-level (larger) feature.
        y_ch: channels of the high-level (smaller) feature.
        out_ch: output channels.
        ksize: kernel of the convolution on the low-level feature.
        resize_mode: interpolation of the high-level feature.
    """

    def __init__(self, x_ch: int, y_ch: int, out_ch: int, ksize: int = 3, resize_mode: str = "bilinear") -> None:
        super().__init__()
        self.conv_x = ConvBNReLU(x_ch, y_ch, ksize, padding=ksize // 2, bias=False)
        self.conv_out = ConvBNReLU(y_ch, out_ch, 3, padding=1, bias=False)
        self.resize_mode = resize_mode

    def upsample(self, y: torch.Tensor, size: torch.Size) -> torch.Tensor:
        if self.resize_mode in ("bilinear", "bicubic"):
            return F.interpolate(y, size=size, mode=self.resize_mode, align_corners=False)
        return F.interpolate(y, size=size, mode=self.resize_mode)

    def fuse_features(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # PaddleSeg calls this ``fuse``; renamed because export treats a ``fuse()`` method as re-parameterization
        return self.conv_out(x + y)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        x = self.conv_x(x)
        return self.fuse_features(x, self.upsample(y, x.shape[2:]))


class UAFM_SpAtten(UAFM):
    """UAFM with spatial attention from the channel-wise mean and max of both inputs."""

    def __init__(self, x_ch: int, y_ch: int, out_ch: int, ksize: int = 3, resize_mode: str = "bilinear") -> None:
        super().__init__(x_ch, y_ch, out_ch, ksize, resize_mode)
        self.conv_xy_atten = nn.Sequential(ConvBNReLU(4, 2, 3, padding=1, bias=False),
                                           ConvBN(2, 1, 3, padding=1, bias=False))
        # A constant 1 that PaddleSeg keeps as a frozen parameter (so its quantised graphs stay float).
        self.register_buffer("_scale", torch.ones(1))

    def fuse_features(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        atten = torch.sigmoid(self.conv_xy_atten(avg_max_reduce_channel([x, y])))
        return self.conv_out(x * atten + y * (self._scale - atten))


class PPContextModule(nn.Module):
    """Simple Pyramid Pooling Module: pooled 1x1 branches summed (not concatenated), then a 3x3 ConvBNReLU."""

    def __init__(self, in_channels: int, inter_channels: int, out_channels: int, bin_sizes: Sequence[int],
                 align_corners: bool = False) -> None:
        super().__init__()
        stage = lambda size: nn.Sequential(nn.AdaptiveAvgPool2d(size), ConvBNReLU(in_channels, inter_channels, 1))  # noqa: E731
        self.stages = nn.ModuleList([stage(size) for size in bin_sizes])
        self.conv_out = ConvBNReLU(inter_channels, out_channels, 3, padding=1)
        self.align_corners = align_corners

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = None
        for stage in self.stages:
            y = resize(stage(x), x.shape[2:], align_corners=self.align_corners)
            out = y if out is None else out + y
        return self.conv_out(out)


class PPLiteSegHead(nn.Module):
    """The decoder: SPPM on the deepest feature, then one UAFM per selected feature, deepest first."""

    def __init__(self, backbone_out_chs: Sequence[int], arm_out_chs: Sequence[int], cm_bin_sizes: Sequence[int],
                 cm_out_ch: int, resize_mode: str) -> None:
        super().__init__()
        self.cm = PPContextModule(backbone_out_chs[-1], cm_out_ch, cm_out_ch, cm_bin_sizes)
        self.arm_list = nn.ModuleList()
        for i, low_ch in enumerate(backbone_out_chs):
            high_ch = cm_out_ch if i == len(backbone_out_chs) - 1 else arm_out_chs[i + 1]
            self.arm_list.append(UAFM_SpAtten(low_ch, high_ch, arm_out_chs[i], ksize=3, resize_mode=resize_mode))

    def forward(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        high = self.cm(feats[-1])
        outs: list[torch.Tensor] = []
        for i in reversed(range(len(feats))):
            high = self.arm_list[i](feats[i], high)
            outs.insert(0, high)
        return outs


class SegHead(nn.Module):
    """A 3x3 ConvBNReLU and the 1x1 classifier."""

    def __init__(self, in_chan: int, mid_chan: int, n_classes: int) -> None:
        super().__init__()
        self.conv = ConvBNReLU(in_chan, mid_chan, 3, padding=1, bias=False)
        self.conv_out = nn.Conv2d(mid_chan, n_classes, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_out(self.conv(x))


class PPLiteSeg(nn.Module):
    """PP-LiteSeg.

    Args:
        num_classes: classes to segment.
        backbone: a module with ``feat_channels`` returning the stride 2..32 features.
        backbone_indices: the features the decoder fuses (stride 8, 16, 32).
        cm_bin_sizes: pool sizes of the SPPM.
        cm_out_ch: channels of the SPPM.
        arm_out_chs: output channels of each UAFM (stride 8, 16, 32).
        seg_head_inter_chs: middle channels of each head.
        resize_mode: interpolation inside the decoder.
    """

    #: loss coefficients of the training outputs (PaddleSeg's recipe)
    loss_coefs = (1.0, 1.0, 1.0)

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int] = (2, 3, 4),
                 cm_bin_sizes: Sequence[int] = (1, 2, 4), cm_out_ch: int = 128,
                 arm_out_chs: Sequence[int] = (64, 96, 128), seg_head_inter_chs: Sequence[int] = (64, 64, 64),
                 resize_mode: str = "bilinear") -> None:
        super().__init__()
        if len(backbone_indices) < 2 or max(backbone_indices) >= len(backbone.feat_channels):
            raise ValueError(f"backbone_indices {tuple(backbone_indices)} must name at least two of the "
                             f"{len(backbone.feat_channels)} backbone features")
        if not len(arm_out_chs) == len(seg_head_inter_chs) == len(backbone_indices):
            raise ValueError("arm_out_chs, seg_head_inter_chs and backbone_indices must have the same length")
        self.backbone = backbone
        self.backbone_indices = tuple(backbone_indices)
        backbone_out_chs = [backbone.feat_channels[i] for i in backbone_indices]
        self.ppseg_head = PPLiteSegHead(backbone_out_chs, arm_out_chs, cm_bin_sizes, cm_out_ch, resize_mode)
        self.seg_heads = nn.ModuleList([SegHead(c, m, num_classes) for c, m in zip(arm_out_chs, seg_head_inter_chs)])
        init_weights(self)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = self.backbone(x)
        head_feats = self.ppseg_head([feats[i] for i in self.backbone_indices])
        if self.training:
            return [resize(head(f), x.shape[2:]) for head, f in zip(self.seg_heads, head_feats)]
        return [resize(self.seg_heads[0](head_feats[0]), x.shape[2:])]


def _drop_stdc_aliases(state: dict[str, Any], model: nn.Module) -> dict[str, Any]:
    """PaddleSeg's STDC also stores its features under ``x2 .. x32`` and an unused ``conv_last``: keep one copy."""
    skip = ("backbone.x2.", "backbone.x4.", "backbone.x8.", "backbone.x16.", "backbone.x32.")
    own = model.state_dict()
    return {k: v for k, v in state.items() if not k.startswith(skip) and (k in own or "conv_last" not in k)}


#: PaddleSeg checkpoints keep this module's names (BatchNorm statistics aside); older STDC checkpoints also carry
#: the ``x2 .. x32`` aliases and an unused ``conv_last``, left out.
PADDLE_MAPPING = PaddleMapping(drop=(r"^backbone\.x(2|4|8|16|32)\.", r"^backbone\.conv_last\."),
                               source="paddleseg.models.PPLiteSeg(backbone=paddleseg.models.backbones.STDC1/2)")
HEADS = ("seg_heads.0.conv_out", "seg_heads.1.conv_out", "seg_heads.2.conv_out")
CARD: dict[str, Any] = {"family": "pp_liteseg", "dataset": "cityscapes", "paper": PAPER, "classifier": HEADS,
                        "state_dict_filter": _drop_stdc_aliases, "paddle_mapping": PADDLE_MAPPING}


@register_paddleseg("seg/pp_liteseg_stdc1", config="pp_liteseg_stdc1_cityscapes_1024x512_scale0.5_160k",
                    miou=73.10, **CARD)
def pp_liteseg_stdc1(*, num_classes: int = 19, **kwargs: Any) -> PPLiteSeg:
    """PP-LiteSeg-T: STDC1 and the narrow decoder."""
    return PPLiteSeg(num_classes=num_classes, backbone=STDC1(), arm_out_chs=(32, 64, 128),
                     seg_head_inter_chs=(32, 64, 64), **kwargs)


@register_paddleseg("seg/pp_liteseg_stdc2", config="pp_liteseg_stdc2_cityscapes_1024x512_scale0.5_160k",
                    miou=75.25, **CARD)
def pp_liteseg_stdc2(*, num_classes: int = 19, **kwargs: Any) -> PPLiteSeg:
    """PP-LiteSeg-B: STDC2 and the default decoder."""
    return PPLiteSeg(num_classes=num_classes, backbone=STDC2(), **kwargs)
