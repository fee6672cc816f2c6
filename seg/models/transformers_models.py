"""SegFormer and UPerNet built by Hugging Face transformers from their configs (no download).

SegFormer: "SegFormer: Simple and Efficient Design for Semantic Segmentation with Transformers", Xie et al.,
NeurIPS 2021, https://arxiv.org/abs/2105.15203 — a Mix Transformer encoder (B0-B5) and an all-MLP decoder.
UPerNet: "Unified Perceptual Parsing for Scene Understanding", Xiao et al., ECCV 2018,
https://arxiv.org/abs/1807.10221 — a PPM + FPN decoder, here on ConvNeXt and Swin backbones with an FCN auxiliary
head, as in mmsegmentation. The subclasses below keep transformers' module names (so the hub checkpoints load
as they are) and only change ``forward`` to oarkit's contract: a list of logits at the input resolution, the
auxiliary logits included in training.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import (
    ConvNextConfig,
    SegformerConfig,
    SegformerForSemanticSegmentation,
    SwinConfig,
    UperNetConfig,
    UperNetForSemanticSegmentation,
)

from oarkit.core.backbones.layers import resize
from oarkit.core.registry import IMAGENET_MEAN, IMAGENET_STD, PretrainedWeights, register_model

from .zoo import TEST_INPUT, dataset_fields

SEGFORMER_PAPER = ("SegFormer: Simple and Efficient Design for Semantic Segmentation with Transformers, "
                   "https://arxiv.org/abs/2105.15203")
UPERNET_PAPER = "Unified Perceptual Parsing for Scene Understanding, https://arxiv.org/abs/1807.10221"
SEGFORMER_LICENSE = "NVIDIA Source Code License for SegFormer (non-commercial)"


class SegFormer(SegformerForSemanticSegmentation):
    """transformers' SegFormer returning ``[logits]`` at the input resolution (its decoder predicts at stride 4)."""

    loss_coefs = (1.0,)

    def forward(self, pixel_values: torch.Tensor) -> list[torch.Tensor]:  # type: ignore[override]
        hidden = self.segformer(pixel_values, output_hidden_states=True, return_dict=True).hidden_states
        return [resize(self.decode_head(hidden), pixel_values.shape[2:])]


class UPerNet(UperNetForSemanticSegmentation):
    """transformers' UPerNet returning ``[logits]``, plus the auxiliary head's logits in training."""

    loss_coefs = (1.0, 0.4)

    def __init__(self, config: UperNetConfig) -> None:
        super().__init__(config)
        # transformers' Swin backbone keeps its classifier's final norm, which feature maps never pass through:
        # frozen, so distributed training sees no parameter without a gradient (the weights still load by name).
        for name, param in self.named_parameters():
            if name.startswith("backbone.swin.layernorm."):
                param.requires_grad_(False)

    def forward(self, pixel_values: torch.Tensor) -> list[torch.Tensor]:  # type: ignore[override]
        features = self.backbone.forward_with_filtered_kwargs(pixel_values).feature_maps
        logits = [self.decode_head(features)]
        if self.training and self.auxiliary_head is not None:
            logits.append(self.auxiliary_head(features))
        return [resize(logit, pixel_values.shape[2:]) for logit in logits]


#: variant -> (depths, hidden sizes, decoder width, ADE20K mIoU from the paper, fine-tuning resolution)
SEGFORMER_SIZES = {
    "b0": ((2, 2, 2, 2), (32, 64, 160, 256), 256, 37.4, 512),
    "b1": ((2, 2, 2, 2), (64, 128, 320, 512), 256, 42.2, 512),
    "b2": ((3, 4, 6, 3), (64, 128, 320, 512), 768, 46.5, 512),
    "b3": ((3, 4, 18, 3), (64, 128, 320, 512), 768, 49.4, 512),
    "b4": ((3, 8, 27, 3), (64, 128, 320, 512), 768, 50.3, 512),
    "b5": ((3, 6, 40, 3), (64, 128, 320, 512), 768, 51.0, 640),
}


def segformer_config(variant: str, num_classes: int, **kwargs: Any) -> SegformerConfig:
    depths, hidden, decoder, _, _ = SEGFORMER_SIZES[variant]
    return SegformerConfig(depths=list(depths), hidden_sizes=list(hidden), decoder_hidden_size=decoder,
                           num_labels=num_classes, **kwargs)


