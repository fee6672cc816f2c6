"""BiSeNetV1 and BiSeNetV2, ported from PaddleSeg's ``paddleseg/models/bisenetv1.py`` and ``bisenet.py``.

V1: "BiSeNet: Bilateral Segmentation Network for Real-time Semantic Segmentation", Yu et al., ECCV 2018,
https://arxiv.org/abs/1808.00897 — a spatial path, a ResNet-18-vd context path with attention refinement, and a
feature fusion module. V2: "BiSeNet V2: Bilateral Network with Guided Aggregation for Real-time Semantic
Segmentation", Yu et al., IJCV 2021, https://arxiv.org/abs/2004.02147 — a wide shallow detail branch, a narrow
deep semantic branch and bilateral guided aggregation. Both return auxiliary logits in training.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.layers import ConvBN, ConvBNReLU, DepthwiseConvBN, init_weights, resize
from oarkit.core.backbones.resnet_vd import ResNet18_vd
from oarkit.core.interop import PaddleMapping

from .zoo import register_paddleseg

PAPER_V1 = "BiSeNet: Bilateral Segmentation Network for Real-time Semantic Segmentation, https://arxiv.org/abs/1808.00897"
PAPER_V2 = ("BiSeNet V2: Bilateral Network with Guided Aggregation for Real-time Semantic Segmentation, "
            "https://arxiv.org/abs/2004.02147")


# ----------------------------------------------------------------------------------------------------- BiSeNetV1
class SpatialPath(nn.Module):
    """Three stride-2 convolutions (7x7, 3x3, 3x3) and a 1x1: a stride-8 feature with spatial detail."""

    def __init__(self, in_channels: int, out_channels: int, inner_channel: int = 64) -> None:
        super().__init__()
        self.conv_7x7 = ConvBNReLU(in_channels, inner_channel, 7, stride=2, padding=3, bias=False)
        self.conv_3x3_1 = ConvBNReLU(inner_channel, inner_channel, 3, stride=2, padding=1, bias=False)
        self.conv_3x3_2 = ConvBNReLU(inner_channel, inner_channel, 3, stride=2, padding=1, bias=False)
        self.conv_1x1 = ConvBNReLU(inner_channel, out_channels, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_1x1(self.conv_3x3_2(self.conv_3x3_1(self.conv_7x7(x))))


class BiSeNetHead(nn.Module):
    """3x3 ConvBNReLU, 1x1 classifier, bilinear upsampling by ``scale`` (align_corners, as PaddleSeg)."""

    def __init__(self, in_channels: int, out_channels: int, scale: int, is_aux: bool = False) -> None:
        super().__init__()
        inner = 128 if is_aux else 64
        self.conv_3x3 = ConvBNReLU(in_channels, inner, 3, padding=1, bias=False)
        self.conv_1x1 = nn.Conv2d(inner, out_channels, 1)
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_1x1(self.conv_3x3(x))
        if self.scale > 1:
            x = F.interpolate(x, scale_factor=self.scale, mode="bilinear", align_corners=True)
        return x


class AttentionRefinement(nn.Module):
    """3x3 ConvBNReLU re-weighted by a global-pooling channel attention."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv_3x3 = ConvBNReLU(in_channels, out_channels, 3, padding=1, bias=False)
        self.channel_attention = nn.Sequential(nn.AdaptiveAvgPool2d(1),
                                               ConvBNReLU(out_channels, out_channels, 1, bias=False), nn.Sigmoid())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_3x3(x)
        return x * self.channel_attention(x)


