"""Registered segmentation models; importing this package runs every registration.

Adding a model family is one file here and one line below.
"""

from oarkit.seg.models import (  # noqa: F401  imported for their registrations
    bisenet,  # BiSeNetV1 (ResNet18-vd), BiSeNetV2
    deeplab,  # DeepLabV3 / V3+ on ResNet50/101-vd, OS8 and OS16
    fcn,  # FCN and OCRNet on HRNet-W18/W48
    pp_liteseg,  # PP-LiteSeg-T (STDC1), -B (STDC2)
    pp_mobileseg,  # PP-MobileSeg tiny / base
    pspnet,  # PSPNet on ResNet50/101-vd
    torchvision_models,  # seg/tv_<name>
    transformers_models,  # SegFormer B0-B5, UPerNet (ConvNeXt, Swin)
    unet,
)
