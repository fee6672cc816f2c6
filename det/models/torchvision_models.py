"""torchvision's detectors wrapped to the kit's contract (``det/<torchvision name>``).

Faster R-CNN (ResNet50-FPN v1/v2, MobileNetV3-large FPN and its 320 variant), RetinaNet (v1/v2), FCOS, SSD300-VGG16,
SSDlite320-MobileNetV3 and Mask R-CNN (v1/v2) from ``torchvision.models.detection``, with torchvision's COCO weights
and the box mAP torchvision publishes for them (read from its weights enums).

What the wrapper changes:

- labels: the kit's are 0-based; torchvision's start at 1 (0 is background). torchvision's COCO weights have 91
  outputs over the 90 COCO category ids (ten unused, ``N/A``): their cards keep those 90 classes (label set
  ``coco_torchvision``), ``num_classes`` is the kit's count (the module gets one more);
- no second resize: the kit resizes images to the card's size before the model; torchvision's transform then only
  normalises (its own ImageNet statistics, so the card's mean/std are 0/1: inputs in [0, 1]);
- Mask R-CNN trains on masks: targets without ``masks`` get their boxes filled as masks. Its eval path computes
  boxes only (masks are not part of the kit's detection contract);
- training runs torchvision's own forward and losses, unchanged;
- eval forward runs torchvision's transform statistics, backbone, heads, anchors, box coders, RPN and RoIAlign with
  fixed shapes and no filtering (:mod:`.torchvision_eval`), and the kit's one multiclass NMS makes the detections,
  in eager evaluation, the predictor and the exported graph alike (``nms_inside`` is ``False``). Raw outputs:
  one-stage (RetinaNet, FCOS, SSD) ``(boxes [B, N, 4] xyxy pixels, scores [B, N, C])`` for every anchor, which
  ``decode`` passes on; two-stage (Faster / Mask R-CNN) ``(boxes [B, P, C, 4], scores [B, P, C])`` per proposal and
  class, of which ``decode`` passes on the 1000 best (box, class) pairs (all the kit's NMS looks at) with scores
  zero outside each pair's class;
- what stays torchvision's in eval: its RPN settings (``rpn_pre_nms_top_n_test``, ``rpn_post_nms_top_n_test``,
  ``rpn_nms_thresh``, ``rpn_score_thresh``). Its final post-processing settings (``box_score_thresh``,
  ``box_nms_thresh``, ``box_detections_per_img``; ``score_thresh``, ``nms_thresh``, ``detections_per_img`` of the
  one-stage models) give way to the task's NMS settings; ``torchvision_nms()`` reports them as those settings, to
  evaluate as torchvision does. Given the same thresholds, the kit keeps torchvision's detections except where
  their candidates differ: the kit's are the 1000 best (box, class) pairs of an image, torchvision's every pair
  above the threshold (R-CNN), the best ``topk_candidates`` of each level (RetinaNet, FCOS) or of each class (SSD)
  above it; torchvision's sigmoid heads may also return its background class, and its one-stage heads zero-area
  boxes outside the image, which the kit drops (tested against ``torchvision_detections()`` in
  ``tests/det/test_torchvision_eval.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torchvision
from torch import nn

from oarkit.core.registry import DetectorInput, PretrainedWeights, register_model

from ..postprocess import MAX_PRE_NMS
from .base import Decoded, DetectionModel, Target, check_targets
from .torchvision_eval import TWO_STAGE, best_pairs, one_stage_outputs, two_stage_outputs
from .zoo import LABEL_SETS, TEST_INPUT

#: torchvision name -> (family, head module prefixes re-initialised for another number of classes, paper)
MODELS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "fasterrcnn_resnet50_fpn": ("faster_rcnn", ("model.roi_heads.box_predictor",), "https://arxiv.org/abs/1506.01497"),
    "fasterrcnn_resnet50_fpn_v2": ("faster_rcnn", ("model.roi_heads.box_predictor",),
                                   "https://arxiv.org/abs/2111.11429"),
    "fasterrcnn_mobilenet_v3_large_fpn": ("faster_rcnn", ("model.roi_heads.box_predictor",),
                                          "https://arxiv.org/abs/1506.01497"),
    "fasterrcnn_mobilenet_v3_large_320_fpn": ("faster_rcnn", ("model.roi_heads.box_predictor",),
                                              "https://arxiv.org/abs/1506.01497"),
    "retinanet_resnet50_fpn": ("retinanet", ("model.head.classification_head.cls_logits",),
                               "https://arxiv.org/abs/1708.02002"),
    "retinanet_resnet50_fpn_v2": ("retinanet", ("model.head.classification_head.cls_logits",),
                                  "https://arxiv.org/abs/1912.02424"),
    "fcos_resnet50_fpn": ("fcos", ("model.head.classification_head.cls_logits",), "https://arxiv.org/abs/1904.01355"),
    "ssd300_vgg16": ("ssd", ("model.head.classification_head",), "https://arxiv.org/abs/1512.02325"),
    "ssdlite320_mobilenet_v3_large": ("ssd", ("model.head.classification_head",), "https://arxiv.org/abs/1905.02244"),
    "maskrcnn_resnet50_fpn": ("mask_rcnn", ("model.roi_heads.box_predictor",
                                            "model.roi_heads.mask_predictor.mask_fcn_logits"),
                              "https://arxiv.org/abs/1703.06870"),
    "maskrcnn_resnet50_fpn_v2": ("mask_rcnn", ("model.roi_heads.box_predictor",
                                               "model.roi_heads.mask_predictor.mask_fcn_logits"),
                                 "https://arxiv.org/abs/2111.11429"),
}

#: the size torchvision evaluates the weights at (its transform's min_size / fixed size); 800 (max 1333) otherwise
EVAL_SIZES = {"fasterrcnn_mobilenet_v3_large_320_fpn": (320, 320), "ssd300_vgg16": (300, 300),
              "ssdlite320_mobilenet_v3_large": (320, 320)}

#: over ~3 s for a training step on two cores even at the test size: kept out of the fast tests (``large``)
LARGE = {"fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2",
         "ssd300_vgg16"}


#: float export bounds of the two-stage detectors (``1 - IoU`` of the worst matched box, score difference), in place
#: of the format's 1e-4: onnxruntime's convolutions round otherwise than torch's, the RPN's proposals move by ~1e-3
#: px, and RoIAlign samples the features at the moved points, which the box head turns into other scores and box
#: deltas. Measured with calibrated random weights (tests/det/conftest.py's ``calibrate``), 128 px, two to
#: four inputs each: Faster R-CNN R50-FPN boxes 2.7e-3 / scores 8.0e-4, v2 3.3e-5 / 1.9e-4, Mask R-CNN R50-FPN
#: 8.4e-3 / 5.4e-4, v2 1.2e-4 / 5.3e-4; the MobileNetV3 FPNs (noise on random weights, 64 px) 5.0e-4 / 1.2e-7. The
#: bounds are about two and a half times the worst, and under what eager itself moves by when its input moves by 1e-6
#: (Mask R-CNN R50-FPN: 3.3e-2 to 0.24 / 2.7e-3 to 5.2e-2).
TWO_STAGE_EXPORT_TOLERANCES = {"boxes": 2e-2, "scores": 2e-3}


class TorchvisionDetector(DetectionModel):
    """A torchvision detector under the kit's contract (see the module docstring).

    Args:
        name: the torchvision builder's name.
        num_classes: the kit's classes (the torchvision module gets one more, for background).
        **kwargs: the builder's keyword arguments (``rpn_post_nms_top_n_test``, ``box_score_thresh``, ...; see the
            module docstring for which of them the eval path uses).
    """

    def __init__(self, name: str, *, num_classes: int, **kwargs: Any) -> None:
        super().__init__()
        self.num_classes, self.name = num_classes, name
        self.family = MODELS[name][0]
        self.model = torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                                  num_classes=num_classes + 1, **kwargs)
        self.with_masks = name.startswith("maskrcnn")
        self.stride_multiple = 32
        self.export_tolerances = dict(TWO_STAGE_EXPORT_TOLERANCES) if self.family in TWO_STAGE else {}

    def torchvision_nms(self) -> dict[str, float | int]:
        """torchvision's own post-processing settings of this module as :class:`~oarkit.det.postprocess.NMSConfig`
        fields (``score_threshold``, ``iou_threshold``, ``max_detections``): the task settings that evaluate it as
        torchvision does (``task.score_threshold=...``); the kit's NMS does not read them by itself."""
        post = self.model.roi_heads if self.family in TWO_STAGE else self.model
        return {"score_threshold": float(post.score_thresh), "iou_threshold": float(post.nms_thresh),
                "max_detections": int(post.detections_per_img)}

    def _no_resize(self, images: torch.Tensor) -> None:
        # The kit resized already: torchvision's transform keeps the batch's size and only normalises.
        h, w = images.shape[-2:]
        transform = self.model.transform
        if getattr(transform, "fixed_size", None):
            transform.fixed_size = (h, w)
        transform.min_size, transform.max_size = (min(h, w),), max(h, w)

    def _targets(self, targets: Sequence[Target], images: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        out = []
        for t in targets:
            boxes = t["boxes"].to(images.device, torch.float32)
            item = {"boxes": boxes, "labels": t["labels"].to(images.device).long() + 1}
            if self.with_masks:
                item["masks"] = t["masks"] if "masks" in t else _box_masks(boxes, images.shape[-2:])
            out.append(item)
        return out

    def forward(self, images: torch.Tensor, targets: Sequence[Target] | None = None) -> Any:
        if self.training:
            self._no_resize(images)
            targets = check_targets(targets, images.shape[0])
            losses = self.model(list(images), self._targets(targets, images))
            return {"loss": sum(losses.values()), **losses}
        if self.family in TWO_STAGE:
            return two_stage_outputs(self.model, images)
        return one_stage_outputs(self.model, self.family, images)

    def decode(self, raw: Sequence[torch.Tensor]) -> Decoded:
        boxes, scores = raw
        if boxes.ndim == 4:  # two-stage: one box per (proposal, class); the best pairs are what the NMS can see
            return best_pairs(boxes, scores, MAX_PRE_NMS)
        return boxes, scores

    @torch.no_grad()
    def torchvision_detections(self, images: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        """torchvision's own eval forward with its own post-processing on the same module and input: per image
        ``boxes``, ``scores`` and 0-based ``labels`` (-1 for torchvision's background class, which its sigmoid heads
        may score). The reference the export-friendly path is tested against; call it in eval mode."""
        self._no_resize(images)
        return [{"boxes": d["boxes"], "scores": d["scores"], "labels": d["labels"] - 1}
                for d in self.model(list(images))]


def _box_masks(boxes: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """Filled boxes as uint8 instance masks [n, H, W]."""
    h, w = size
    ys = torch.arange(h, device=boxes.device)[None, :, None]
    xs = torch.arange(w, device=boxes.device)[None, None, :]
    b = boxes[:, :, None, None]
    return ((xs >= b[:, 0]) & (xs < b[:, 2]) & (ys >= b[:, 1]) & (ys < b[:, 3])).to(torch.uint8)


def _add_prefix(state: dict[str, Any], model: nn.Module) -> dict[str, Any]:
    """torchvision's checkpoints name the bare detector: its tensors live under ``model.`` here."""
    return {f"model.{k}": v for k, v in state.items()}


def _register(name: str, family: str, classifier: tuple[str, ...], paper: str) -> None:
    weights = torchvision.models.get_model_weights(name).DEFAULT
    categories = tuple(weights.meta["categories"][1:])
    LABEL_SETS.setdefault("coco_torchvision", categories)
    size = EVAL_SIZES.get(name, (800, 800))
    metrics = {"coco_map": float(weights.meta["_metrics"]["COCO-val2017"]["box_map"])}
    if "mask_map" in weights.meta["_metrics"]["COCO-val2017"]:
        metrics["coco_mask_map"] = float(weights.meta["_metrics"]["COCO-val2017"]["mask_map"])

    def factory(*, num_classes: int = len(categories), **kwargs: Any) -> TorchvisionDetector:
        return TorchvisionDetector(name, num_classes=num_classes, **kwargs)

    factory.__doc__ = f"torchvision's ``{name}`` under the kit's contract."
    factory.__name__ = name
    register_model(
        f"det/{name}", factory, task="det", family=family, paper=paper, num_classes=len(categories),
        label_names="coco_torchvision", classifier=classifier, metrics=metrics,
        metrics_source=f"torchvision {torchvision.__version__} weights {weights} (COCO val2017)",
        input_spec=DetectorInput(size=tuple(size), stride_multiple=32, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0)),
        weights=PretrainedWeights(url=weights.url, format="pth", license="BSD-3-Clause",
                                  source=f"torchvision ({weights})"),
        state_dict_filter=_add_prefix, test_input_size=(3, 300, 300) if name.startswith("ssd300") else TEST_INPUT,
        tags=("torchvision", "large") if name in LARGE else ("torchvision",))


for _name, (_family, _classifier, _paper) in MODELS.items():
    _register(_name, _family, _classifier, _paper)