class FeatureFusion(nn.Module):
    """Concatenate the two paths, 1x1 ConvBNReLU, add its channel-attention-weighted self."""

    def __init__(self, in_channels: int, out_channels: int, reduction: int = 1) -> None:
        super().__init__()
        self.conv_1x1 = ConvBNReLU(in_channels, out_channels, 1, bias=False)
        self.channel_attention = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), ConvBNReLU(out_channels, out_channels // reduction, 1, bias=False),
            ConvBNReLU(out_channels // reduction, out_channels, 1, bias=False), nn.Sigmoid())

    def forward(self, x1: torch.Tensor, x2: torch.Tensor) -> torch.Tensor:
        fm = self.conv_1x1(torch.cat([x1, x2], dim=1))
        return fm + fm * self.channel_attention(fm)


class BiseNetV1(nn.Module):
    """BiSeNetV1 on a four-stage backbone (PaddleSeg: ResNet18_vd at output stride 8).

    Args:
        num_classes: classes to segment.
        backbone: returns four features with ``feat_channels`` ending in (..., 256, 512).
        conv_channel: channels of the context path.
    """

    loss_coefs = (1.0, 1.0, 1.0)

    def __init__(self, *, num_classes: int, backbone: nn.Module, conv_channel: int = 128) -> None:
        super().__init__()
        self.backbone = backbone
        self.spatial_path = SpatialPath(3, 128)
        self.global_context = nn.Sequential(nn.AdaptiveAvgPool2d(1), ConvBNReLU(512, conv_channel, 1, bias=False))
        self.arms = nn.ModuleList([AttentionRefinement(512, conv_channel), AttentionRefinement(256, conv_channel)])
        self.refines = nn.ModuleList([ConvBNReLU(conv_channel, conv_channel, 3, padding=1, bias=False)
                                      for _ in range(2)])
        self.heads = nn.ModuleList([BiSeNetHead(conv_channel, num_classes, 8, True),
                                    BiSeNetHead(conv_channel, num_classes, 8, True),
                                    BiSeNetHead(conv_channel * 2, num_classes, 8, False)])
        self.ffm = FeatureFusion(conv_channel * 2, conv_channel * 2, 1)
        init_weights(self)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        spatial = self.spatial_path(x)
        blocks = self.backbone(x)[::-1]
        last = F.interpolate(self.global_context(blocks[0]), size=blocks[0].shape[2:], mode="bilinear",
                             align_corners=True)
        preds = []
        for i, (arm, refine) in enumerate(zip(self.arms, self.refines)):
            fm = arm(blocks[i]) + last
            last = refine(F.interpolate(fm, size=blocks[i + 1].shape[2:], mode="bilinear", align_corners=True))
            preds.append(last)
        preds.append(self.ffm(spatial, last))
        if self.training:
            return [head(p) for head, p in zip(self.heads, preds)]
        return [self.heads[-1](preds[-1])]


# ----------------------------------------------------------------------------------------------------- BiSeNetV2
class StemBlock(nn.Module):
    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.conv = ConvBNReLU(in_dim, out_dim, 3, stride=2)
        self.left = nn.Sequential(ConvBNReLU(out_dim, out_dim // 2, 1), ConvBNReLU(out_dim // 2, out_dim, 3, stride=2))
        self.right = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.fuse = ConvBNReLU(out_dim * 2, out_dim, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        return self.fuse(torch.cat([self.left(x), self.right(x)], dim=1))


class ContextEmbeddingBlock(nn.Module):
    def __init__(self, in_dim: int, out_dim: int) -> None:
        super().__init__()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.bn = nn.BatchNorm2d(in_dim)
        self.conv_1x1 = ConvBNReLU(in_dim, out_dim, 1)
        self.conv_3x3 = nn.Conv2d(out_dim, out_dim, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_3x3(self.conv_1x1(self.bn(self.gap(x))) + x)


class GatherAndExpansionLayer1(nn.Module):
    """Gather-and-expansion layer, stride 1."""

    def __init__(self, in_dim: int, out_dim: int, expand: int) -> None:
        super().__init__()
        self.conv = nn.Sequential(ConvBNReLU(in_dim, in_dim, 3), DepthwiseConvBN(in_dim, expand * in_dim, 3),
                                  ConvBN(expand * in_dim, out_dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x) + x)


class GatherAndExpansionLayer2(nn.Module):
    """Gather-and-expansion layer, stride 2."""

    def __init__(self, in_dim: int, out_dim: int, expand: int) -> None:
        super().__init__()
        expand_dim = expand * in_dim
        self.branch_1 = nn.Sequential(ConvBNReLU(in_dim, in_dim, 3), DepthwiseConvBN(in_dim, expand_dim, 3, stride=2),
                                      DepthwiseConvBN(expand_dim, expand_dim, 3), ConvBN(expand_dim, out_dim, 1))
        self.branch_2 = nn.Sequential(DepthwiseConvBN(in_dim, in_dim, 3, stride=2), ConvBN(in_dim, out_dim, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.branch_1(x) + self.branch_2(x))


class DetailBranch(nn.Module):
    """Wide and shallow: three stages of 3x3 ConvBNReLU down to stride 8."""

    def __init__(self, in_channels: tuple[int, int, int]) -> None:
        super().__init__()
        c1, c2, c3 = in_channels
        self.convs = nn.Sequential(
            ConvBNReLU(3, c1, 3, stride=2), ConvBNReLU(c1, c1, 3),
            ConvBNReLU(c1, c2, 3, stride=2), ConvBNReLU(c2, c2, 3), ConvBNReLU(c2, c2, 3),
            ConvBNReLU(c2, c3, 3, stride=2), ConvBNReLU(c3, c3, 3), ConvBNReLU(c3, c3, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.convs(x)


class SemanticBranch(nn.Module):
    """Narrow and deep: stem, gather-and-expansion stages to stride 32, context embedding."""

    def __init__(self, in_channels: tuple[int, int, int, int]) -> None:
        super().__init__()
        c1, c3, c4, c5 = in_channels
        self.stem = StemBlock(3, c1)
        self.stage3 = nn.Sequential(GatherAndExpansionLayer2(c1, c3, 6), GatherAndExpansionLayer1(c3, c3, 6))
        self.stage4 = nn.Sequential(GatherAndExpansionLayer2(c3, c4, 6), GatherAndExpansionLayer1(c4, c4, 6))
        self.stage5_4 = nn.Sequential(GatherAndExpansionLayer2(c4, c5, 6), GatherAndExpansionLayer1(c5, c5, 6),
                                      GatherAndExpansionLayer1(c5, c5, 6), GatherAndExpansionLayer1(c5, c5, 6))
        self.ce = ContextEmbeddingBlock(c5, c5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        stage2 = self.stem(x)
        stage3 = self.stage3(stage2)
        stage4 = self.stage4(stage3)
        stage5_4 = self.stage5_4(stage4)
        return stage2, stage3, stage4, stage5_4, self.ce(stage5_4)


class BGA(nn.Module):
    """Bilateral guided aggregation: each branch gates the other at its own resolution."""

    def __init__(self, out_dim: int, align_corners: bool) -> None:
        super().__init__()
        self.align_corners = align_corners
        self.db_branch_keep = nn.Sequential(DepthwiseConvBN(out_dim, out_dim, 3), nn.Conv2d(out_dim, out_dim, 1))
        self.db_branch_down = nn.Sequential(ConvBN(out_dim, out_dim, 3, stride=2),
                                            # Paddle's AvgPool2D excludes the padding from the average
                                            nn.AvgPool2d(kernel_size=3, stride=2, padding=1, count_include_pad=False))
        self.sb_branch_keep = nn.Sequential(DepthwiseConvBN(out_dim, out_dim, 3), nn.Conv2d(out_dim, out_dim, 1),
                                            nn.Sigmoid())
        self.sb_branch_up = ConvBN(out_dim, out_dim, 3)
        self.conv = ConvBN(out_dim, out_dim, 3)

    def forward(self, dfm: torch.Tensor, sfm: torch.Tensor) -> torch.Tensor:
        db_keep = self.db_branch_keep(dfm)
        db_down = self.db_branch_down(dfm)
        sb_keep = self.sb_branch_keep(sfm)
        sb_up = torch.sigmoid(resize(self.sb_branch_up(sfm), db_keep.shape[2:], align_corners=self.align_corners))
        sb = resize(db_down * sb_keep, db_keep.shape[2:], align_corners=self.align_corners)
        return self.conv(db_keep * sb_up + sb)


class SegHead(nn.Module):
    def __init__(self, in_dim: int, mid_dim: int, num_classes: int) -> None:
        super().__init__()
        self.conv_3x3 = nn.Sequential(ConvBNReLU(in_dim, mid_dim, 3), nn.Dropout(0.1))
        self.conv_1x1 = nn.Conv2d(mid_dim, num_classes, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv_1x1(self.conv_3x3(x))


class BiSeNetV2(nn.Module):
    """BiSeNetV2.

    Args:
        num_classes: classes to segment.
        lambd: width factor of the semantic branch.
        align_corners: bilinear resize convention.
    """

    loss_coefs = (1.0, 1.0, 1.0, 1.0, 1.0)

    def __init__(self, *, num_classes: int, lambd: float = 0.25, align_corners: bool = False) -> None:
        super().__init__()
        c1, c2, c3 = 64, 64, 128
        db_channels = (c1, c2, c3)
        c1, c3, c4, c5 = int(c1 * lambd), int(c3 * lambd), 64, 128
        mid_channels = 128
        self.db = DetailBranch(db_channels)
        self.sb = SemanticBranch((c1, c3, c4, c5))
        self.bga = BGA(mid_channels, align_corners)
        self.aux_head1 = SegHead(c1, c1, num_classes)
        self.aux_head2 = SegHead(c3, c3, num_classes)
        self.aux_head3 = SegHead(c4, c4, num_classes)
        self.aux_head4 = SegHead(c5, c5, num_classes)
        self.head = SegHead(mid_channels, mid_channels, num_classes)
        self.align_corners = align_corners
        init_weights(self)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        feat1, feat2, feat3, feat4, sfm = self.sb(x)
        logits = [self.head(self.bga(self.db(x), sfm))]
        if self.training:
            logits += [self.aux_head1(feat1), self.aux_head2(feat2), self.aux_head3(feat3), self.aux_head4(feat4)]
        return [resize(logit, x.shape[2:], align_corners=self.align_corners) for logit in logits]


#: PaddleSeg checkpoints keep these modules' names (BatchNorm statistics aside)
PADDLE_MAPPING_V1 = PaddleMapping(source="paddleseg.models.BiseNetV1(backbone=paddleseg.models.backbones.ResNet18_vd)")
PADDLE_MAPPING_V2 = PaddleMapping(source="paddleseg.models.BiSeNetV2")


@register_paddleseg("seg/bisenetv1_resnet18_vd", family="bisenetv1", config="bisenetv1_cityscapes_1024x512_160k",
                    dataset="cityscapes", miou=75.19, paper=PAPER_V1,
                    classifier=("heads.0.conv_1x1", "heads.1.conv_1x1", "heads.2.conv_1x1"),
                    paddle_mapping=PADDLE_MAPPING_V1)
def bisenetv1_resnet18_vd(*, num_classes: int = 19, **kwargs: Any) -> BiseNetV1:
    """BiSeNetV1 on ResNet18-vd at output stride 8."""
    return BiseNetV1(num_classes=num_classes, backbone=ResNet18_vd(output_stride=8), **kwargs)


@register_paddleseg("seg/bisenetv2", family="bisenetv2", config="bisenet_cityscapes_1024x1024_160k",
                    dataset="cityscapes", miou=73.19, paper=PAPER_V2, readme="bisenet", size=(1024, 1024),
                    classifier=("head.conv_1x1", "aux_head1.conv_1x1", "aux_head2.conv_1x1", "aux_head3.conv_1x1",
                                "aux_head4.conv_1x1"), paddle_mapping=PADDLE_MAPPING_V2)
def bisenetv2(*, num_classes: int = 19, **kwargs: Any) -> BiSeNetV2:
    """BiSeNetV2 (lambda 0.25)."""
    return BiSeNetV2(num_classes=num_classes, **kwargs)
