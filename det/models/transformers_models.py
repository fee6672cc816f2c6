"""RT-DETR, RT-DETRv2 and D-FINE through transformers, under PaddleDetection's names.

"DETRs Beat YOLOs on Real-time Object Detection" (RT-DETR), Zhao et al., 2023, https://arxiv.org/abs/2304.08069;
"RT-DETRv2", Lv et al., 2024, https://arxiv.org/abs/2407.17140; "D-FINE", Peng et al., 2024,
https://arxiv.org/abs/2410.13842. transformers 5 builds each from a config alone (offline) and carries the
losses (Hungarian matching, varifocal, L1, GIoU, denoising and auxiliary losses; D-FINE adds its fine-grained
localisation and decoupled distillation losses). The variant configs follow the published ones: ResNet-vd
18/34/50/101 (``RTDetrResNetConfig``) or PP-HGNetV2 B0/B2/B4/B5 (``HGNetV2Config``) backbones, the hybrid encoder's
width and expansion, the decoder depth.

The contract: train mode ``model(images, targets)`` converts the kit's targets (xyxy pixels, 0-based labels) into
transformers' (``class_labels``, normalised cxcywh ``boxes``) and returns the total loss and its main parts; eval
mode returns ``(logits [B, Q, C], pred_boxes [B, Q, 4] normalised cxcywh, image_size [2] (height, width))``: the
queries' raw outputs, plus the input size that :meth:`TransformersDETR.decode` scales the relative boxes by.

Weights: RT-DETR(-v2) ResNet variants and D-FINE point at their converted checkpoints on the Hugging Face hub
(``PekingU/rtdetr_*``, ``ustc-community/dfine_*``); RT-DETR-L/X (transformers' RT-DETR on its ``HGNetV2Config``
backbone, PP-HGNetV2 L/X as D-FINE uses it) at PaddleDetection's ``.pdparams``, converted by the name mapping of
:mod:`.rtdetr_paddle`. That mapping places every tensor of Paddle's names and shapes; parity with Paddle's outputs is
unproven (no Paddle RT-DETR exists on the package registry to compare with: paddledet 2.6.0 predates it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.registry import DetectorInput, PretrainedWeights, register_model

from .base import Decoded, DetectionModel, Target, check_targets
from .rtdetr_paddle import PADDLE_MAPPING as RTDETR_PADDLE_MAPPING
from .zoo import COCO_CLASSES

RTDETR_PAPER = "DETRs Beat YOLOs on Real-time Object Detection, https://arxiv.org/abs/2304.08069"
RTDETRV2_PAPER = "RT-DETRv2: Improved Baseline with Bag-of-Freebies, https://arxiv.org/abs/2407.17140"
DFINE_PAPER = "D-FINE: Redefine Regression Task of DETRs as Fine-grained Distribution Refinement, " \
              "https://arxiv.org/abs/2410.13842"

#: PP-HGNetV2 stage tables (PaddleDetection / D-FINE ``arch_configs``): stem channels, per stage in, mid, out channels,
#: blocks, downsample, light block, kernel, layers
HGNETV2 = {
    "B0": ((3, 16, 16), [(16, 16, 64, 1, False, False, 3, 3), (64, 32, 256, 1, True, False, 3, 3),
                         (256, 64, 512, 2, True, True, 5, 3), (512, 128, 1024, 1, True, True, 5, 3)]),
    "B2": ((3, 24, 32), [(32, 32, 96, 1, False, False, 3, 4), (96, 64, 384, 1, True, False, 3, 4),
                         (384, 128, 768, 3, True, True, 5, 4), (768, 256, 1536, 1, True, True, 5, 4)]),
    "B4": ((3, 32, 48), [(48, 48, 128, 1, False, False, 3, 6), (128, 96, 512, 1, True, False, 3, 6),
                         (512, 192, 1024, 3, True, True, 5, 6), (1024, 384, 2048, 1, True, True, 5, 6)]),
    "B5": ((3, 32, 64), [(64, 64, 128, 1, False, False, 3, 6), (128, 128, 512, 2, True, False, 3, 6),
                         (512, 256, 1024, 5, True, True, 5, 6), (1024, 512, 2048, 2, True, True, 5, 6)]),
}


def hgnetv2_config(variant: str, out_features: Sequence[str] = ("stage2", "stage3", "stage4")) -> Any:
    """transformers' ``HGNetV2Config`` of a PP-HGNetV2 variant."""
    from transformers import HGNetV2Config

    stem, stages = HGNETV2[variant]
    column = lambda i: [s[i] for s in stages]  # noqa: E731
    return HGNetV2Config(stem_channels=list(stem), stage_in_channels=column(0), stage_mid_channels=column(1),
                         stage_out_channels=column(2), stage_num_blocks=column(3), stage_downsample=column(4),
                         stage_light_block=column(5), stage_kernel_size=column(6), stage_numb_of_layers=column(7),
                         hidden_sizes=column(2), embedding_size=stem[2], depths=column(3),
                         out_features=list(out_features))  # hidden_sizes give the backbone's reported channels


