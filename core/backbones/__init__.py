"""Backbones shared by more than one kit, with Paddle's module paths so Paddle checkpoints map onto them.

Every backbone takes keyword-only arguments, returns a list of stage features from ``forward`` and describes
them in ``feature_info`` (``[{"channels": C, "stride": S, "name": <Paddle module>}, ...]``) and ``out_channels``
(see :mod:`oarkit.core.backbones.base`)::

    from oarkit.core.backbones import DetMobileNetV3
    backbone = DetMobileNetV3(model_name="large", scale=0.5, disable_se=True)
    feats = backbone(images)        # four tensors at strides 4, 8, 16, 32 (backbone.strides)
    backbone.out_channels           # [16, 24, 56, 480]: what the neck is built for

Converting a Paddle state dict: the module paths are Paddle's, so only BatchNorm's statistics are renamed
(``_mean`` -> ``running_mean``, ``_variance`` -> ``running_var``) and Linear weights transposed; each family's
file states the Paddle class it mirrors and its path scheme. Re-parameterizable backbones (``PPLCNetV3``) have
``reparameterize()``, which ``oarkit.core.export`` calls before export.

Families: :mod:`~oarkit.core.backbones.resnet_vd` (ResNet-vd, PaddleSeg / PaddleOCR), :mod:`~.stdcnet` (STDC),
:mod:`~.hrnet` (HRNet, PaddleSeg), :mod:`~.mobilenet_v3` (PaddleClas and PaddleOCR det / rec layouts),
:mod:`~.pp_lcnet` (PP-LCNet, PP-LCNetV3), :mod:`~.cspresnet` (CSPRepResNet, PP-YOLOE), and :mod:`~.layers`
(conv-BN-activation blocks, SE, Paddle's hardsigmoid and 'same' padding).
"""

from oarkit.core.backbones.base import Backbone, FeatureInfo
from oarkit.core.backbones.cspresnet import CSPResNet
from oarkit.core.backbones.hrnet import HRNet, HRNet_W18, HRNet_W48
from oarkit.core.backbones.mobilenet_v3 import DetMobileNetV3, MobileNetV3, RecMobileNetV3
from oarkit.core.backbones.pp_lcnet import PPLCNet, PPLCNetV3
from oarkit.core.backbones.resnet_vd import ResNet18_vd, ResNet34_vd, ResNet50_vd, ResNet101_vd, ResNet_vd
from oarkit.core.backbones.stdcnet import STDC1, STDC2, STDCNet

__all__ = [
    "STDC1", "STDC2", "Backbone", "CSPResNet", "DetMobileNetV3", "FeatureInfo", "HRNet", "HRNet_W18", "HRNet_W48",
    "MobileNetV3", "PPLCNet", "PPLCNetV3", "RecMobileNetV3", "ResNet18_vd", "ResNet34_vd", "ResNet50_vd",
    "ResNet101_vd", "ResNet_vd", "STDCNet",
]