def _register_segformer(variant: str) -> None:
    depths, hidden, decoder, miou, size = SEGFORMER_SIZES[variant]

    def factory(*, num_classes: int = 150, **kwargs: Any) -> SegFormer:
        return SegFormer(segformer_config(variant, num_classes, **kwargs))

    factory.__name__ = factory.__qualname__ = f"segformer_{variant}"
    factory.__doc__ = f"SegFormer-{variant.upper()} (MiT-{variant.upper()} encoder, {decoder}-wide decoder)."
    hub_id = f"nvidia/segformer-{variant}-finetuned-ade-{size}-{size}"
    register_model(f"seg/segformer_{variant}", factory, task="seg", family="segformer",
                   weights=PretrainedWeights(hub_id=hub_id, file_name="pytorch_model.bin", format="pth",
                                             license=SEGFORMER_LICENSE, source=f"NVIDIA, hf.co/{hub_id}"),
                   paper=SEGFORMER_PAPER,
                   classifier=("decode_head.classifier",), metrics={"ade20k_miou": miou},
                   metrics_source="SegFormer paper, Table 1 (ADE20K val, single scale)", test_input_size=TEST_INPUT,
                   tags=("large",) if variant in ("b3", "b4", "b5") else (),
                   **dataset_fields("ade20k", mean=IMAGENET_MEAN, std=IMAGENET_STD, size=(size, size)))


#: variant -> (backbone config, auxiliary head input channels, ADE20K mIoU of mmsegmentation's release)
UPERNET_SIZES: dict[str, tuple[Any, int, float]] = {
    "convnext_tiny": (lambda: ConvNextConfig(depths=[3, 3, 9, 3], hidden_sizes=[96, 192, 384, 768],
                                             out_features=["stage1", "stage2", "stage3", "stage4"]), 384, 46.11),
    "convnext_small": (lambda: ConvNextConfig(depths=[3, 3, 27, 3], hidden_sizes=[96, 192, 384, 768],
                                              out_features=["stage1", "stage2", "stage3", "stage4"]), 384, 48.56),
    "swin_tiny": (lambda: SwinConfig(embed_dim=96, depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24], window_size=7,
                                     out_features=["stage1", "stage2", "stage3", "stage4"]), 384, 44.41),
    "swin_small": (lambda: SwinConfig(embed_dim=96, depths=[2, 2, 18, 2], num_heads=[3, 6, 12, 24], window_size=7,
                                      out_features=["stage1", "stage2", "stage3", "stage4"]), 384, 47.72),
}


def upernet_config(variant: str, num_classes: int, **kwargs: Any) -> UperNetConfig:
    backbone, aux_channels, _ = UPERNET_SIZES[variant]
    return UperNetConfig(backbone_config=backbone(), auxiliary_in_channels=aux_channels, num_labels=num_classes,
                         **kwargs)


def _register_upernet(variant: str) -> None:
    _, _, miou = UPERNET_SIZES[variant]

    def factory(*, num_classes: int = 150, **kwargs: Any) -> UPerNet:
        return UPerNet(upernet_config(variant, num_classes, **kwargs))

    factory.__name__ = factory.__qualname__ = f"upernet_{variant}"
    factory.__doc__ = f"UPerNet on {variant.replace('_', '-')} with an FCN auxiliary head."
    hub_id = f"openmmlab/upernet-{variant.replace('_', '-')}"
    register_model(f"seg/upernet_{variant}", factory, task="seg", family="upernet",
                   weights=PretrainedWeights(hub_id=hub_id, file_name="pytorch_model.bin", format="pth",
                                             license="MIT", source=f"OpenMMLab, hf.co/{hub_id}"),
                   paper=UPERNET_PAPER,
                   classifier=("decode_head.classifier", "auxiliary_head.classifier"),
                   metrics={"ade20k_miou": miou},
                   metrics_source="mmsegmentation model zoo, configs/upernet (ADE20K val, single scale)",
                   test_input_size=TEST_INPUT, tags=("large",) if variant.endswith("small") else (),
                   **dataset_fields("ade20k", mean=IMAGENET_MEAN, std=IMAGENET_STD))


for _variant in SEGFORMER_SIZES:
    _register_segformer(_variant)
for _variant in UPERNET_SIZES:
    _register_upernet(_variant)
