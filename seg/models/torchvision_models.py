"""torchvision's segmentation models (FCN, DeepLabV3, LR-ASPP) as ``seg/tv_<name>``, with torchvision's weights.

FCN: https://arxiv.org/abs/1411.4038; DeepLabV3: https://arxiv.org/abs/1706.05587; LR-ASPP ("Searching for
MobileNetV3"): https://arxiv.org/abs/1905.02244. The weights' url, mIoU (COCO val2017 on the 20 Pascal VOC
categories) and categories are read from torchvision's ``DEFAULT`` weights. :class:`TorchvisionSegmentation`
keeps torchvision's module names and returns oarkit's list of logits (the auxiliary head's in training).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torchvision import models as tvm
from torchvision.models.segmentation.lraspp import LRASPPHead

from oarkit.core.backbones.layers import resize
from oarkit.core.registry import IMAGENET_MEAN, IMAGENET_STD, PretrainedWeights, register_model

from .zoo import TEST_INPUT, dataset_fields

#: name -> (heads that output the classes, paper)
MODELS = {
    "fcn_resnet50": (("classifier.4", "aux_classifier.4"), "https://arxiv.org/abs/1411.4038"),
    "fcn_resnet101": (("classifier.4", "aux_classifier.4"), "https://arxiv.org/abs/1411.4038"),
    "deeplabv3_resnet50": (("classifier.4", "aux_classifier.4"), "https://arxiv.org/abs/1706.05587"),
    "deeplabv3_resnet101": (("classifier.4", "aux_classifier.4"), "https://arxiv.org/abs/1706.05587"),
    "deeplabv3_mobilenet_v3_large": (("classifier.4", "aux_classifier.4"), "https://arxiv.org/abs/1706.05587"),
    "lraspp_mobilenet_v3_large": (("classifier.low_classifier", "classifier.high_classifier"),
                                  "https://arxiv.org/abs/1905.02244"),
}
LICENSE = "BSD-3-Clause (torchvision)"


class TorchvisionSegmentation(nn.Module):
    """A torchvision segmentation model under its own module names, returning a list of logits.

    Args:
        model: a model from ``torchvision.models.segmentation``.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.backbone = model.backbone
        self.classifier = model.classifier
        self.aux_classifier = getattr(model, "aux_classifier", None)
        # torchvision's reference recipe weighs the auxiliary loss by 0.5
        self.loss_coefs = (1.0, 0.5) if self.aux_classifier is not None else (1.0,)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        features = self.backbone(x)
        out = self.classifier(features) if isinstance(self.classifier, LRASPPHead) else self.classifier(features["out"])
        logits = [out]
        if self.training and self.aux_classifier is not None:
            logits.append(self.aux_classifier(features["aux"]))
        return [resize(logit, x.shape[2:]) for logit in logits]


def _register(name: str) -> None:
    heads, paper = MODELS[name]
    weights = tvm.get_model_weights(name).DEFAULT
    has_aux = any(h.startswith("aux_") for h in heads)

    def factory(*, num_classes: int = 21, **kwargs: Any) -> TorchvisionSegmentation:
        kwargs = {"aux_loss": True, **kwargs} if has_aux else kwargs
        return TorchvisionSegmentation(tvm.get_model(name, weights=None, weights_backbone=None,
                                                     num_classes=num_classes, **kwargs))

    factory.__name__ = factory.__qualname__ = f"tv_{name}"
    factory.__doc__ = f"torchvision's ``{name}``, randomly initialised (load weights with ``pretrained=True``)."
    metrics = weights.meta["_metrics"]["COCO-val2017-VOC-labels"]
    register_model(f"seg/tv_{name}", factory, task="seg", family=f"tv_{name.split('_')[0]}",
                   weights=PretrainedWeights(url=weights.url, format="pth", license=LICENSE, source="torchvision"),
                   paper=paper, classifier=heads,
                   metrics={"coco_voc_miou": float(metrics["miou"])},
                   metrics_source="torchvision (COCO val2017, the 20 Pascal VOC categories)",
                   test_input_size=TEST_INPUT, tags=("large",) if "resnet101" in name else (),
                   **dataset_fields("coco_voc", mean=IMAGENET_MEAN, std=IMAGENET_STD))


for _name in MODELS:
    _register(_name)
