"""MobileNetV3 small and large at PaddleClas's widths, built by timm.

"Searching for MobileNetV3", https://arxiv.org/abs/1905.02244. timm names some widths (``mobilenetv3_small_050``
...) and has weights for a few; the other widths use timm's builder with a channel multiplier and point at the
PaddleClas release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import timm
from torch import nn

from oarkit.clas.models.timm_backed import register_paddle_variant

PAPER = "Searching for MobileNetV3, https://arxiv.org/abs/1905.02244"

# (PaddleClas width suffix, channel multiplier, PaddleClas ImageNet-1k top-1 of the small / large model)
WIDTHS = (("x0_35", 0.35, 53.03, 64.32), ("x0_5", 0.5, 59.21, 69.24), ("x0_75", 0.75, 66.02, 73.14),
          ("x1_0", 1.0, 68.24, 75.32), ("x1_25", 1.25, 70.67, 76.41))


def _scaled_mobilenet_v3(variant: str, multiplier: float) -> Callable[..., nn.Module]:
    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        # timm names only some MobileNetV3 widths; its private builder takes any channel multiplier (the variant
        # name picks small or large). Imported here so that a timm release renaming it breaks these widths only.
        from timm.models.mobilenetv3 import _gen_mobilenet_v3

        head_cfg = {"architecture": variant, "first_conv": "conv_stem", "classifier": "classifier"}
        return _gen_mobilenet_v3(variant, multiplier, pretrained=False, num_classes=num_classes,
                                 pretrained_cfg=head_cfg, **kwargs)

    factory.__name__ = factory.__qualname__ = variant
    factory.__doc__ = f"MobileNetV3 ({variant}) with channel multiplier {multiplier}, randomly initialised."
    return factory


for suffix, width, *top1s in WIDTHS:
    for size, top1 in zip(("small", "large"), top1s):
        arch = f"mobilenetv3_{size}_{round(width * 100):03d}"
        builder = None if timm.is_model(arch) else _scaled_mobilenet_v3(arch, width)
        register_paddle_variant(f"clas/mobilenetv3_{size}_{suffix}", arch, paddle_name=f"MobileNetV3_{size}_{suffix}",
                                family="mobilenet_v3", paper=PAPER, module=__name__, top1=top1, builder=builder,
                                head_like=f"mobilenetv3_{size}_100")
