"""ResNet-vd, PaddleClas's ResNet with the "D" tweaks (deep stem, average-pool shortcut), built by timm.

"Bag of Tricks for Image Classification with Convolutional Neural Networks", https://arxiv.org/abs/1812.01187.
PaddleClas's ``ResNet*_vd`` is timm's ``resnet*d``; the weights are timm's default tags (RandAugment "ra2").
"""

from __future__ import annotations

from oarkit.clas.models.timm_backed import register_paddle_variant

PAPER = "Bag of Tricks for Image Classification with Convolutional Neural Networks, https://arxiv.org/abs/1812.01187"

# (depth, PaddleClas ImageNet-1k top-1 of ResNet<depth>_vd)
RESNET_VD = ((18, 72.26), (34, 76.00), (50, 79.12), (101, 80.17), (152, 80.59), (200, 80.93))

for depth, top1 in RESNET_VD:
    register_paddle_variant(f"clas/resnet{depth}_vd", f"resnet{depth}d", paddle_name=f"ResNet{depth}_vd",
                            family="resnet_vd", paper=PAPER, module=__name__, top1=top1)
