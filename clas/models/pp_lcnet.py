"""PP-LCNet and PP-LCNetV2, PaddleClas's CPU-friendly lightweight networks, built by timm.

PP-LCNet: "PP-LCNet: A Lightweight CPU Convolutional Neural Network", https://arxiv.org/abs/2109.15099.
PP-LCNetV2 has no paper; PaddleClas documents it (docs/en/models/PP-LCNetV2_en.md). timm ports both
(``lcnet_*``, ``lcnetv2_*``), with its own weights for PP-LCNet widths 0.5-1.0 and Paddle-converted ones for
PP-LCNetV2. The other PP-LCNet widths point at the PaddleClas release.

PaddleClas checkpoints of PP-LCNet (``ppcls.arch.backbone.legendary_models.pp_lcnet.PPLCNet_x*``) and PP-LCNetV2
(``...pp_lcnet_v2.PPLCNetV2_*``) convert onto these modules with :data:`PADDLE_MAPPING` and
:data:`PADDLE_MAPPING_V2` (``oarkit convert paddle``). Both PaddleClas heads apply
``Dropout(p=0.2, mode="downscale_in_infer")`` before the classifier, which multiplies by 0.8 at inference; the
mappings fold that factor into the classifier weight (not its bias), so the converted model computes Paddle's
eval output with an ordinary, export-friendly head. PP-LCNetV2's re-parameterizable blocks also hold the fused
depthwise ``dw_conv`` (weight and bias) that Paddle only uses after ``re_parameterize()``; a training checkpoint's
copy is never used, and the mapping leaves it out (timm builds that convolution when it folds the branches).
The V2 squeeze-and-excitation gate is a true sigmoid (Paddle names the layer ``hardsigmoid``), as in timm.

PP-LCNet cards point at the PaddleClas release (converted on load) with PaddleClas's top-1: timm's ``lcnet_*``
weights are timm's own training. PP-LCNetV2 cards load timm's copy of PaddleClas's weights.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import timm
from torch import nn

from oarkit.clas.models.timm_backed import register_paddle_variant
from oarkit.core.interop import PaddleMapping

PAPER = "PP-LCNet: A Lightweight CPU Convolutional Neural Network, https://arxiv.org/abs/2109.15099"
PAPER_V2 = ""  # no paper; see PaddleClas's PP-LCNetV2 documentation

# (PaddleClas width suffix, channel multiplier, PaddleClas ImageNet-1k top-1)
PP_LCNET = (("x0_25", 0.25, 51.86), ("x0_35", 0.35, 58.09), ("x0_5", 0.5, 63.14), ("x0_75", 0.75, 68.18),
            ("x1_0", 1.0, 71.32), ("x1_5", 1.5, 73.71), ("x2_0", 2.0, 75.18), ("x2_5", 2.5, 76.60))
# (size, PaddleClas ImageNet-1k top-1 of the non-SSLD weights; None: not recorded here)
PP_LCNETV2 = (("small", None), ("base", 77.04), ("large", None))

# PaddleClas's PPLCNet head: ``Dropout(p=dropout_prob, mode="downscale_in_infer")``, dropout_prob 0.2 for every width
PADDLE_HEAD_DROPOUT = 0.2


def _downscale_in_infer(weight: np.ndarray) -> np.ndarray:
    return weight * (1.0 - PADDLE_HEAD_DROPOUT)


def _timm_block(match: re.Match[str]) -> str:
    """PaddleClas's ``blocks<stage>.<i>`` (stages 2-6) as timm's ``blocks.<stage>.<i>`` (stages 0-5): timm splits
    PaddleClas's blocks5 after its second block (the 3x3 -> 5x5 kernel change)."""
    stage, index = int(match.group(1)) - 2, int(match.group(2))
    if stage > 3 or (stage == 3 and index >= 2):
        stage, index = stage + 1, index - 2 if stage == 3 else index
    return f"blocks.{stage}.{index}."


PADDLE_MAPPING = PaddleMapping(
    renames=[
        (r"^conv1\.conv\.", "conv_stem."),
        (r"^conv1\.bn\.", "bn1."),
        (r"^blocks(\d)\.(\d+)\.", _timm_block),
        (r"\.dw_conv\.conv\.", ".conv_dw."),
        (r"\.dw_conv\.bn\.", ".bn1."),
        (r"\.pw_conv\.conv\.", ".conv_pw."),
        (r"\.pw_conv\.bn\.", ".bn2."),
        (r"\.se\.conv1\.", ".se.conv_reduce."),
        (r"\.se\.conv2\.", ".se.conv_expand."),
        (r"^last_conv\.", "conv_head."),
        (r"^fc\.", "classifier."),
    ],
    zeros=(r"^conv_head\.bias$",),  # PaddleClas's last_conv has no bias
    transforms=[(r"^classifier\.weight$", _downscale_in_infer)],
    source="ppcls.arch.backbone.legendary_models.pp_lcnet.PPLCNet_x*",
)

PADDLE_MAPPING_V2 = PaddleMapping(
    renames=[
        (r"\.se\.conv1\.", ".se.fc1."),
        (r"\.se\.conv2\.", ".se.fc2."),
        (r"\.pw_conv_1\.", ".pw_conv.0."),
        (r"\.pw_conv_2\.", ".pw_conv.1."),
        (r"^last_conv\.", "conv_head."),
        (r"^fc\.", "classifier."),
    ],
    # the fused depthwise convolution of the re-parameterizable blocks, unused until re_parameterize()
    drop=(r"^stages\.\d+\.\d+\.dw_conv\.(weight|bias)$",),
    transforms=[(r"^classifier\.weight$", _downscale_in_infer)],
    source="ppcls.arch.backbone.legendary_models.pp_lcnet_v2.PPLCNetV2_*",
)


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
                            paper=PAPER, module=__name__, top1=top1, builder=builder, head_like="lcnet_100",
                            paddle_mapping=PADDLE_MAPPING)
for size, top1 in PP_LCNETV2:
    # PaddleClas's own (non-SSLD) weights, whose top-1 is the published one.
    register_paddle_variant(f"clas/pp_lcnetv2_{size}", f"lcnetv2_{size}", paddle_name=f"PPLCNetV2_{size}",
                            family="pp_lcnetv2", paper=PAPER_V2, module=__name__, top1=top1, tag="paddle_in1k",
                            paddle_mapping=PADDLE_MAPPING_V2)
