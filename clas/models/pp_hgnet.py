"""PP-HGNet and PP-HGNetV2, PaddleClas's GPU-friendly high-performance networks, built by timm.

Neither has a paper of its own: PaddleClas documents PP-HGNet (docs/en/models/PP-HGNet_en.md), and PP-HGNetV2 is
the backbone of RT-DETR ("DETRs Beat YOLOs on Real-time Object Detection", https://arxiv.org/abs/2304.08069).
timm ports both (``hgnet_*``, ``hgnetv2_b*``) with weights converted from PaddleClas's releases.
"""

from __future__ import annotations

from oarkit.clas.models.timm_backed import register_paddle_variant

PAPER_V2 = "DETRs Beat YOLOs on Real-time Object Detection (PP-HGNetV2 backbone), https://arxiv.org/abs/2304.08069"

# (size, timm tag, PaddleClas ImageNet-1k top-1 of those weights): tiny and small without SSLD, base with it.
PP_HGNET = (("tiny", "paddle_in1k", 79.83), ("small", "paddle_in1k", 81.51), ("base", "ssld_in1k", 85.00))
# (size, PaddleClas ImageNet-1k top-1 of the SSLD stage-2 weights)
PP_HGNETV2 = (("b0", 77.77), ("b1", 79.18), ("b2", 81.74), ("b3", 82.98), ("b4", 83.57), ("b5", 84.75),
              ("b6", 86.30))

for size, tag, top1 in PP_HGNET:
    register_paddle_variant(f"clas/pp_hgnet_{size}", f"hgnet_{size}", paddle_name=f"PPHGNet_{size}", family="pp_hgnet",
                            paper="", module=__name__, top1=top1, tag=tag)
for size, top1 in PP_HGNETV2:
    register_paddle_variant(f"clas/pp_hgnetv2_{size}", f"hgnetv2_{size}", paddle_name=f"PPHGNetV2_{size.upper()}",
                            family="pp_hgnetv2", paper=PAPER_V2, module=__name__, top1=top1,
                            tag="ssld_stage2_ft_in1k")
