"""PP-LCNet and PP-LCNetV2, PaddleClas's CPU-friendly lightweight networks, built by timm.

PP-LCNet: "PP-LCNet: A Lightweight CPU Convolutional Neural Network", https://arxiv.org/abs/2109.15099.
PP-LCNetV2 has no paper; PaddleClas documents it (docs/en/models/PP-LCNetV2_en.md). timm ports both
(``lcnet_*``, ``lcnetv2_*``), with its own weights for PP-LCNet widths 0.5-1.0 and Paddle-converted ones for
PP-LCNetV2. The other PP-LCNet widths point at the PaddleClas release.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import timm
from torch import nn

from oarkit.clas.models.timm_backed import register_paddle_variant

PAPER = "PP-LCNet: A Lightweight CPU Convolutional Neural Network, https://arxiv.org/abs/2109.15099"
PAPER_V2 = ""  # no paper; see PaddleClas's PP-LCNetV2 documentation

# (PaddleClas width suffix, channel multiplier, PaddleClas ImageNet-1k top-1)
PP_LCNET = (("x0_25", 0.25, 51.86), ("x0_35", 0.35, 58.09), ("x0_5", 0.5, 63.14), ("x0_75", 0.75, 68.18),
            ("x1_0", 1.0, 71.32), ("x1_5", 1.5, 73.71), ("x2_0", 2.0, 75.18), ("x2_5", 2.5, 76.60))
# (size, PaddleClas ImageNet-1k top-1 of the non-SSLD weights; None: not recorded here)
PP_LCNETV2 = (("small", None), ("base", 77.04), ("large", None))


def _scaled_lcnet(variant: str, multiplier: float) -> Callable[..., nn.Module]:
    def factory(*, num_classes: int = 1000, **kwargs: Any) -> nn.Module:
        # timm names PP-LCNet widths 0.35-1.5 only; its private builder takes any channel multiplier. Imported
        # here so that a timm release renaming it breaks these widths (and their tests), not the whole kit.
        from timm.models.mobilenetv3 import _gen_lcnet

        head_cfg = {"architecture": variant, "first_conv": "conv_stem", "classifier": "classifier"}
        return _gen_lcnet(variant, multiplier, pretrained=False, num_classes=num_classes, pretrained_cfg=head_cfg,
                          **kwargs)

    factory.__name__ = factory.__qualname__ = variant
    factory.__doc__ = f"PP-LCNet with channel multiplier {multiplier}, randomly initialised."
    return factory


for suffix, width, top1 in PP_LCNET:
    arch = f"lcnet_{round(width * 100):03d}"
    builder = None if timm.is_model(arch) else _scaled_lcnet(arch, width)
    register_paddle_variant(f"clas/pp_lcnet_{suffix}", arch, paddle_name=f"PPLCNet_{suffix}", family="pp_lcnet",
                            paper=PAPER, module=__name__, top1=top1, builder=builder, head_like="lcnet_100")
for size, top1 in PP_LCNETV2:
    # PaddleClas's own (non-SSLD) weights, whose top-1 is the published one.
    register_paddle_variant(f"clas/pp_lcnetv2_{size}", f"lcnetv2_{size}", paddle_name=f"PPLCNetV2_{size}",
                            family="pp_lcnetv2", paper=PAPER_V2, module=__name__, top1=top1, tag="paddle_in1k")