def resnet_vd_config(depth: int) -> Any:
    """transformers' ``RTDetrResNetConfig`` of ResNet-vd 18/34/50/101."""
    from transformers import RTDetrResNetConfig

    basic = depth in (18, 34)
    depths = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3], 101: [3, 4, 23, 3]}[depth]
    return RTDetrResNetConfig(depths=depths, layer_type="basic" if basic else "bottleneck",
                              hidden_sizes=[64, 128, 256, 512] if basic else [256, 512, 1024, 2048],
                              out_features=["stage2", "stage3", "stage4"])


class TransformersDETR(DetectionModel):
    """A transformers RT-DETR / RT-DETRv2 / D-FINE under the kit's contract (see the module docstring).

    Args:
        family: ``rtdetr``, ``rtdetr_v2`` or ``d_fine``.
        num_classes: classes.
        config: the transformers config's keyword arguments (``backbone_config`` included).
    """

    def __init__(self, family: str, *, num_classes: int, config: dict[str, Any]) -> None:
        super().__init__()
        import transformers as tf

        classes = {"rtdetr": (tf.RTDetrConfig, tf.RTDetrForObjectDetection),
                   "rtdetr_v2": (tf.RTDetrV2Config, tf.RTDetrV2ForObjectDetection),
                   "d_fine": (tf.DFineConfig, tf.DFineForObjectDetection)}
        config_class, model_class = classes[family]
        self.num_classes, self.family = num_classes, family
        self.model = model_class(config_class(num_labels=num_classes, **config))
        self.stride_multiple = 32

    def forward(self, images: torch.Tensor, targets: Sequence[Target] | None = None) -> Any:
        h, w = images.shape[-2:]
        if self.training:
            targets = check_targets(targets, images.shape[0])
            scale = images.new_tensor([w, h, w, h])
            labels = []
            for t in targets:
                b = t["boxes"].to(images) / scale
                cxcywh = torch.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0],
                                      b[:, 3] - b[:, 1]], dim=-1)
                labels.append({"class_labels": t["labels"].to(images.device).long(), "boxes": cxcywh})
            out = self.model(pixel_values=images, labels=labels)
            parts = {k: v for k, v in out.loss_dict.items()
                     if k.startswith("loss_") and not any(s in k for s in ("_aux", "_dn", "_enc", "_pre"))}
            return {"loss": out.loss, **parts}
        out = self.model(pixel_values=images)
        return out.logits, out.pred_boxes, images.new_tensor([h, w])

    def decode(self, raw: Sequence[torch.Tensor]) -> Decoded:
        logits, boxes, size = raw
        cx, cy, bw, bh = boxes.unbind(-1)
        xyxy = torch.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], dim=-1)
        return xyxy * torch.stack([size[1], size[0], size[1], size[0]]), torch.sigmoid(logits)


def _hub_prefix(state: dict[str, Any], model: nn.Module) -> dict[str, Any]:
    """The hub checkpoints name transformers' ``*ForObjectDetection``: here it is the wrapper's ``model``."""
    return {f"model.{k}": v for k, v in state.items()}


#: name -> (family, paper, backbone, config overrides, COCO mAP, weights: hub id or PaddleDetection config)
VARIANTS: dict[str, tuple[str, str, tuple[str, Any], dict[str, Any], float, str]] = {}
_R = {"encoder_in_channels": [128, 256, 512], "hidden_expansion": 0.5}
_R101 = {"encoder_hidden_dim": 384, "encoder_ffn_dim": 2048, "decoder_in_channels": [384, 384, 384]}
for _v, _family, _paper, _hub in (("", "rtdetr", RTDETR_PAPER, "PekingU/rtdetr_{}"),
                                  ("v2", "rtdetr_v2", RTDETRV2_PAPER, "PekingU/rtdetr_v2_{}")):
    _maps = {"": (46.5, 48.9, 53.1, 54.3), "v2": (47.9, 49.9, 53.4, 54.3)}[_v]
    VARIANTS[f"rtdetr{_v}_r18vd"] = (_family, _paper, ("resnet", 18), {**_R, "decoder_layers": 3}, _maps[0],
                                     _hub.format("r18vd"))
    VARIANTS[f"rtdetr{_v}_r34vd"] = (_family, _paper, ("resnet", 34), {**_R, "decoder_layers": 4}, _maps[1],
                                     _hub.format("r34vd"))
    VARIANTS[f"rtdetr{_v}_r50vd"] = (_family, _paper, ("resnet", 50), {}, _maps[2], _hub.format("r50vd"))
    VARIANTS[f"rtdetr{_v}_r101vd"] = (_family, _paper, ("resnet", 101), _R101, _maps[3], _hub.format("r101vd"))
