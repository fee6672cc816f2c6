"""A chosen set of timm families under their timm names (``clas/convnext_atto``), with timm's default weights.

Everything else in timm is reachable through the ``timm/`` namespace (see ``timm_namespace``); the names here are
the ones oarkit's configs, tests and benchmarks use. Card fields come from timm's pretrained settings.
"""

from __future__ import annotations

from oarkit.clas.models.timm_backed import timm_card_fields, timm_cfg, timm_factory
from oarkit.core.registry import register_model

CONVNEXT = "A ConvNet for the 2020s, https://arxiv.org/abs/2201.03545"
EFFICIENTNET = "EfficientNet: Rethinking Model Scaling for Convolutional Neural Networks, https://arxiv.org/abs/1905.11946"
REGNET = "Designing Network Design Spaces, https://arxiv.org/abs/2003.13678"
GHOSTNET = "GhostNet: More Features from Cheap Operations, https://arxiv.org/abs/1911.11907"
REPVGG = "RepVGG: Making VGG-style ConvNets Great Again, https://arxiv.org/abs/2101.03697"
MOBILEVIT = ("MobileViT: Light-weight, General-purpose, and Mobile-friendly Vision Transformer, "
             "https://arxiv.org/abs/2110.02178")
DEIT = "Training data-efficient image transformers & distillation through attention, https://arxiv.org/abs/2012.12877"
VIT = ("How to train your ViT? Data, Augmentation, and Regularization in Vision Transformers, "
       "https://arxiv.org/abs/2106.10270")
SWIN = "Swin Transformer: Hierarchical Vision Transformer using Shifted Windows, https://arxiv.org/abs/2103.14030"
LEVIT = "LeViT: a Vision Transformer in ConvNet's Clothing for Faster Inference, https://arxiv.org/abs/2104.01136"
FASTVIT = ("FastViT: A Fast Hybrid Vision Transformer using Structural Reparameterization, "
           "https://arxiv.org/abs/2303.14189")
MOBILEONE = "MobileOne: An Improved One millisecond Mobile Backbone, https://arxiv.org/abs/2206.04040"
TINYNET = "Model Rubik's Cube: Twisting Resolution, Depth and Width for TinyNets, https://arxiv.org/abs/2010.14819"
HRNET = "Deep High-Resolution Representation Learning for Visual Recognition, https://arxiv.org/abs/1908.07919"

# (timm architecture, family, paper)
TIMM_MODELS = (
    ("convnext_atto", "convnext", CONVNEXT),
    ("convnext_nano", "convnext", CONVNEXT),
    ("convnext_tiny", "convnext", CONVNEXT),
    ("efficientnet_b0", "efficientnet", EFFICIENTNET),
    ("efficientnet_b1", "efficientnet", EFFICIENTNET),
    ("efficientnet_b2", "efficientnet", EFFICIENTNET),
    ("efficientnet_b3", "efficientnet", EFFICIENTNET),
    ("regnety_004", "regnet", REGNET),
    ("regnety_008", "regnet", REGNET),
    ("regnety_016", "regnet", REGNET),
    ("ghostnet_100", "ghostnet", GHOSTNET),
    ("repvgg_a0", "repvgg", REPVGG),
    ("repvgg_b0", "repvgg", REPVGG),
    ("mobilevit_xs", "mobilevit", MOBILEVIT),
    ("mobilevit_s", "mobilevit", MOBILEVIT),
    ("deit_tiny_patch16_224", "deit", DEIT),
    ("deit_small_patch16_224", "deit", DEIT),
    ("vit_tiny_patch16_224", "vit", VIT),
    ("vit_small_patch16_224", "vit", VIT),
    ("swin_tiny_patch4_window7_224", "swin", SWIN),
    ("levit_128s", "levit", LEVIT),
    ("fastvit_t8", "fastvit", FASTVIT),
    ("mobileone_s0", "mobileone", MOBILEONE),
    ("mobileone_s1", "mobileone", MOBILEONE),
    ("mobileone_s2", "mobileone", MOBILEONE),
    ("mobileone_s3", "mobileone", MOBILEONE),
    ("mobileone_s4", "mobileone", MOBILEONE),
    ("tinynet_a", "tinynet", TINYNET),
    ("tinynet_b", "tinynet", TINYNET),
    ("hrnet_w18_small", "hrnet", HRNET),
)

for arch, family, paper in TIMM_MODELS:
    register_model(f"clas/{arch}", timm_factory(arch, __name__), task="clas", family=family, paper=paper,
                   **timm_card_fields(timm_cfg(arch)))
