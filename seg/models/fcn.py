"""FCN and OCRNet on HRNet, ported from PaddleSeg's ``paddleseg/models/fcn.py`` and ``ocrnet.py``.

FCN: "Fully Convolutional Networks for Semantic Segmentation", Long et al., CVPR 2015,
https://arxiv.org/abs/1411.4038 — here PaddleSeg's HRNet variant, a 1x1 ConvBNReLU and a classifier on HRNet's
concatenated stride-4 feature. OCRNet: "Object-Contextual Representations for Semantic Segmentation", Yuan et al.,
ECCV 2020, https://arxiv.org/abs/1909.11065 — soft object regions from an auxiliary head, pixel-region attention,
and the augmented representation classified (PaddleSeg trains the two outputs with coefficients 1 and 0.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.hrnet import HRNet_W18, HRNet_W48
from oarkit.core.backbones.layers import ConvBNReLU, init_weights, resize
from oarkit.core.interop import PaddleMapping

from .zoo import register_paddleseg

PAPER_FCN = "Fully Convolutional Networks for Semantic Segmentation, https://arxiv.org/abs/1411.4038"
PAPER_OCR = "Object-Contextual Representations for Semantic Segmentation, https://arxiv.org/abs/1909.11065"


class FCNHead(nn.Module):
    def __init__(self, num_classes: int, backbone_indices: Sequence[int], backbone_channels: Sequence[int],
                 channels: int | None = None, bias: bool = True) -> None:
        super().__init__()
        self.backbone_indices = tuple(backbone_indices)
        channels = channels or backbone_channels[0]
        self.conv_1 = ConvBNReLU(backbone_channels[0], channels, 1, stride=1, bias=bias)
        self.cls = nn.Conv2d(channels, num_classes, 1, stride=1, bias=bias)

    def forward(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [self.cls(self.conv_1(feats[self.backbone_indices[0]]))]


class FCN(nn.Module):
    """FCN head on a backbone's feature (``backbone_indices``; PaddleSeg's HRNet has one)."""

    loss_coefs = (1.0,)

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int] = (-1,),
                 channels: int | None = None, align_corners: bool = False, bias: bool = True) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = FCNHead(num_classes, backbone_indices, [backbone.feat_channels[i] for i in backbone_indices],
                            channels, bias=bias)
        self.align_corners = align_corners
        init_weights(self)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [resize(logit, x.shape[2:], align_corners=self.align_corners) for logit in self.head(self.backbone(x))]


class SpatialGatherBlock(nn.Module):
    """Object-region representations: pixels averaged with each soft region's spatial softmax."""

    def __init__(self, pixels_channels: int, regions_channels: int) -> None:
        super().__init__()
        self.pixels_channels, self.regions_channels = pixels_channels, regions_channels

    def forward(self, pixels: torch.Tensor, regions: torch.Tensor) -> torch.Tensor:
        n = pixels.shape[0]
        pixels = pixels.reshape(n, self.pixels_channels, -1).transpose(1, 2)  # n, hw, c
        regions = torch.softmax(regions.reshape(n, self.regions_channels, -1), dim=2)  # n, k, hw
        return torch.bmm(regions, pixels).transpose(1, 2).unsqueeze(-1)  # n, c, k, 1


