"""PP-YOLOE and PP-YOLOE+, ported layer for layer from PaddleDetection 2.6.

"PP-YOLOE: An evolved version of YOLO", Xu et al., 2022, https://arxiv.org/abs/2203.16250. A CSPRepResNet backbone
(:mod:`oarkit.core.backbones.cspresnet`), the CustomCSPPAN neck (``ppdet/modeling/necks/custom_pan.py``: a
top-down then bottom-up path of CSP stages of RepVGG blocks, SPP in the deepest stage) and the efficient
task-aligned head ``PPYOLOEHead`` (``ppdet/modeling/heads/ppyoloe_head.py``: per level an ESE attention for the
class and the box branches, a 3x3 class conv on ``attn + feat``, a 3x3 conv predicting ``4 * (reg_max + 1)``
distance bins, integrated by the fixed ``proj_conv``). PP-YOLOE+ adds a learnable ``alpha`` in the RepVGG blocks
and normalises inputs by 1/255 only (PP-YOLOE uses ImageNet's mean and std).

Training follows the published recipe: ATSS assignment for the first ``static_assigner_epoch`` epochs (the
epoch comes through :meth:`DetectionModel.set_epoch`), the task-aligned assigner after; varifocal
classification loss, GIoU (weight 2.5) and distribution focal (0.5) box losses, normalised by the sum of the
assigned scores. Paddle checkpoints map by renaming BatchNorm statistics only (module paths are Paddle's:
``backbone.*``, ``neck.*``, ``yolo_head.*``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones.cspresnet import BasicBlock, CSPResNet, RepVggBlock
from oarkit.core.backbones.layers import ConvBNAct, make_act
from oarkit.core.interop.mapping import PaddleMapping

from ..assigners import ATSSAssigner, TaskAlignedAssigner
from ..losses import GIoULoss, distribution_focal_loss, varifocal_loss
from .base import (
    Decoded,
    DetectionModel,
    Target,
    anchor_points_and_strides,
    bbox2distance,
    check_targets,
    distance2bbox,
    grid_cell_anchors,
    pad_targets,
)
from .zoo import register_paddledet

PAPER = "PP-YOLOE: An evolved version of YOLO, https://arxiv.org/abs/2203.16250"


# ----------------------------------------------------------------------------------------------------- the neck
class SPP(nn.Module):
    """Spatial pyramid pooling: the input and its stride-1 max pools (5, 9, 13) concatenated, then a ConvBNLayer."""

    def __init__(self, ch_in: int, ch_out: int, k: int, pool_size: Sequence[int], act: str = "swish") -> None:
        super().__init__()
        self.pool_sizes = tuple(pool_size)
        self.conv = ConvBNAct(ch_in, ch_out, k, padding=k // 2, act=act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        outs = [x] + [F.max_pool2d(x, s, stride=1, padding=s // 2) for s in self.pool_sizes]
        return self.conv(torch.cat(outs, dim=1))


class CSPStage(nn.Module):
    """Cross-stage partial stage: ``conv1`` and ``conv2`` -> ``convs`` (BasicBlocks without shortcut, SPP in the
    middle when ``spp``), concatenated, then ``conv3``."""

    def __init__(self, ch_in: int, ch_out: int, n: int, act: str = "swish", spp: bool = False,
                 use_alpha: bool = False) -> None:
        super().__init__()
        ch_mid = int(ch_out // 2)
        self.conv1 = ConvBNAct(ch_in, ch_mid, 1, act=act)
        self.conv2 = ConvBNAct(ch_in, ch_mid, 1, act=act)
        self.convs = nn.Sequential()
        for i in range(n):
            self.convs.add_module(str(i), BasicBlock(ch_mid, ch_mid, act=act, shortcut=False, use_alpha=use_alpha))
            if i == (n - 1) // 2 and spp:
                self.convs.add_module("spp", SPP(ch_mid * 4, ch_mid, 1, (5, 9, 13), act=act))
        self.conv3 = ConvBNAct(ch_mid * 2, ch_out, 1, act=act)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv3(torch.cat([self.conv1(x), self.convs(self.conv2(x))], dim=1))


class CustomCSPPAN(nn.Module):
    """PP-YOLOE's PAN: features shallow to deep in, deep to shallow out (strides 32, 16, 8), as Paddle's.

    Args:
        in_channels: channels of the backbone features, shallow to deep.
        out_channels: channels of the outputs, deep to shallow, at width 1.0.
        act: activation.
        stage_num: CSP stages per level.
        block_num: blocks per CSP stage at depth 1.0.
        spp: SPP in the deepest top-down stage.
        width_mult: channel multiplier.
        depth_mult: depth multiplier.
        use_alpha: learnable ``alpha`` in the RepVGG blocks.
    """

    def __init__(self, *, in_channels: Sequence[int], out_channels: Sequence[int] = (768, 384, 192),
                 act: str = "swish", stage_num: int = 1, block_num: int = 3, spp: bool = True,
                 width_mult: float = 1.0, depth_mult: float = 1.0, use_alpha: bool = False) -> None:
        super().__init__()
        out_channels = [max(round(c * width_mult), 1) for c in out_channels]
        block_num = max(round(block_num * depth_mult), 1)
        self.num_blocks = len(in_channels)
        self.out_channels = out_channels  # deep to shallow, as the outputs

        def stages(ch_in: int, ch_out: int, with_spp: bool) -> nn.Sequential:
            return nn.Sequential(*[CSPStage(ch_in if j == 0 else ch_out, ch_out, block_num, act=act, spp=with_spp,
                                            use_alpha=use_alpha) for j in range(stage_num)])

        fpn_stages, fpn_routes = [], []
        ch_pre = 0
        for i, (ch_in, ch_out) in enumerate(zip(in_channels[::-1], out_channels)):
            if i > 0:
                ch_in += ch_pre // 2
            fpn_stages.append(stages(ch_in, ch_out, spp and i == 0))
            if i < self.num_blocks - 1:
                fpn_routes.append(ConvBNAct(ch_out, ch_out // 2, 1, act=act))
            ch_pre = ch_out
        self.fpn_stages = nn.ModuleList(fpn_stages)
        self.fpn_routes = nn.ModuleList(fpn_routes)

        pan_stages, pan_routes = [], []
        for i in reversed(range(self.num_blocks - 1)):
            pan_routes.append(ConvBNAct(out_channels[i + 1], out_channels[i + 1], 3, stride=2, padding=1, act=act))
            pan_stages.append(stages(out_channels[i] + out_channels[i + 1], out_channels[i], False))
        self.pan_stages = nn.ModuleList(pan_stages[::-1])
        self.pan_routes = nn.ModuleList(pan_routes[::-1])

    def forward(self, blocks: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        fpn_feats = []
        route = None
        for i, block in enumerate(blocks[::-1]):
            if i > 0:
                block = torch.cat([route, block], dim=1)
            route = self.fpn_stages[i](block)
            fpn_feats.append(route)
            if i < self.num_blocks - 1:
                route = F.interpolate(self.fpn_routes[i](route), scale_factor=2.0, mode="nearest")
        pan_feats = [fpn_feats[-1]]
        route = fpn_feats[-1]
        for i in reversed(range(self.num_blocks - 1)):
            route = self.pan_stages[i](torch.cat([self.pan_routes[i](route), fpn_feats[i]], dim=1))
            pan_feats.append(route)
        return pan_feats[::-1]


# ----------------------------------------------------------------------------------------------------- the head
class ESEAttn(nn.Module):
    """``conv(feat * sigmoid(fc(avg_feat)))``: the head's effective-SE attention."""

    def __init__(self, feat_channels: int, act: str = "swish") -> None:
        super().__init__()
        self.fc = nn.Conv2d(feat_channels, feat_channels, 1)
        self.conv = ConvBNAct(feat_channels, feat_channels, 1, act=act)
        nn.init.normal_(self.fc.weight, std=0.001)
        nn.init.zeros_(self.fc.bias)

    def forward(self, feat: torch.Tensor, avg_feat: torch.Tensor) -> torch.Tensor:
        return self.conv(feat * torch.sigmoid(self.fc(avg_feat)))


