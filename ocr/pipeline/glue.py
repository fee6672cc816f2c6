"""The OCR glue: det → crop → (orientation) → rec, registered for deploy pipelines (``ocr/det_rec``,
``ocr/det_cls_rec``) and run the same way on eager modules and exported artifacts.

Each stage's settings come from its ``deploy.yaml`` (preprocessing and post-processing as the task wrote them) with
the stage's ``pipeline.yaml`` parameters over them; eager stages carry the same keys in their parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from oarkit.core.deploy.pipeline import Stage, register_glue

from ..charset import CharDictionary
from ..data.transforms import det_resize, normalize
from ..postprocess.ctc import ctc_greedy_decode
from ..postprocess.db import DBPostProcess, filter_boxes
from .crops import batch_tensor, crop_box, padded_width, reading_order
from .results import OCRLine, OCRResult

DET_DEFAULTS = {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225], "bgr": True, "limit_side_len": 960,
                "limit_type": "max"}
REC_DEFAULTS = {"height": 48, "width": 320, "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "bgr": True}
CLS_DEFAULTS = {"height": 48, "width": 192, "mean": [0.5, 0.5, 0.5], "std": [0.5, 0.5, 0.5], "bgr": True}


def settings(stage: Stage, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A stage's settings: defaults, then its manifest's preprocessing and post-processing, then its parameters."""
    out = dict(defaults)
    if stage.manifest is not None:
        out.update(stage.manifest.preprocessing or {})
        out.update(stage.manifest.postprocessing or {})
    out.update(stage.parameters or {})
    return out


def run_model(stage: Stage, array: np.ndarray) -> np.ndarray:
    """A stage's model on one float32 batch: an artifact through its runtime, a module under inference mode."""
    model = stage.model
    if hasattr(model, "run_numpy"):
        return np.asarray(model.run_numpy(array)[0])
    device = next((p.device for p in model.parameters()), torch.device("cpu")) if hasattr(model, "parameters") \
        else torch.device("cpu")
    with torch.inference_mode():
        out = model(torch.from_numpy(array).to(device))
    if isinstance(out, dict):
        raise RuntimeError(f"stage {stage.name!r}: the model returned a dict; put it in eval mode (model.eval())")
    return (out[0] if isinstance(out, (tuple, list)) else out).float().cpu().numpy()


def detect(stage: Stage, image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Text boxes of one RGB image: ``([N, 4, 2], box scores [N])`` in the image's coordinates."""
    s = settings(stage, DET_DEFAULTS)
    resized, _, _ = det_resize(image, limit_side_len=int(s["limit_side_len"]), limit_type=str(s["limit_type"]))
    tensor = normalize(resized, s["mean"], s["std"], bgr=bool(s["bgr"]))[None].numpy()
    prob = run_model(stage, tensor)
    db = DBPostProcess(**{**(s.get("db") or {})})
    boxes, scores = db(prob[0, 0], image.shape[:2])
    return filter_boxes(boxes, scores, image.shape[:2])


def classify(stage: Stage, crops: list[np.ndarray], *, batch_size: int, threshold: float) -> list[np.ndarray]:
    """Crops turned 180 degrees where the orientation classifier says so with at least ``threshold``."""
    s = settings(stage, CLS_DEFAULTS)
    out = list(crops)
    for start in range(0, len(crops), batch_size):
        chunk = crops[start:start + batch_size]
        probs = run_model(stage, batch_tensor(chunk, height=int(s["height"]), width=int(s["width"]),
                                              mean=s["mean"], std=s["std"], bgr=bool(s["bgr"])))
        for k, p in enumerate(probs):
            if int(p.argmax()) == 1 and float(p[1]) >= threshold:
                out[start + k] = np.ascontiguousarray(chunk[k][::-1, ::-1])
    return out


def dictionary_of(stage: Stage) -> CharDictionary:
    """The recognizer's dictionary from its settings (``dictionary``: a :class:`CharDictionary` or its dict)."""
    value = settings(stage, REC_DEFAULTS).get("dictionary")
    if isinstance(value, CharDictionary):
        return value
    if isinstance(value, dict) and value:
        return CharDictionary.from_dict(value)
    return CharDictionary.load("ppocr_keys_v1", use_space_char=True)


def recognize(stage: Stage, crops: Sequence[np.ndarray], *, batch_size: int) -> list[tuple[str, float]]:
    """``(text, score)`` per crop: crops sorted by aspect ratio, batched, each batch padded to its widest line."""
    s = settings(stage, REC_DEFAULTS)
    dictionary = dictionary_of(stage)
    height, min_width = int(s["height"]), int(s["width"])
    order = sorted(range(len(crops)), key=lambda i: crops[i].shape[1] / max(crops[i].shape[0], 1))
    results: list[tuple[str, float]] = [("", 0.0)] * len(crops)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        chunk = [crops[i] for i in idx]
        width = padded_width(chunk, height=height, min_width=min_width)
        probs = run_model(stage, batch_tensor(chunk, height=height, width=width, mean=s["mean"], std=s["std"],
                                              bgr=bool(s["bgr"])))
        for i, decoded in zip(idx, ctc_greedy_decode(probs, dictionary)):
            results[i] = (decoded.text, decoded.score)
    return results


def run_ocr(stages: Mapping[str, Stage], inputs: Sequence[np.ndarray], *, drop_score: float, rec_batch_size: int,
            cls_batch_size: int = 6, cls_threshold: float = 0.9) -> list[OCRResult]:
    """OCR of RGB images: detect, order, crop, (turn), recognise, drop lines scoring under ``drop_score``."""
    results = []
    for image in inputs:
        boxes, box_scores = detect(stages["det"], image)
        order = reading_order(boxes)
        boxes, box_scores = boxes[order] if len(order) else boxes, box_scores[order] if len(order) else box_scores
        crops = [crop_box(image, b) for b in boxes]
        if "cls" in stages and crops:
            crops = classify(stages["cls"], crops, batch_size=cls_batch_size, threshold=cls_threshold)
        texts = recognize(stages["rec"], crops, batch_size=rec_batch_size) if crops else []
        lines = [OCRLine(box=b, text=t, score=s, box_score=float(bs))
                 for b, bs, (t, s) in zip(boxes, box_scores, texts) if s >= drop_score and t]
        results.append(OCRResult(lines=lines, image=image))
    return results


@register_glue("ocr/det_rec", stages=("det", "rec"))
def det_rec(stages: Mapping[str, Stage], inputs: Sequence[np.ndarray], *, drop_score: float = 0.5,
            rec_batch_size: int = 6) -> list[OCRResult]:
    """Detection then recognition."""
    return run_ocr(stages, inputs, drop_score=drop_score, rec_batch_size=rec_batch_size)


@register_glue("ocr/det_cls_rec", stages=("det", "cls", "rec"))
def det_cls_rec(stages: Mapping[str, Stage], inputs: Sequence[np.ndarray], *, drop_score: float = 0.5,
                rec_batch_size: int = 6, cls_batch_size: int = 6, cls_threshold: float = 0.9) -> list[OCRResult]:
    """Detection, orientation of each crop, then recognition."""
    return run_ocr(stages, inputs, drop_score=drop_score, rec_batch_size=rec_batch_size,
                   cls_batch_size=cls_batch_size, cls_threshold=cls_threshold)
