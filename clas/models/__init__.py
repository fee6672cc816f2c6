"""Registered classification models; importing this package runs every registration.

Adding a model family is one file here and one line below.
"""

from oarkit.clas.models import (  # noqa: F401  imported for their registrations
    mobilenet_v3,  # PaddleClas names backed by timm
    pp_hgnet,
    pp_lcnet,
    resnet_vd,
    timm_models,  # timm names (clas/convnext_atto ...)
    timm_namespace,  # the timm/ catalogue
    torchvision_models,  # clas/tv_<name>
)
