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
- Mask R-CNN trains on masks: targets without ``masks`` get their boxes filled as masks. Its eval output keeps the
  boxes (masks are not part of the kit's detection contract);
- eval forward: torchvision applies its own score threshold and NMS, so ``nms_inside`` is ``True`` and the raw
  output is fixed-size, ``(boxes [B, K, 4] xyxy pixels, scores [B, K], labels [B, K] 0-based)`` with ``K =
  detections_per_img`` rows, zero-padded with label -1. ``decode`` returns those boxes and the one-hot class
  scores [B, K, C], so the kit's post-processing runs unchanged (and finds nothing more to suppress).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torchvision
from torch import nn

from oarkit.core.registry import DetectorInput, PretrainedWeights, register_model

from .base import Decoded, DetectionModel, Target, check_targets
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


class TorchvisionDetector(DetectionModel):
    """A torchvision detector under the kit's contract (see the module docstring).

    Args:
        name: the torchvision builder's name.
        num_classes: the kit's classes (the torchvision module gets one more, for background).
        **kwargs: the builder's keyword arguments (``detections_per_img``, ``box_score_thresh``, ...).
    """

    nms_inside = True

    def __init__(self, name: str, *, num_classes: int, **kwargs: Any) -> None:
        super().__init__()
        self.num_classes, self.name = num_classes, name
        self.model = torchvision.models.get_model(name, weights=None, weights_backbone=None,
                                                  num_classes=num_classes + 1, **kwargs)
        self.with_masks = name.startswith("maskrcnn")
        self.stride_multiple = 32

    @property
    def detections_per_img(self) -> int:
        m = self.model
        return int(getattr(m, "detections_per_img", None) or m.roi_heads.detections_per_img)

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
        self._no_resize(images)
        if self.training:
            targets = check_targets(targets, images.shape[0])
            losses = self.model(list(images), self._targets(targets, images))
            return {"loss": sum(losses.values()), **losses}
        detections = self.model(list(images))
        k = self.detections_per_img
        boxes = images.new_zeros(len(detections), k, 4)
        scores = images.new_zeros(len(detections), k)
        labels = torch.full((len(detections), k), -1, dtype=torch.long, device=images.device)
        for i, d in enumerate(detections):
            n = min(len(d["boxes"]), k)
            boxes[i, :n], scores[i, :n], labels[i, :n] = d["boxes"][:n], d["scores"][:n], d["labels"][:n] - 1
        return boxes, scores, labels

    def decode(self, raw: Sequence[torch.Tensor]) -> Decoded:
        boxes, scores, labels = raw
        one_hot = torch.nn.functional.one_hot(labels.clamp(min=0), self.num_classes).to(scores.dtype)
        return boxes, one_hot * (scores * (labels >= 0)).unsqueeze(-1)


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
