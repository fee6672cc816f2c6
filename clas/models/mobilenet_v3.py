"""MobileNetV3 small and large at PaddleClas's widths: the shared backbone with PaddleClas's classifier head.

"Searching for MobileNetV3", https://arxiv.org/abs/1905.02244. A native port of PaddleClas's
``ppcls/arch/backbone/legendary_models/mobilenet_v3.py`` rather than timm's ``mobilenetv3_*``, which cannot hold
PaddleClas's weights: timm rounds the squeeze-and-excitation width to a multiple of 8 (PaddleClas uses
``channels // 4``: 18 channels where timm has 24) and gates with ``hardsigmoid`` of slope 1/6 where PaddleClas
uses ``Hardsigmoid(slope=0.2, offset=0.5)``. The blocks are :class:`oarkit.core.backbones.MobileNetV3` (shared
with PaddleOCR's layouts), whose module paths are PaddleClas's under ``backbone.``.

PaddleClas's head: global average pool, ``last_conv`` (1x1 to 1280 channels, no bias), hardswish,
``Dropout(p=0.2, mode="downscale_in_infer")`` (0.8 at inference; :data:`PADDLE_MAPPING` folds it into the
classifier weight, so training here uses PyTorch's ordinary dropout), flatten, ``fc``.

The cards point at the PaddleClas release of every width (converted on load) with PaddleClas's top-1.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from oarkit.clas.models.timm_backed import register_paddle_variant
from oarkit.core.backbones import MobileNetV3
from oarkit.core.interop import PaddleMapping

PAPER = "Searching for MobileNetV3, https://arxiv.org/abs/1905.02244"

# (PaddleClas width suffix, channel multiplier, PaddleClas ImageNet-1k top-1 of the small / large model)
WIDTHS = (("x0_35", 0.35, 53.03, 64.32), ("x0_5", 0.5, 59.21, 69.24), ("x0_75", 0.75, 66.02, 73.14),
          ("x1_0", 1.0, 68.24, 75.32), ("x1_25", 1.25, 70.67, 76.41))
#: PaddleClas's ``class_expand``: channels of the head's 1x1 convolution, whatever the width
LAST_CONV = 1280
#: PaddleClas's head dropout (``dropout_prob``), ``downscale_in_infer``
PADDLE_HEAD_DROPOUT = 0.2


class MobileNetV3Classifier(nn.Module):
    """MobileNetV3 with PaddleClas's classifier head.

    Args:
        model_name: ``"small"`` or ``"large"``.
        scale: width multiplier of the backbone (the head's 1280 channels do not scale).
        num_classes: classes of ``fc``.
        dropout: dropout before ``fc`` in training.
    """

    def __init__(self, *, model_name: Literal["small", "large"] = "large", scale: float = 1.0,
                 num_classes: int = 1000, dropout: float = PADDLE_HEAD_DROPOUT) -> None:
        super().__init__()
        self.backbone = MobileNetV3(model_name=model_name, scale=scale, out_indices=(3,))
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.last_conv = nn.Conv2d(self.backbone.out_channels[-1], LAST_CONV, 1, bias=False)
        self.hardswish = nn.Hardswish()
        self.dropout = nn.Dropout(dropout)
        self.flatten = nn.Flatten(1)
        self.num_features = LAST_CONV
        self.fc = nn.Linear(LAST_CONV, num_classes)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """The stride-32 feature map (the output of ``last_second_conv``)."""
        return self.backbone(x)[-1]

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        """Pool, 1x1 convolution, hardswish, dropout; then ``fc`` unless ``pre_logits``."""
        x = self.flatten(self.dropout(self.hardswish(self.last_conv(self.avg_pool(x)))))
        return x if pre_logits else self.fc(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))

    def get_classifier(self) -> nn.Module:
        return self.fc

    def reset_classifier(self, num_classes: int) -> None:
        """Replace ``fc`` with a freshly initialised one of ``num_classes`` outputs."""
        self.fc = nn.Linear(self.num_features, num_classes)


def _downscale_in_infer(weight: np.ndarray) -> np.ndarray:
    return weight * (1.0 - PADDLE_HEAD_DROPOUT)


PADDLE_MAPPING = PaddleMapping(
    renames=[(r"^(conv|blocks|last_second_conv)\.", r"backbone.\1.")],
    transforms=[(r"^fc\.weight$", _downscale_in_infer)],
    source="ppcls.arch.backbone.legendary_models.mobilenet_v3.MobileNetV3_*",
)


def _factory(model_name: Literal["small", "large"], scale: float, name: str) -> Callable[..., nn.Module]:
    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        return MobileNetV3Classifier(model_name=model_name, scale=scale, num_classes=num_classes, **kwargs)

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"PaddleClas's MobileNetV3_{model_name} with channel multiplier {scale}, randomly initialised."
    return factory


for suffix, width, *top1s in WIDTHS:
    for size, top1 in zip(("small", "large"), top1s):
        name = f"mobilenetv3_{size}_{suffix}"
        register_paddle_variant(f"clas/{name}", f"mobilenetv3_{size}_100", paddle_name=f"MobileNetV3_{size}_{suffix}",
                                family="mobilenet_v3", paper=PAPER, module=__name__, top1=top1,
                                builder=_factory(size, width, name), classifier=("fc",),
                                paddle_mapping=PADDLE_MAPPING)
