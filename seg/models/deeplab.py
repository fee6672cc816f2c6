"""DeepLabV3 and DeepLabV3+ on ResNet-vd, ported from PaddleSeg's ``paddleseg/models/deeplab.py``.

DeepLabV3: "Rethinking Atrous Convolution for Semantic Image Segmentation", Chen et al., 2017,
https://arxiv.org/abs/1706.05587 — ASPP with image pooling on a dilated backbone. DeepLabV3+: "Encoder-Decoder
with Atrous Separable Convolution for Semantic Image Segmentation", Chen et al., ECCV 2018,
https://arxiv.org/abs/1802.02611 — separable ASPP and a decoder that fuses the stride-4 feature.
PaddleSeg's recipes run the backbone at output stride 8 (multi-grid 1, 2, 4, ASPP rates 1, 12, 24, 36); at output
stride 16 the rates are 1, 6, 12, 18. The parameters do not depend on the output stride, so the OS16 variants
carry the OS8 release (its mIoU was measured at OS8).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.layers import ConvBNReLU, SeparableConvBNReLU, init_weights, resize
from oarkit.core.backbones.resnet_vd import ResNet50_vd, ResNet101_vd
from oarkit.core.interop import PaddleMapping

from .pyramid_pool import ASPPModule
from .zoo import register_paddleseg

PAPER_V3 = "Rethinking Atrous Convolution for Semantic Image Segmentation, https://arxiv.org/abs/1706.05587"
PAPER_V3P = ("Encoder-Decoder with Atrous Separable Convolution for Semantic Image Segmentation, "
             "https://arxiv.org/abs/1802.02611")
#: output stride -> (ASPP rates, multi-grid of stage 4)
SETTINGS = {8: ((1, 12, 24, 36), (1, 2, 4)), 16: ((1, 6, 12, 18), (1, 2, 4))}


class Decoder(nn.Module):
    """DeepLabV3+'s decoder: 48-channel projection of the low-level feature, two separable 3x3, classifier."""

    def __init__(self, num_classes: int, in_channels: int, align_corners: bool) -> None:
        super().__init__()
        self.conv_bn_relu1 = ConvBNReLU(in_channels, 48, 1)
        self.conv_bn_relu2 = SeparableConvBNReLU(304, 256, 3, padding=1)
        self.conv_bn_relu3 = SeparableConvBNReLU(256, 256, 3, padding=1)
        self.conv = nn.Conv2d(256, num_classes, 1)
        self.align_corners = align_corners

    def forward(self, x: torch.Tensor, low_level_feat: torch.Tensor) -> torch.Tensor:
        low = self.conv_bn_relu1(low_level_feat)
        x = resize(x, low.shape[2:], align_corners=self.align_corners)
        return self.conv(self.conv_bn_relu3(self.conv_bn_relu2(torch.cat([x, low], dim=1))))