VARIANTS["rtdetr_hgnetv2_l"] = ("rtdetr", RTDETR_PAPER, ("hgnetv2", "B4"), {}, 53.0, "rtdetr_hgnetv2_l_6x_coco")
VARIANTS["rtdetr_hgnetv2_x"] = ("rtdetr", RTDETR_PAPER, ("hgnetv2", "B5"), _R101, 54.8, "rtdetr_hgnetv2_x_6x_coco")
_DFINE_SMALL = {"encoder_hidden_dim": 128, "encoder_ffn_dim": 512, "d_model": 128, "decoder_ffn_dim": 512,
                "encoder_in_channels": [512, 1024], "feat_strides": [16, 32], "decoder_in_channels": [128, 128],
                "num_feature_levels": 2, "encode_proj_layers": [1], "hidden_expansion": 0.34, "depth_mult": 0.5,
                "decoder_layers": 3}
VARIANTS["dfine_n"] = ("d_fine", DFINE_PAPER, ("hgnetv2", "B0", ("stage3", "stage4")), _DFINE_SMALL, 42.8,
                       "ustc-community/dfine_n_coco")
VARIANTS["dfine_s"] = ("d_fine", DFINE_PAPER, ("hgnetv2", "B0"),
                       {"encoder_in_channels": [256, 512, 1024], "hidden_expansion": 0.5, "depth_mult": 0.34,
                        "decoder_layers": 3}, 48.5, "ustc-community/dfine_s_coco")
VARIANTS["dfine_m"] = ("d_fine", DFINE_PAPER, ("hgnetv2", "B2"),
                       {"encoder_in_channels": [384, 768, 1536], "hidden_expansion": 0.67, "depth_mult": 0.67,
                        "decoder_layers": 4}, 52.3, "ustc-community/dfine_m_coco")
VARIANTS["dfine_l"] = ("d_fine", DFINE_PAPER, ("hgnetv2", "B4"), {}, 54.0, "ustc-community/dfine_l_coco")
VARIANTS["dfine_x"] = ("d_fine", DFINE_PAPER, ("hgnetv2", "B5"),
                       {"encoder_hidden_dim": 384, "encoder_ffn_dim": 2048, "decoder_in_channels": [384, 384, 384]},
                       55.8, "ustc-community/dfine_x_coco")


def _register(name: str, family: str, paper: str, backbone: tuple[Any, ...], overrides: dict[str, Any],
              coco_map: float, source: str) -> None:
    def factory(*, num_classes: int = len(COCO_CLASSES), **kwargs: Any) -> TransformersDETR:
        config = dict(overrides)
        config["backbone_config"] = resnet_vd_config(backbone[1]) if backbone[0] == "resnet" \
            else hgnetv2_config(*backbone[1:])
        config.update(kwargs)
        return TransformersDETR(family, num_classes=num_classes, config=config)

    factory.__name__, factory.__doc__ = name, f"{name} ({family}) through transformers, configured from its config."
    if "/" in source:
        weights = PretrainedWeights(hub_id=source, file_name="model.safetensors", license="Apache-2.0",
                                    source=f"Hugging Face hub {source} (converted from the authors' release)")
        where = f"the authors' README (COCO val2017), as on {source}"
    else:
        weights = PretrainedWeights(url=f"https://bj.bcebos.com/v1/paddledet/models/{source}.pdparams",
                                    format="pdparams", license="Apache-2.0", source=f"PaddleDetection ({source})")
        where = "PaddleDetection configs/rtdetr/README.md (COCO val2017)"
    register_model(f"det/{name}", factory, task="det", family=family, paper=paper, num_classes=len(COCO_CLASSES),
                   label_names="coco", classifier=("model.class_embed", "model.model.decoder.class_embed",
                                                   "model.model.enc_score_head", "model.model.denoising_class_embed"),
                   metrics={"coco_map": coco_map}, metrics_source=where, weights=weights,
                   input_spec=DetectorInput(size=(640, 640), stride_multiple=32, mean=(0.0, 0.0, 0.0),
                                            std=(1.0, 1.0, 1.0)),
                   state_dict_filter=_hub_prefix if "/" in source else None,
                   paddle_mapping=None if "/" in source else RTDETR_PADDLE_MAPPING,
                   test_input_size=(3, 256, 256) if name == "dfine_n" else (3, 160, 160),  # >= 300 query candidates
                   tags=("transformers", "large"))  # 5-8 s a training step on two cores: out of the fast tests


for _name, _spec in VARIANTS.items():
    _register(_name, *_spec)
