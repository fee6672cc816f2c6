"""PP-HGNet and PP-HGNetV2, PaddleClas's GPU-friendly high-performance networks, built by timm.

Neither has a paper of its own: PaddleClas documents PP-HGNet (docs/en/models/PP-HGNet_en.md), and PP-HGNetV2 is
the backbone of RT-DETR ("DETRs Beat YOLOs on Real-time Object Detection", https://arxiv.org/abs/2304.08069).
timm ports both (``hgnet_*``, ``hgnetv2_b*``) with weights converted from PaddleClas's releases.

PaddleClas checkpoints (``ppcls.arch.backbone.legendary_models.pp_hgnet.PPHGNet_*`` and
``...pp_hgnet_v2.PPHGNetV2_B*``) convert onto these modules with :data:`PADDLE_MAPPING` and
:data:`PADDLE_MAPPING_V2`. Paddle semantics kept:

- PP-HGNetV2's stem max-pools with ``MaxPool2D(2, 1, padding="SAME")``: Paddle pads the right and bottom and the
  padding never wins the max. timm pads the stem's input with zeros once for the 2x2 convolution and the pool,
  so where a border window holds only negative values (the learnable affine blocks shift activations below zero)
  timm's pool returns 0 instead of Paddle's value. :class:`PaddleSamePool` replaces the pool of timm's stem.
- ``PPHGNet_base``'s head applies ``Dropout(p=0.2, mode="downscale_in_infer")``, 0.8 at inference: its mapping
  folds the factor into the classifier weight. The other variants have no dropout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import timm
import torch
import torch.nn.functional as F
from torch import nn

from oarkit.clas.models.timm_backed import register_paddle_variant
from oarkit.core.interop import PaddleMapping

PAPER_V2 = "DETRs Beat YOLOs on Real-time Object Detection (PP-HGNetV2 backbone), https://arxiv.org/abs/2304.08069"

# (size, timm tag, PaddleClas ImageNet-1k top-1 of those weights, PaddleClas head dropout): tiny and small
# without SSLD, base with it.
PP_HGNET = (("tiny", "paddle_in1k", 79.83, 0.0), ("small", "paddle_in1k", 81.51, 0.0),
            ("base", "ssld_in1k", 85.00, 0.2))
# (size, PaddleClas ImageNet-1k top-1 of the SSLD stage-2 weights)
PP_HGNETV2 = (("b0", 77.77), ("b1", 79.18), ("b2", 81.74), ("b3", 82.98), ("b4", 83.57), ("b5", 84.75),
              ("b6", 86.30))


class PaddleSamePool(nn.Module):
    """PP-HGNetV2's stem pool, ``MaxPool2D(kernel_size=2, stride=1, padding="SAME")`` in Paddle, inside timm's stem.

    timm's ``StemV2`` hands its pool the stem feature already padded with a zero row and column (right, bottom);
    this pool drops them and pads by repeating the edge instead, which leaves each border window's maximum that of
    its real values, as in Paddle.
    """

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.pad(x[..., :-1, :-1], (0, 1, 0, 1), mode="replicate")
        return F.max_pool2d(x, kernel_size=2, stride=1)


def _hgnetv2(arch: str, module: str) -> Callable[..., nn.Module]:
    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        model = timm.create_model(arch, pretrained=False, num_classes=num_classes, **kwargs)
        model.stem.pool = PaddleSamePool()
        return model

    factory.__name__ = factory.__qualname__ = arch
    factory.__module__ = module
    factory.__doc__ = f"timm's ``{arch}`` with Paddle's stem pool, randomly initialised."
    return factory


def _scaled(factor: float) -> Callable[[np.ndarray], np.ndarray]:
    def fold(weight: np.ndarray) -> np.ndarray:
        return weight * factor

    return fold


def paddle_mapping(dropout: float = 0.0) -> PaddleMapping:
    """How a PaddleClas ``PPHGNet_*`` checkpoint maps onto timm's ``hgnet_*`` (head dropout ``dropout``)."""
    return PaddleMapping(
        renames=[
            (r"^stem\.(\d+)\.", r"stem.stem.\1."),
            (r"\.aggregation_conv\.", ".aggregation.0."),
            (r"\.att\.conv\.", ".aggregation.1.conv."),
            (r"^last_conv\.", "head.last_conv.0."),
            (r"^fc\.", "head.fc."),
        ],
        transforms=[(r"^head\.fc\.weight$", _scaled(1.0 - dropout))] if dropout else (),
        source="ppcls.arch.backbone.legendary_models.pp_hgnet.PPHGNet_*",
    )


PADDLE_MAPPING_V2 = PaddleMapping(
    renames=[
        (r"\.aggregation_squeeze_conv\.", ".aggregation.0."),
        (r"\.aggregation_excitation_conv\.", ".aggregation.1."),
        (r"^last_conv\.", "head.last_conv.0."),
        (r"^lab\.", "head.last_conv.2."),  # the head's learnable affine block after its ReLU
        (r"^fc\.", "head.fc."),
    ],
    source="ppcls.arch.backbone.legendary_models.pp_hgnet_v2.PPHGNetV2_B*",
)

for size, tag, top1, dropout in PP_HGNET:
    register_paddle_variant(f"clas/pp_hgnet_{size}", f"hgnet_{size}", paddle_name=f"PPHGNet_{size}", family="pp_hgnet",
                            paper="", module=__name__, top1=top1, tag=tag, paddle_mapping=paddle_mapping(dropout))
for size, top1 in PP_HGNETV2:
    register_paddle_variant(f"clas/pp_hgnetv2_{size}", f"hgnetv2_{size}", paddle_name=f"PPHGNetV2_{size.upper()}",
                            family="pp_hgnetv2", paper=PAPER_V2, module=__name__, top1=top1,
                            tag="ssld_stage2_ft_in1k", builder=_hgnetv2(f"hgnetv2_{size}", __name__),
                            paddle_mapping=PADDLE_MAPPING_V2)
