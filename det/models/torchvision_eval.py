"""The export-friendly eval path of the wrapped torchvision detectors: torchvision's own modules, fixed shapes after.

torchvision's eval forward ends in post-processing whose shapes depend on the data (score thresholds, removal of small
boxes, ``batched_nms`` on what is left), which ``torch.export`` cannot trace (``GuardOnDataDependentSymNode`` in
``torchvision/ops/boxes.py``). This path runs the same transform statistics, backbone, heads, anchor generators, box
coders, box head and RoIAlign as torchvision's ``forward`` and stops before any filtering, so that the kit's one
multiclass NMS (:func:`oarkit.det.postprocess.multiclass_nms`) turns the candidates into detections:

- one-stage (RetinaNet, FCOS, SSD, SSDlite): every anchor's decoded box, clipped to the image, ``[B, N, 4]`` xyxy
  pixels and its class scores ``[B, N, C]`` as torchvision scores them (RetinaNet: sigmoid; FCOS:
  ``sqrt(sigmoid(class) * sigmoid(centerness))``; SSD: softmax), without torchvision's background column; boxes
  under :data:`MIN_BOX_SIZE` on a side (zero-area boxes outside the image, which torchvision's one-stage heads
  return) score 0;
- two-stage (Faster R-CNN, Mask R-CNN): the region proposals of torchvision's RPN with fixed shapes (the best
  ``pre_nms_top_n`` anchors of each level by objectness, clipped; boxes smaller than ``min_size`` or scoring under
  ``score_thresh`` are masked instead of removed and kept out of the other boxes' NMS in a group of their own; one
  ``ops.nms`` over every image and level at once, each (image, level) shifted to its own coordinate range; the best
  ``post_nms_top_n`` survivors taken with ``topk`` over masked scores, with a validity mask), RoIAlign on each
  proposal at the level torchvision's ``LevelMapper`` gives it (pooled at every level, then selected), the box head
  and predictor, and per-class decoded boxes ``[B, P, C, 4]`` with softmax scores ``[B, P, C]``; invalid proposals
  and boxes under 0.01 pixels (torchvision's ``remove_small_boxes(boxes, 1e-2)``) score 0.

Shapes depend on the input size only, never on the values, so the graph exports with a dynamic batch and
``ops.nms`` (``NonMaxSuppression`` in ONNX).
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
import torchvision
from torch import nn
from torch.nn import functional as F
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.rpn import concat_box_prediction_layers
from torchvision.ops import clip_boxes_to_image, roi_align
from torchvision.ops.poolers import LevelMapper

#: families whose eval path runs the RPN and the RoI heads
TWO_STAGE = ("faster_rcnn", "mask_rcnn")
#: boxes narrower or lower than this (pixels, after clipping to the image) score 0: torchvision's R-CNN heads remove
#: them (``remove_small_boxes(boxes, 1e-2)``); its one-stage heads keep them, as zero-area detections of boxes that
#: lie outside the image, which match nothing (an IoU of 0, or 0/0 with another such box)
MIN_BOX_SIZE = 1e-2


def prepare_images(model: nn.Module, images: torch.Tensor) -> tuple[torch.Tensor, tuple[int, int]]:
    """torchvision's transform at the kit's size: normalised with its statistics and zero-padded at the bottom and
    right to its ``size_divisible`` (no resize: the kit resized already). Returns the batch and the image size."""
    transform = model.transform
    mean = torch.as_tensor(transform.image_mean, dtype=images.dtype, device=images.device)[:, None, None]
    std = torch.as_tensor(transform.image_std, dtype=images.dtype, device=images.device)[:, None, None]
    x = (images - mean) / std
    h, w = int(images.shape[-2]), int(images.shape[-1])
    step = int(transform.size_divisible)
    pad_h, pad_w = math.ceil(h / step) * step - h, math.ceil(w / step) * step - w
    if pad_h or pad_w:
        x = F.pad(x, (0, pad_w, 0, pad_h))
    return x, (h, w)


def _features(backbone: nn.Module, x: torch.Tensor) -> OrderedDict[str, torch.Tensor]:
    features = backbone(x)
    return OrderedDict([("0", features)]) if isinstance(features, torch.Tensor) else features


def _anchors(generator: nn.Module, x: torch.Tensor, features: list[torch.Tensor]) -> torch.Tensor:
    """One image's anchors [N, 4]: every image of the batch has the same size, so the same anchors."""
    return generator(ImageList(x[:1], [tuple(x.shape[-2:])]), features)[0]


