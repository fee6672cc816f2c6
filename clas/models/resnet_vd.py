"""ResNet-vd, PaddleClas's ResNet with the "D" tweaks (deep stem, average-pool shortcut), built by timm.

"Bag of Tricks for Image Classification with Convolutional Neural Networks", https://arxiv.org/abs/1812.01187.
PaddleClas's ``ResNet*_vd`` is timm's ``resnet*d``.

PaddleClas checkpoints of ResNet50/101/152/200_vd (``ppcls.arch.backbone.legendary_models.resnet``) convert onto
these modules with :func:`paddle_mapping`, and their cards point at the PaddleClas release (converted on load)
with PaddleClas's top-1. ResNet18_vd and ResNet34_vd do not convert: PaddleClas gives their first basic block a
1x1 convolution shortcut (``use_first_short_conv``) that timm's ``resnet18d``/``resnet34d`` lack; their cards
load timm's own weights (RandAugment "ra2") and show timm's figure for them.
"""

from __future__ import annotations

import re

from oarkit.clas.models.timm_backed import register_paddle_variant
from oarkit.core.interop import PaddleMapping

PAPER = "Bag of Tricks for Image Classification with Convolutional Neural Networks, https://arxiv.org/abs/1812.01187"

# (depth, PaddleClas ImageNet-1k top-1 of ResNet<depth>_vd)
RESNET_VD = ((18, 72.26), (34, 76.00), (50, 79.12), (101, 80.17), (152, 80.59), (200, 80.93))
# ImageNet-1k top-1 at 224 px of timm's own weights, for the depths whose cards load them
TIMM_SOURCE = "timm results at 224 px (model card huggingface.co/timm/{})"
TIMM_TOP1 = {18: ("resnet18d.ra2_in1k", 72.26), 34: ("resnet34d.ra2_in1k", 77.10)}

# Bottleneck blocks per stage of the depths whose PaddleClas checkpoints map onto timm's modules
BOTTLENECK_STAGES = {50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3), 200: (3, 12, 48, 3)}
# PaddleClas's deep stem ``stem.<i>.{conv,bn}`` in timm's ``conv1`` Sequential (conv, bn, relu, ...) and ``bn1``
_STEM = {("0", "conv"): "conv1.0.", ("0", "bn"): "conv1.1.", ("1", "conv"): "conv1.3.", ("1", "bn"): "conv1.4.",
         ("2", "conv"): "conv1.6.", ("2", "bn"): "bn1."}
# A block's ``conv<i>`` ConvBNLayer as timm's ``conv<i+1>`` + ``bn<i+1>``; the shortcut as ``downsample.1/.2``
_SHORT = {"conv": ".downsample.1.", "bn": ".downsample.2."}


def paddle_mapping(depth: int) -> PaddleMapping:
    """How a PaddleClas ``ResNet<depth>_vd`` checkpoint maps onto timm's ``resnet<depth>d``."""
    starts = [sum(BOTTLENECK_STAGES[depth][:i]) for i in range(4)]

    def block(match: re.Match[str]) -> str:  # PaddleClas numbers blocks flat, timm per stage
        n = int(match.group(1))
        stage = max(i for i, start in enumerate(starts) if n >= start)
        return f"layer{stage + 1}.{n - starts[stage]}."

    return PaddleMapping(
        renames=[
            (r"^stem\.(\d)\.(conv|bn)\.", lambda m: _STEM[m.group(1), m.group(2)]),
            (r"^blocks\.(\d+)\.", block),
            (r"\.conv(\d)\.(conv|bn)\.", lambda m: f".{m.group(2)}{int(m.group(1)) + 1}."),
            (r"\.short\.(conv|bn)\.", lambda m: _SHORT[m.group(1)]),
        ],
        source=f"ppcls.arch.backbone.legendary_models.resnet.ResNet{depth}_vd",
    )


for depth, top1 in RESNET_VD:
    timm_top1 = (TIMM_TOP1[depth][1], TIMM_SOURCE.format(TIMM_TOP1[depth][0])) if depth in TIMM_TOP1 else None
    register_paddle_variant(f"clas/resnet{depth}_vd", f"resnet{depth}d", paddle_name=f"ResNet{depth}_vd",
                            family="resnet_vd", paper=PAPER, module=__name__, top1=top1, timm_top1=timm_top1,
                            paddle_mapping=paddle_mapping(depth) if depth in BOTTLENECK_STAGES else None)
