"""PSPNet on ResNet-vd, ported from PaddleSeg's ``paddleseg/models/pspnet.py``.

"Pyramid Scene Parsing Network", Zhao et al., CVPR 2017, https://arxiv.org/abs/1612.01105. A dilated ResNet
(output stride 8), the pyramid pooling module on stage 4 and an auxiliary head on stage 3 (PaddleSeg trains
it with coefficient 0.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.layers import init_weights, resize
from oarkit.core.backbones.resnet_vd import ResNet50_vd, ResNet101_vd
from oarkit.core.interop import PaddleMapping

from .layers import AuxLayer
from .pyramid_pool import PPModule
from .zoo import register_paddleseg

PAPER = "Pyramid Scene Parsing Network, https://arxiv.org/abs/1612.01105"


class PSPNetHead(nn.Module):
    def __init__(self, num_classes: int, backbone_indices: Sequence[int], backbone_channels: Sequence[int],
                 pp_out_channels: int, bin_sizes: Sequence[int], enable_auxiliary_loss: bool,
                 align_corners: bool) -> None:
        super().__init__()
        self.backbone_indices = tuple(backbone_indices)
        self.psp_module = PPModule(backbone_channels[1], pp_out_channels, bin_sizes, dim_reduction=True,
                                   align_corners=align_corners)
        self.dropout = nn.Dropout(p=0.1)
        self.conv = nn.Conv2d(pp_out_channels, num_classes, 1)
        self.enable_auxiliary_loss = enable_auxiliary_loss
        if enable_auxiliary_loss:
            self.auxlayer = AuxLayer(backbone_channels[0], backbone_channels[0] // 4, num_classes)

    def forward(self, feats: Sequence[torch.Tensor], training: bool) -> list[torch.Tensor]:
        logits = [self.conv(self.dropout(self.psp_module(feats[self.backbone_indices[1]])))]
        if self.enable_auxiliary_loss and training:
            logits.append(self.auxlayer(feats[self.backbone_indices[0]]))
        return logits


class PSPNet(nn.Module):
    """PSPNet.

    Args:
        num_classes: classes to segment.
        backbone: a four-stage backbone with ``feat_channels``.
        backbone_indices: the auxiliary head's feature, then the pyramid pooling's.
        pp_out_channels: channels after pyramid pooling.
        bin_sizes: pool sizes.
        enable_auxiliary_loss: add the auxiliary head (its logits are returned in training only).
        align_corners: bilinear resize convention.
    """

    loss_coefs = (1.0, 0.4)

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int] = (2, 3),
                 pp_out_channels: int = 1024, bin_sizes: Sequence[int] = (1, 2, 3, 6),
                 enable_auxiliary_loss: bool = True, align_corners: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        channels = [backbone.feat_channels[i] for i in backbone_indices]
        self.head = PSPNetHead(num_classes, backbone_indices, channels, pp_out_channels, bin_sizes,
                               enable_auxiliary_loss, align_corners)
        self.align_corners = align_corners
        init_weights(self.head)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        logits = self.head(self.backbone(x), self.training)
        return [resize(logit, x.shape[2:], align_corners=self.align_corners) for logit in logits]


#: PaddleSeg checkpoints keep this module's names (BatchNorm statistics aside)
PADDLE_MAPPING = PaddleMapping(source="paddleseg.models.PSPNet(backbone=paddleseg.models.backbones.ResNet*_vd)")
CARD: dict[str, Any] = {"family": "pspnet", "dataset": "cityscapes", "paper": PAPER,
                        "classifier": ("head.conv", "head.auxlayer.conv"), "paddle_mapping": PADDLE_MAPPING}


@register_paddleseg("seg/pspnet_resnet50_vd_os8", config="pspnet_resnet50_os8_cityscapes_1024x512_80k", miou=78.83,
                    **CARD)
def pspnet_resnet50_vd_os8(*, num_classes: int = 19, **kwargs: Any) -> PSPNet:
    """PSPNet on ResNet50-vd at output stride 8."""
    return PSPNet(num_classes=num_classes, backbone=ResNet50_vd(output_stride=8), **kwargs)


@register_paddleseg("seg/pspnet_resnet101_vd_os8", config="pspnet_resnet101_os8_cityscapes_1024x512_80k",
                    miou=80.48, tags=("large",), **CARD)
def pspnet_resnet101_vd_os8(*, num_classes: int = 19, **kwargs: Any) -> PSPNet:
    """PSPNet on ResNet101-vd at output stride 8."""
    return PSPNet(num_classes=num_classes, backbone=ResNet101_vd(output_stride=8), **kwargs)
