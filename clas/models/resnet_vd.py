"""ResNet-vd, PaddleClas's ResNet with the "D" tweaks (deep stem, average-pool shortcut), built by timm.

"Bag of Tricks for Image Classification with Convolutional Neural Networks", https://arxiv.org/abs/1812.01187.
PaddleClas's ``ResNet*_vd`` is timm's ``resnet*d``, but for one detail of the basic-block depths: PaddleClas gives
the first block of every stage a projection shortcut (``use_first_short_conv``), also the first block of ResNet18_vd
and ResNet34_vd, whose input and output shapes agree; timm's ``resnet18d``/``resnet34d`` use the identity there.
Their factories add that 1x1 convolution and batch norm (as ``layer1.0.downsample``), so timm's own ``ra2`` weights
do not fit them.

PaddleClas checkpoints of every depth (``ppcls.arch.backbone.legendary_models.resnet.ResNet*_vd``) convert onto
these modules with :func:`paddle_mapping`; the cards point at the PaddleClas release (converted on load) with
PaddleClas's top-1.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import timm
from torch import nn

from oarkit.clas.models.timm_backed import register_paddle_variant
from oarkit.core.interop import PaddleMapping

PAPER = "Bag of Tricks for Image Classification with Convolutional Neural Networks, https://arxiv.org/abs/1812.01187"

# (depth, PaddleClas ImageNet-1k top-1 of ResNet<depth>_vd)
RESNET_VD = ((18, 72.26), (34, 76.00), (50, 79.12), (101, 80.17), (152, 80.59), (200, 80.93))
# Blocks per stage (basic blocks for 18 and 34, bottlenecks above)
STAGES = {18: (2, 2, 2, 2), 34: (3, 4, 6, 3), 50: (3, 4, 6, 3), 101: (3, 4, 23, 3), 152: (3, 8, 36, 3),
          200: (3, 12, 48, 3)}
BASIC_BLOCK_DEPTHS = (18, 34)
# PaddleClas's deep stem ``stem.<i>.{conv,bn}`` in timm's ``conv1`` Sequential (conv, bn, relu, ...) and ``bn1``
_STEM = {("0", "conv"): "conv1.0.", ("0", "bn"): "conv1.1.", ("1", "conv"): "conv1.3.", ("1", "bn"): "conv1.4.",
         ("2", "conv"): "conv1.6.", ("2", "bn"): "bn1."}
# A block's ``conv<i>`` ConvBNLayer as timm's ``conv<i+1>`` + ``bn<i+1>``; the shortcut as ``downsample.1/.2``
_SHORT = {"conv": ".downsample.1.", "bn": ".downsample.2."}


def paddle_mapping(depth: int) -> PaddleMapping:
    """How a PaddleClas ``ResNet<depth>_vd`` checkpoint maps onto timm's ``resnet<depth>d``."""
    starts = [sum(STAGES[depth][:i]) for i in range(4)]

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


def _basic_block_resnet_vd(arch: str, module: str) -> Callable[..., nn.Module]:
    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        model = timm.create_model(arch, pretrained=False, num_classes=num_classes, **kwargs)
        channels = model.layer1[0].conv1.in_channels
        # PaddleClas's first shortcut: a 1x1 convolution and batch norm, without the vd average pool (stride 1);
        # the Identity keeps timm's downsample numbering (pool, conv, bn).
        model.layer1[0].downsample = nn.Sequential(nn.Identity(), nn.Conv2d(channels, channels, 1, bias=False),
                                                   nn.BatchNorm2d(channels))
        return model

    factory.__name__ = factory.__qualname__ = arch
    factory.__module__ = module
    factory.__doc__ = f"timm's ``{arch}`` with PaddleClas's first projection shortcut, randomly initialised."
    return factory


for depth, top1 in RESNET_VD:
    builder = _basic_block_resnet_vd(f"resnet{depth}d", __name__) if depth in BASIC_BLOCK_DEPTHS else None
    register_paddle_variant(f"clas/resnet{depth}_vd", f"resnet{depth}d", paddle_name=f"ResNet{depth}_vd",
                            family="resnet_vd", paper=PAPER, module=__name__, top1=top1, builder=builder,
                            paddle_mapping=paddle_mapping(depth))