def _without_small(boxes: torch.Tensor, scores: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
    """``scores`` with 0 for boxes under :data:`MIN_BOX_SIZE` on a side (and where ``valid`` is False); ``boxes``
    [..., 4] has one box per score or per row of scores."""
    keep = ((boxes[..., 2:] - boxes[..., :2]) >= MIN_BOX_SIZE).all(dim=-1)
    if valid is not None:
        keep = keep & valid
    if keep.ndim < scores.ndim:
        keep = keep.unsqueeze(-1)
    return torch.where(keep, scores, torch.zeros_like(scores))


def one_stage_outputs(model: nn.Module, family: str, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Boxes [B, N, 4] (xyxy pixels, clipped) and class scores [B, N, C] of every anchor of a RetinaNet, FCOS or SSD
    (torchvision module ``model``), the background column left out."""
    x, size = prepare_images(model, images)
    features = list(_features(model.backbone, x).values())
    head = model.head(features)
    anchors = _anchors(model.anchor_generator, x, features)
    regression, logits = head["bbox_regression"], head["cls_logits"]
    batch = regression.shape[0]
    if family == "fcos":
        boxes = model.box_coder.decode(regression, anchors.unsqueeze(0))
        scores = torch.sqrt(torch.sigmoid(logits) * torch.sigmoid(head["bbox_ctrness"]))
    else:
        boxes = model.box_coder.decode_single(regression.reshape(-1, 4), anchors.repeat(batch, 1))
        boxes = boxes.reshape(batch, -1, 4)
        scores = torch.sigmoid(logits) if family == "retinanet" else F.softmax(logits, dim=-1)
    boxes = clip_boxes_to_image(boxes, size)
    return boxes, _without_small(boxes, scores[..., 1:])


def rpn_proposals(rpn: nn.Module, x: torch.Tensor, features: list[torch.Tensor], size: tuple[int, int]
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """torchvision's ``RegionProposalNetwork`` eval output with fixed shapes: proposals [B, P, 4] and a validity mask
    [B, P] (``P = post_nms_top_n`` or fewer when the levels hold fewer candidates), best first."""
    objectness, deltas = rpn.head(features)
    anchors = _anchors(rpn.anchor_generator, x, features)
    per_level = [int(o.shape[1] * o.shape[2] * o.shape[3]) for o in objectness]
    objectness, deltas = concat_box_prediction_layers(objectness, deltas)
    batch = x.shape[0]
    proposals = rpn.box_coder.decode_single(deltas, anchors.repeat(batch, 1)).reshape(batch, -1, 4)
    objectness = objectness.reshape(batch, -1)
    # the best pre_nms_top_n anchors of each level (torchvision's _get_top_n_idx)
    index, levels, offset = [], [], 0
    for level, (logits, count) in enumerate(zip(objectness.split(per_level, dim=1), per_level)):
        k = min(rpn.pre_nms_top_n(), count)
        index.append(logits.topk(k, dim=1).indices + offset)
        levels.append(torch.full((k,), level, dtype=torch.long, device=x.device))
        offset += count
    index, level_of = torch.cat(index, dim=1), torch.cat(levels)
    prob = torch.sigmoid(torch.gather(objectness, 1, index))
    boxes = clip_boxes_to_image(torch.gather(proposals, 1, index.unsqueeze(-1).expand(-1, -1, 4)), size)
    wh = boxes[..., 2:] - boxes[..., :2]
    valid = (wh >= rpn.min_size).all(dim=-1) & (prob >= rpn.score_thresh)
    # NMS per (image, level); masked boxes sit in a group of their own, so that they suppress nothing that counts
    num_levels = len(per_level)
    group = (torch.arange(batch, device=x.device).unsqueeze(1) * (num_levels + 1)
             + torch.where(valid, level_of.unsqueeze(0), torch.full_like(level_of, num_levels).unsqueeze(0)))
    span = boxes.max() + 1.0
    shifted = boxes + (group.to(boxes.dtype) * span).unsqueeze(-1)
    count = index.shape[1]
    keep = torchvision.ops.nms(shifted.reshape(-1, 4), prob.reshape(-1), rpn.nms_thresh)
    kept = torch.zeros(batch * count, dtype=torch.bool, device=x.device)
    kept[keep] = True
    kept = kept.reshape(batch, count) & valid
    best, order = torch.where(kept, prob, torch.full_like(prob, -1.0)).topk(min(rpn.post_nms_top_n(), count), dim=1)
    return torch.gather(boxes, 1, order.unsqueeze(-1).expand(-1, -1, 4)), best >= 0


def multiscale_roi_align(pooler: nn.Module, features: OrderedDict[str, torch.Tensor], boxes: torch.Tensor,
                         size: tuple[int, int]) -> torch.Tensor:
    """torchvision's ``MultiScaleRoIAlign`` on boxes [B, P, 4] with fixed shapes: every box pooled at every level and
    the level ``LevelMapper`` assigns selected (torchvision gathers each level's boxes first, a data-dependent
    shape). Returns [B * P, channels, *output_size]."""
    maps = [v for k, v in features.items() if k in pooler.featmap_names]
    # torchvision's _setup_scales from the static shapes (it computes them with tensors and .item())
    scales = [2.0 ** round(math.log2(float(f.shape[-2]) / size[0])) for f in maps]
    batch, count = boxes.shape[:2]
    flat = boxes.reshape(-1, 4)
    image = torch.arange(batch, device=boxes.device, dtype=boxes.dtype).reshape(batch, 1, 1).expand(batch, count, 1)
    rois = torch.cat([image, boxes], dim=-1).reshape(-1, 5)
    pooled = [roi_align(f, rois, output_size=pooler.output_size, spatial_scale=s, sampling_ratio=pooler.sampling_ratio)
              for f, s in zip(maps, scales)]
    if len(pooled) == 1:
        return pooled[0]
    mapper = LevelMapper(int(-math.log2(scales[0])), int(-math.log2(scales[-1])),
                         canonical_scale=pooler.canonical_scale, canonical_level=pooler.canonical_level)
    levels = mapper([flat]).reshape(-1, 1, 1, 1)
    result = pooled[0]
    for level in range(1, len(pooled)):
        result = torch.where(levels == level, pooled[level], result)
    return result


def two_stage_outputs(model: nn.Module, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-class boxes [B, P, C, 4] (xyxy pixels, clipped) and scores [B, P, C] of a Faster or Mask R-CNN (torchvision
    module ``model``) on its fixed proposal set, the background class left out; invalid proposals and boxes under
    0.01 pixels score 0."""
    x, size = prepare_images(model, images)
    features = _features(model.backbone, x)
    proposals, valid = rpn_proposals(model.rpn, x, list(features.values()), size)
    heads = model.roi_heads
    pooled = multiscale_roi_align(heads.box_roi_pool, features, proposals, size)
    class_logits, regression = heads.box_predictor(heads.box_head(pooled))
    batch, count = proposals.shape[:2]
    boxes = heads.box_coder.decode_single(regression, proposals.reshape(-1, 4))
    boxes = clip_boxes_to_image(boxes.reshape(batch, count, -1, 4), size)[:, :, 1:]
    scores = F.softmax(class_logits, dim=-1).reshape(batch, count, -1)[:, :, 1:]
    return boxes, _without_small(boxes, scores, valid.unsqueeze(-1))


def best_pairs(boxes: torch.Tensor, scores: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` best (box, class) pairs of per-class boxes [B, P, C, 4] and scores [B, P, C] as boxes [B, K, 4] and
    scores [B, K, C] that are zero outside each pair's class (``K = min(k, P * C)``)."""
    batch, count, num_classes = scores.shape
    k = min(k, count * num_classes)
    top, flat = scores.reshape(batch, -1).topk(k, dim=1)
    picked = torch.gather(boxes.reshape(batch, -1, 4), 1, flat.unsqueeze(-1).expand(-1, -1, 4))
    one_hot = (flat % num_classes).unsqueeze(-1) == torch.arange(num_classes, device=flat.device)
    return picked, one_hot.to(top.dtype) * top.unsqueeze(-1)