class PPYOLOEHead(nn.Module):
    """The efficient task-aligned head, its anchors and its losses.

    Args:
        in_channels: channels of the neck features, deep to shallow (Paddle's order).
        num_classes: classes.
        act: activation.
        fpn_strides: strides of the features, deep to shallow.
        grid_cell_scale: size of the ATSS anchor boxes in strides.
        grid_cell_offset: anchor point offset inside a cell.
        reg_max: distance bins are ``0 .. reg_max``.
        static_assigner_epoch: epochs of ATSS assignment before the task-aligned assigner.
        loss_weight: weights of the ``class``, ``iou`` and ``dfl`` losses.
    """

    def __init__(self, *, in_channels: Sequence[int], num_classes: int = 80, act: str = "swish",
                 fpn_strides: Sequence[int] = (32, 16, 8), grid_cell_scale: float = 5.0, grid_cell_offset: float = 0.5,
                 reg_max: int = 16, static_assigner_epoch: int = 30,
                 loss_weight: dict[str, float] | None = None) -> None:
        super().__init__()
        make_act(act)
        self.in_channels, self.num_classes = list(in_channels), num_classes
        self.fpn_strides = tuple(fpn_strides)
        self.grid_cell_scale, self.grid_cell_offset = grid_cell_scale, grid_cell_offset
        self.reg_channels = reg_max + 1
        self.static_assigner_epoch = static_assigner_epoch
        self.loss_weight = {"class": 1.0, "iou": 2.5, "dfl": 0.5, **(loss_weight or {})}
        self.stem_cls = nn.ModuleList([ESEAttn(c, act=act) for c in in_channels])
        self.stem_reg = nn.ModuleList([ESEAttn(c, act=act) for c in in_channels])
        self.pred_cls = nn.ModuleList([nn.Conv2d(c, num_classes, 3, padding=1) for c in in_channels])
        self.pred_reg = nn.ModuleList([nn.Conv2d(c, 4 * self.reg_channels, 3, padding=1) for c in in_channels])
        self.proj_conv = nn.Conv2d(self.reg_channels, 1, 1, bias=False)
        self.proj_conv.weight.requires_grad_(False)
        self.static_assigner = ATSSAssigner(topk=9, num_classes=num_classes)
        self.assigner = TaskAlignedAssigner(topk=13, alpha=1.0, beta=6.0)
        self.iou_loss = GIoULoss()
        self._init_weights()

    def _init_weights(self) -> None:
        bias_cls = -float(torch.log(torch.tensor((1 - 0.01) / 0.01)))
        for cls_, reg_ in zip(self.pred_cls, self.pred_reg):
            nn.init.zeros_(cls_.weight)
            nn.init.constant_(cls_.bias, bias_cls)
            nn.init.zeros_(reg_.weight)
            nn.init.constant_(reg_.bias, 1.0)
        with torch.no_grad():
            self.proj_conv.weight.copy_(torch.linspace(0, self.reg_channels - 1, self.reg_channels)
                                        .reshape(1, -1, 1, 1))

    def _level_outputs(self, feats: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        cls_logits, reg_dists = [], []
        for i, feat in enumerate(feats):
            avg_feat = F.adaptive_avg_pool2d(feat, (1, 1))
            cls_logits.append(self.pred_cls[i](self.stem_cls[i](feat, avg_feat) + feat))
            reg_dists.append(self.pred_reg[i](self.stem_reg[i](feat, avg_feat)))
        return cls_logits, reg_dists

    def anchors(self, feats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Grid-unit anchor points [N, 2] and strides [N, 1] of the features."""
        return anchor_points_and_strides([f.shape[2:] for f in feats], self.fpn_strides, self.grid_cell_offset,
                                         device=feats[0].device, dtype=feats[0].dtype)

    def forward_eval(self, feats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Paddle's eval outputs: scores [B, C, N] (sigmoid), distances [B, N, 4] (grid units), anchor points
        [N, 2] and strides [N, 1]."""
        anchor_points, stride_tensor = self.anchors(feats)
        cls_logits, reg_dists = self._level_outputs(feats)
        scores, dists = [], []
        for cls_logit, reg in zip(cls_logits, reg_dists):
            b, _, h, w = reg.shape
            reg = reg.reshape(b, 4, self.reg_channels, h * w).permute(0, 2, 3, 1)
            dists.append(self.proj_conv(F.softmax(reg, dim=1)).squeeze(1))
            scores.append(torch.sigmoid(cls_logit).reshape(b, self.num_classes, h * w))
        return torch.cat(scores, dim=-1), torch.cat(dists, dim=1), anchor_points, stride_tensor

    def _bbox_decode(self, anchor_points: torch.Tensor, pred_dist: torch.Tensor) -> torch.Tensor:
        b, n, _ = pred_dist.shape
        dist = F.softmax(pred_dist.reshape(b, n, 4, self.reg_channels), dim=-1)
        return distance2bbox(anchor_points, dist @ self.proj_conv.weight.reshape(-1).to(dist.dtype))

    def forward_train(self, feats: Sequence[torch.Tensor], targets: Sequence[Target],
                      epoch: int) -> dict[str, torch.Tensor]:
        """The training losses of one batch (Paddle's ``forward_train`` + ``get_loss``)."""
        anchors, anchor_points, num_anchors_list, stride_tensor = grid_cell_anchors(
            [f.shape[2:] for f in feats], self.fpn_strides, self.grid_cell_scale, self.grid_cell_offset,
            device=feats[0].device, dtype=torch.float32)
        cls_logits, reg_dists = self._level_outputs(feats)
        pred_scores = torch.cat([torch.sigmoid(c).flatten(2).permute(0, 2, 1) for c in cls_logits], dim=1).float()
        pred_distri = torch.cat([r.flatten(2).permute(0, 2, 1) for r in reg_dists], dim=1).float()
        anchor_points_s = anchor_points / stride_tensor
        pred_bboxes = self._bbox_decode(anchor_points_s, pred_distri)
        gt_labels, gt_bboxes, pad_gt_mask = pad_targets(targets, feats[0].device)
        if epoch < self.static_assigner_epoch:
            labels, bboxes, scores, _ = self.static_assigner(
                anchors, num_anchors_list, gt_labels, gt_bboxes, pad_gt_mask, bg_index=self.num_classes,
                pred_bboxes=pred_bboxes.detach() * stride_tensor)
        else:
            labels, bboxes, scores, _ = self.assigner(
                pred_scores.detach(), pred_bboxes.detach() * stride_tensor, anchor_points, gt_labels, gt_bboxes,
                pad_gt_mask, bg_index=self.num_classes)
        bboxes = bboxes / stride_tensor

        one_hot = F.one_hot(labels.long(), self.num_classes + 1)[..., :-1].to(pred_scores.dtype)
        loss_cls = varifocal_loss(pred_scores, scores, one_hot)
        scores_sum = scores.sum()
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(scores_sum)
            scores_sum = scores_sum / torch.distributed.get_world_size()
        scores_sum = scores_sum.clamp(min=1.0)
        loss_cls = loss_cls / scores_sum

        positive = labels != self.num_classes
        if positive.any():
            weight = scores.sum(-1)[positive].unsqueeze(-1)
            pred_pos, assigned_pos = pred_bboxes[positive], bboxes[positive]
            loss_l1 = F.l1_loss(pred_pos, assigned_pos)
            loss_iou = (self.iou_loss(pred_pos, assigned_pos) * weight).sum() / scores_sum
            dist_pos = pred_distri[positive].reshape(-1, 4, self.reg_channels)
            ltrb = bbox2distance(anchor_points_s, bboxes, self.reg_channels - 1)[positive]
            loss_dfl = (distribution_focal_loss(dist_pos, ltrb).mean(-1, keepdim=True) * weight).sum() / scores_sum
        else:
            loss_l1 = loss_iou = pred_bboxes.sum() * 0.0
            loss_dfl = pred_distri.sum() * 0.0
        w = self.loss_weight
        loss = w["class"] * loss_cls + w["iou"] * loss_iou + w["dfl"] * loss_dfl
        return {"loss": loss, "loss_cls": loss_cls, "loss_iou": loss_iou, "loss_dfl": loss_dfl,
                "loss_l1": loss_l1.detach()}


# ---------------------------------------------------------------------------------------------------- the model
class PPYOLOE(DetectionModel):
    """PP-YOLOE(+): CSPRepResNet, CustomCSPPAN, PPYOLOEHead.

    Train mode: ``model(images, targets)`` -> losses (``loss`` the weighted total). Eval mode: ``model(images)`` ->
    ``(scores [B, C, N], distances [B, N, 4], anchor_points [N, 2], strides [N, 1])``, Paddle's head outputs;
    :meth:`decode` turns them into boxes in input pixels.

    Args:
        num_classes: classes.
        width_mult: channel multiplier of backbone and neck.
        depth_mult: depth multiplier of backbone and neck.
        use_alpha: PP-YOLOE+'s learnable RepVGG ``alpha``.
        static_assigner_epoch: epochs of ATSS warm-up assignment (30 in PP-YOLOE+'s 80-epoch recipe, 100 in
            PP-YOLOE's 300-epoch one).
        reg_max: distance bins are ``0 .. reg_max``.
    """

    #: the fixed DFL projection integrates the distance bins into box sides: int8 there moves every box edge
    int8_float_modules = ("yolo_head.proj_conv",)

    def __init__(self, *, num_classes: int = 80, width_mult: float = 1.0, depth_mult: float = 1.0,
                 use_alpha: bool = True, static_assigner_epoch: int = 30, reg_max: int = 16) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.backbone = CSPResNet(width_mult=width_mult, depth_mult=depth_mult, use_alpha=use_alpha)
        self.neck = CustomCSPPAN(in_channels=self.backbone.out_channels, width_mult=width_mult,
                                 depth_mult=depth_mult, use_alpha=use_alpha)
        self.yolo_head = PPYOLOEHead(in_channels=self.neck.out_channels, num_classes=num_classes,
                                     reg_max=reg_max, static_assigner_epoch=static_assigner_epoch)
        self.static_assigner_epoch = static_assigner_epoch
        self.stride_multiple = 32

    def forward(self, images: torch.Tensor, targets: Sequence[Target] | None = None) -> Any:
        if self.training:
            targets = check_targets(targets, images.shape[0])
        feats = self.neck(self.backbone(images))  # deep to shallow, as the head's strides (32, 16, 8)
        if self.training:
            return self.losses_to_dict(**self.yolo_head.forward_train(feats, targets, self.epoch))
        return self.yolo_head.forward_eval(feats)

    def distill_layers(self) -> dict[str, str]:
        """Per level the class logits and the distance bins (PaddleDetection's PP-YOLOE distillation)."""
        levels = range(len(self.yolo_head.pred_cls))
        return {**{f"yolo_head.pred_cls.{i}": "class" for i in levels},
                **{f"yolo_head.pred_reg.{i}": "bins" for i in levels}}

    def decode(self, raw: Sequence[torch.Tensor]) -> Decoded:
        scores, dists, anchor_points, stride_tensor = raw
        return distance2bbox(anchor_points, dists) * stride_tensor, scores.permute(0, 2, 1)

    def reparameterize(self) -> None:
        """Fold every RepVGG block for export (equal outputs)."""
        for m in self.modules():
            if isinstance(m, RepVggBlock):
                m.reparameterize()


#: PaddleDetection's PP-YOLOE checkpoints (``ppyoloe_crn_*``, ``ppyoloe_plus_crn_*``) map by BatchNorm renames only.
PADDLE_MAPPING = PaddleMapping(source="ppdet.modeling.architectures.YOLOv3 (CSPResNet, CustomCSPPAN, PPYOLOEHead)")

_PLUS = "PaddleDetection 2.6, configs/ppyoloe/README.md (PP-YOLOE+, 80 epochs, COCO val2017, 640)"
_LEGACY = "PP-YOLOE paper, Table 1 (300 epochs, COCO val2017, 640); weights ppyoloe_crn_*_300e_coco"
CARD: dict[str, Any] = {"family": "ppyoloe", "paper": PAPER, "size": (640, 640), "paddle_mapping": PADDLE_MAPPING,
                        "classifier": ("yolo_head.pred_cls",)}
#: PP-YOLOE (v1) normalises with ImageNet's statistics
IMAGENET = {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
#: variant -> (width_mult, depth_mult)
SIZES = {"s": (0.50, 0.33), "m": (0.75, 0.67), "l": (1.0, 1.0), "x": (1.25, 1.33)}


def _ppyoloe(variant: str, plus: bool, num_classes: int, **kwargs: Any) -> PPYOLOE:
    width, depth = SIZES[variant]
    kwargs.setdefault("static_assigner_epoch", 30 if plus else 100)
    return PPYOLOE(num_classes=num_classes, width_mult=width, depth_mult=depth, use_alpha=plus, **kwargs)


@register_paddledet("det/ppyoloe_crn_s", config="ppyoloe_crn_s_300e_coco", map_=43.1, metrics_source=_LEGACY,
                    **IMAGENET, **CARD)
def ppyoloe_crn_s(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE-s: width 0.50, depth 0.33."""
    return _ppyoloe("s", False, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_crn_m", config="ppyoloe_crn_m_300e_coco", map_=48.9, metrics_source=_LEGACY,
                    **IMAGENET, **CARD)
def ppyoloe_crn_m(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE-m: width 0.75, depth 0.67."""
    return _ppyoloe("m", False, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_crn_l", config="ppyoloe_crn_l_300e_coco", map_=51.4, metrics_source=_LEGACY,
                    tags=("large",), **IMAGENET, **CARD)
def ppyoloe_crn_l(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE-l: width 1.0, depth 1.0."""
    return _ppyoloe("l", False, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_crn_x", config="ppyoloe_crn_x_300e_coco", map_=52.2, metrics_source=_LEGACY,
                    tags=("large",), **IMAGENET, **CARD)
def ppyoloe_crn_x(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE-x: width 1.25, depth 1.33."""
    return _ppyoloe("x", False, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_plus_crn_s", config="ppyoloe_plus_crn_s_80e_coco", map_=43.7, metrics_source=_PLUS,
                    **CARD)
def ppyoloe_plus_crn_s(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE+-s: width 0.50, depth 0.33, learnable RepVGG alpha."""
    return _ppyoloe("s", True, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_plus_crn_m", config="ppyoloe_plus_crn_m_80e_coco", map_=49.8, metrics_source=_PLUS,
                    **CARD)
def ppyoloe_plus_crn_m(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE+-m: width 0.75, depth 0.67."""
    return _ppyoloe("m", True, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_plus_crn_l", config="ppyoloe_plus_crn_l_80e_coco", map_=52.9, metrics_source=_PLUS,
                    tags=("large",), **CARD)
def ppyoloe_plus_crn_l(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE+-l: width 1.0, depth 1.0."""
    return _ppyoloe("l", True, num_classes, **kwargs)


@register_paddledet("det/ppyoloe_plus_crn_x", config="ppyoloe_plus_crn_x_80e_coco", map_=54.7, metrics_source=_PLUS,
                    tags=("large",), **CARD)
def ppyoloe_plus_crn_x(*, num_classes: int = 80, **kwargs: Any) -> PPYOLOE:
    """PP-YOLOE+-x: width 1.25, depth 1.33."""
    return _ppyoloe("x", True, num_classes, **kwargs)