class DeepLabV3PHead(nn.Module):
    def __init__(self, num_classes: int, backbone_indices: Sequence[int], backbone_channels: Sequence[int],
                 aspp_ratios: Sequence[int], aspp_out_channels: int, align_corners: bool) -> None:
        super().__init__()
        self.aspp = ASPPModule(aspp_ratios, backbone_channels[1], aspp_out_channels, align_corners,
                               use_sep_conv=True, image_pooling=True)
        self.decoder = Decoder(num_classes, backbone_channels[0], align_corners)
        self.backbone_indices = tuple(backbone_indices)

    def forward(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        low, high = feats[self.backbone_indices[0]], feats[self.backbone_indices[1]]
        return [self.decoder(self.aspp(high), low)]


class DeepLabV3Head(nn.Module):
    def __init__(self, num_classes: int, backbone_indices: Sequence[int], backbone_channels: Sequence[int],
                 aspp_ratios: Sequence[int], aspp_out_channels: int, align_corners: bool) -> None:
        super().__init__()
        self.aspp = ASPPModule(aspp_ratios, backbone_channels[0], aspp_out_channels, align_corners,
                               use_sep_conv=False, image_pooling=True)
        self.cls = nn.Conv2d(aspp_out_channels, num_classes, 1)
        self.backbone_indices = tuple(backbone_indices)

    def forward(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [self.cls(self.aspp(feats[self.backbone_indices[0]]))]


class _DeepLab(nn.Module):
    loss_coefs = (1.0,)
    head_class: type[nn.Module]

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int],
                 aspp_ratios: Sequence[int] = (1, 6, 12, 18), aspp_out_channels: int = 256,
                 align_corners: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        channels = [backbone.feat_channels[i] for i in backbone_indices]
        self.head = self.head_class(num_classes, backbone_indices, channels, aspp_ratios, aspp_out_channels,
                                    align_corners)
        self.align_corners = align_corners
        init_weights(self.head)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [resize(logit, x.shape[2:], align_corners=self.align_corners) for logit in self.head(self.backbone(x))]


class DeepLabV3P(_DeepLab):
    """DeepLabV3+ (``backbone_indices``: the low-level feature, then the ASPP input)."""

    head_class = DeepLabV3PHead

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int] = (0, 3),
                 **kwargs: Any) -> None:
        super().__init__(num_classes=num_classes, backbone=backbone, backbone_indices=backbone_indices, **kwargs)


class DeepLabV3(_DeepLab):
    """DeepLabV3 (``backbone_indices``: the ASPP input)."""

    head_class = DeepLabV3Head

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int] = (3,),
                 **kwargs: Any) -> None:
        super().__init__(num_classes=num_classes, backbone=backbone, backbone_indices=backbone_indices, **kwargs)


def _build(model: type[_DeepLab], backbone: Any, output_stride: int, num_classes: int, kwargs: dict) -> _DeepLab:
    rates, grid = SETTINGS[output_stride]
    return model(num_classes=num_classes, backbone=backbone(output_stride=output_stride, multi_grid=grid),
                 aspp_ratios=kwargs.pop("aspp_ratios", rates), **kwargs)


def _register(name: str, model: type[_DeepLab], backbone: Any, depth: int, output_stride: int, miou: float) -> None:
    family = "deeplabv3p" if model is DeepLabV3P else "deeplabv3"
    config = f"{family}_resnet{depth}_os8_cityscapes_1024x512_80k"
    heads = ("head.decoder.conv",) if model is DeepLabV3P else ("head.cls",)
    tags = (("large",) if depth == 101 else ()) + (("os8-weights",) if output_stride != 8 else ())
    extra = {} if output_stride == 8 else {"metrics_source": f"PaddleSeg model zoo, configs/{family}/README.md "
                                                             "(cityscapes val, single scale, measured at OS8)"}

    def factory(*, num_classes: int = 19, **kwargs: Any) -> _DeepLab:
        return _build(model, backbone, output_stride, num_classes, kwargs)

    factory.__name__ = factory.__qualname__ = name.split("/")[1]
    factory.__doc__ = f"{model.__name__} on ResNet{depth}-vd at output stride {output_stride}."
    paper = PAPER_V3P if model is DeepLabV3P else PAPER_V3
    # PaddleSeg checkpoints keep this module's names (BatchNorm statistics aside)
    mapping = PaddleMapping(source=f"paddleseg.models.{model.__name__}(backbone=paddleseg.models.backbones."
                                   f"ResNet{depth}_vd)")
    register_paddleseg(name, family=family, config=config, dataset="cityscapes", miou=miou, paper=paper,
                       classifier=heads, tags=tags, paddle_mapping=mapping, **extra)(factory)


for _model, _prefix, _scores in ((DeepLabV3, "deeplabv3", {50: 79.90, 101: 80.85}),
                                 (DeepLabV3P, "deeplabv3p", {50: 80.36, 101: 81.10})):
    for _depth, _backbone in ((50, ResNet50_vd), (101, ResNet101_vd)):
        for _os in (8, 16):
            _register(f"seg/{_prefix}_resnet{_depth}_vd_os{_os}", _model, _backbone, _depth, _os, _scores[_depth])