class ObjectAttentionBlock(nn.Module):
    """Pixel-to-region attention (queries: pixels; keys and values: region representations)."""

    def __init__(self, in_channels: int, key_channels: int) -> None:
        super().__init__()
        self.in_channels, self.key_channels = in_channels, key_channels
        self.f_pixel = nn.Sequential(ConvBNReLU(in_channels, key_channels, 1),
                                     ConvBNReLU(key_channels, key_channels, 1))
        self.f_object = nn.Sequential(ConvBNReLU(in_channels, key_channels, 1),
                                      ConvBNReLU(key_channels, key_channels, 1))
        self.f_down = ConvBNReLU(in_channels, key_channels, 1)
        self.f_up = ConvBNReLU(key_channels, in_channels, 1)

    def forward(self, x: torch.Tensor, proxy: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        query = self.f_pixel(x).reshape(n, self.key_channels, -1).transpose(1, 2)
        key = self.f_object(proxy).reshape(n, self.key_channels, -1)
        value = self.f_down(proxy).reshape(n, self.key_channels, -1).transpose(1, 2)
        sim = torch.softmax(torch.bmm(query, key) * self.key_channels**-0.5, dim=-1)
        context = torch.bmm(sim, value).transpose(1, 2).reshape(n, self.key_channels, h, w)
        return self.f_up(context)


class SpatialOCRModule(nn.Module):
    def __init__(self, in_channels: int, key_channels: int, out_channels: int, dropout_rate: float = 0.1) -> None:
        super().__init__()
        self.attention_block = ObjectAttentionBlock(in_channels, key_channels)
        self.conv1x1 = nn.Sequential(ConvBNReLU(2 * in_channels, out_channels, 1), nn.Dropout2d(dropout_rate))

    def forward(self, pixels: torch.Tensor, regions: torch.Tensor) -> torch.Tensor:
        return self.conv1x1(torch.cat([self.attention_block(pixels, regions), pixels], dim=1))


class OCRHead(nn.Module):
    def __init__(self, num_classes: int, in_channels: Sequence[int], ocr_mid_channels: int = 512,
                 ocr_key_channels: int = 256) -> None:
        super().__init__()
        self.spatial_gather = SpatialGatherBlock(ocr_mid_channels, num_classes)
        self.spatial_ocr = SpatialOCRModule(ocr_mid_channels, ocr_key_channels, ocr_mid_channels)
        self.indices = (-2, -1) if len(in_channels) > 1 else (-1, -1)
        self.conv3x3_ocr = ConvBNReLU(in_channels[self.indices[1]], ocr_mid_channels, 3, padding=1)
        self.cls_head = nn.Conv2d(ocr_mid_channels, num_classes, 1)
        shallow = in_channels[self.indices[0]]
        self.aux_head = nn.Sequential(ConvBNReLU(shallow, shallow, 1), nn.Conv2d(shallow, num_classes, 1))

    def forward(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        soft_regions = self.aux_head(feats[self.indices[0]])
        pixels = self.conv3x3_ocr(feats[self.indices[1]])
        ocr = self.spatial_ocr(pixels, self.spatial_gather(pixels, soft_regions))
        return [self.cls_head(ocr), soft_regions]


class OCRNet(nn.Module):
    """OCRNet.

    Args:
        num_classes: classes to segment.
        backbone: a backbone with ``feat_channels``.
        backbone_indices: one feature (used by both heads) or two (auxiliary, then pixel representation).
        ocr_mid_channels: channels of the pixel representation.
        ocr_key_channels: channels of the attention.
        align_corners: bilinear resize convention.
    """

    loss_coefs = (1.0, 0.4)

    def __init__(self, *, num_classes: int, backbone: nn.Module, backbone_indices: Sequence[int] = (0,),
                 ocr_mid_channels: int = 512, ocr_key_channels: int = 256, align_corners: bool = False) -> None:
        super().__init__()
        self.backbone = backbone
        self.backbone_indices = tuple(backbone_indices)
        self.head = OCRHead(num_classes, [backbone.feat_channels[i] for i in backbone_indices], ocr_mid_channels,
                            ocr_key_channels)
        self.align_corners = align_corners
        init_weights(self)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feats = self.backbone(x)
        logits = self.head([feats[i] for i in self.backbone_indices])
        if not self.training:
            logits = logits[:1]
        return [resize(logit, x.shape[2:], align_corners=self.align_corners) for logit in logits]


def _fcn(name: str, backbone: Any, miou: float, width: int, tags: tuple[str, ...] = ()) -> None:
    def factory(*, num_classes: int = 19, **kwargs: Any) -> FCN:
        return FCN(num_classes=num_classes, backbone=backbone(), **kwargs)

    factory.__name__ = factory.__qualname__ = name.split("/")[1]
    factory.__doc__ = f"FCN on HRNet-W{width}."
    register_paddleseg(name, family="fcn", config=f"fcn_hrnetw{width}_cityscapes_1024x512_80k", dataset="cityscapes",
                       miou=miou, paper=PAPER_FCN, classifier=("head.cls",), tags=tags,
                       paddle_mapping=PaddleMapping(source=f"paddleseg.models.FCN(backbone=paddleseg.models."
                                                           f"backbones.HRNet_W{width})"))(factory)


def _ocrnet(name: str, backbone: Any, miou: float, width: int, tags: tuple[str, ...] = ()) -> None:
    def factory(*, num_classes: int = 19, **kwargs: Any) -> OCRNet:
        return OCRNet(num_classes=num_classes, backbone=backbone(), **kwargs)

    factory.__name__ = factory.__qualname__ = name.split("/")[1]
    factory.__doc__ = f"OCRNet on HRNet-W{width}."
    register_paddleseg(name, family="ocrnet", config=f"ocrnet_hrnetw{width}_cityscapes_1024x512_160k",
                       dataset="cityscapes", miou=miou, paper=PAPER_OCR,
                       classifier=("head.cls_head", "head.aux_head.1"), tags=tags,
                       paddle_mapping=PaddleMapping(source=f"paddleseg.models.OCRNet(backbone=paddleseg.models."
                                                           f"backbones.HRNet_W{width})"))(factory)


_fcn("seg/fcn_hrnet_w18", HRNet_W18, 78.97, 18)
_fcn("seg/fcn_hrnet_w48", HRNet_W48, 80.70, 48, ("large",))
_ocrnet("seg/ocrnet_hrnet_w18", HRNet_W18, 80.67, 18)
_ocrnet("seg/ocrnet_hrnet_w48", HRNet_W48, 82.15, 48, ("large",))
