"""PP-MobileSeg, ported from PaddleSeg's ``paddleseg/models/pp_mobileseg.py``.

"PP-MobileSeg: Explore the Fast and Accurate Semantic Segmentation Model on Mobile Devices", Tang et al., 2023,
https://arxiv.org/abs/2304.05152. A StrideFormer backbone (see :mod:`.strideformer`) and a light head: a
depthwise 1x1 ConvBNAct, dropout and the classifier, upsampled bilinearly to the input. PaddleSeg's Valid
Interpolate Module (``upsample="vim"``) is an export-time shortcut that returns label maps instead of logits; the
oarkit model always returns logits (the predictor takes the argmax).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.layers import resize
from oarkit.core.interop import PaddleMapping

from .strideformer import ConvBNAct, MobileSeg_Base, MobileSeg_Tiny
from .zoo import register_paddleseg

PAPER = ("PP-MobileSeg: Explore the Fast and Accurate Semantic Segmentation Model on Mobile Devices, "
         "https://arxiv.org/abs/2304.05152")
URL = "https://bj.bcebos.com/paddleseg/dygraph/ade20k/{}/model.pdparams"


class PPMobileSegHead(nn.Module):
    """Depthwise (or plain) 1x1 ConvBNAct with ReLU, 2-d dropout, 1x1 classifier."""

    def __init__(self, num_classes: int, in_channels: int, use_dw: bool = True, dropout_ratio: float = 0.1) -> None:
        super().__init__()
        self.linear_fuse = ConvBNAct(in_channels, in_channels, 1, groups=in_channels if use_dw else 1, act=nn.ReLU)
        self.dropout = nn.Dropout2d(dropout_ratio)
        self.conv_seg = nn.Conv2d(in_channels, num_classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_seg(self.dropout(self.linear_fuse(x)))


class PPMobileSeg(nn.Module):
    """PP-MobileSeg.

    Args:
        num_classes: classes to segment.
        backbone: a StrideFormer (one fused feature, ``feat_channels`` of length 1).
        head_use_dw: depthwise fusion convolution in the head.
        align_corners: bilinear resize convention of the final upsampling.
    """

    loss_coefs = (1.0,)

    def __init__(self, *, num_classes: int, backbone: nn.Module, head_use_dw: bool = True,
                 align_corners: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        self.decode_head = PPMobileSegHead(num_classes, backbone.feat_channels[0], use_dw=head_use_dw)
        self.align_corners = align_corners

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [resize(self.decode_head(self.backbone(x)), x.shape[2:], align_corners=self.align_corners)]


#: PaddleSeg checkpoints keep this module's names (BatchNorm statistics aside)
PADDLE_MAPPING = PaddleMapping(source="paddleseg.models.PPMobileSeg(backbone=paddleseg.models.backbones."
                                      "MobileSeg_Tiny/MobileSeg_Base)")
CARD: dict[str, Any] = {"family": "pp_mobileseg", "dataset": "ade20k", "paper": PAPER,
                        "classifier": ("decode_head.conv_seg",), "imagenet_norm": True,
                        "paddle_mapping": PADDLE_MAPPING}


# PaddleSeg's current configs/pp_mobileseg/README.md: both released models trained 80k iterations at a total batch
# of 32 (the *_80k.yml configs); Tiny's model.pdparams link is listed at 36.39 with its training log (an earlier
# README listed the same link at 36.70 beside a 160k config).
@register_paddleseg("seg/pp_mobileseg_tiny", config="pp_mobileseg_tiny_ade20k_512x512_80k", miou=36.39,
                    url=URL.format("pp_mobileseg_tiny"), **CARD)
def pp_mobileseg_tiny(*, num_classes: int = 150, **kwargs: Any) -> PPMobileSeg:
    """PP-MobileSeg-Tiny: StrideFormer-Tiny with the stride-16 AAM."""
    return PPMobileSeg(num_classes=num_classes, backbone=MobileSeg_Tiny(inj_type="AAM", out_feat_chs=(32, 64, 128)),
                       **kwargs)


@register_paddleseg("seg/pp_mobileseg_base", config="pp_mobileseg_base_ade20k_512x512_80k", miou=41.57,
                    url=URL.format("pp_mobileseg_base"), **CARD)
def pp_mobileseg_base(*, num_classes: int = 150, **kwargs: Any) -> PPMobileSeg:
    """PP-MobileSeg-Base: StrideFormer-Base with the stride-8 AAM."""
    return PPMobileSeg(num_classes=num_classes,
                       backbone=MobileSeg_Base(inj_type="AAMSx8", out_feat_chs=(64, 128, 192)), **kwargs)
