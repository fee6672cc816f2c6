"""SLANet-plus's pre- and post-processing, as PaddleOCR's table predictor does it.

Pre-processing (PaddleOCR ``ResizeTableImage``, ``NormalizeImage``, ``PaddingTableImage``): the image in BGR, its
long side resized to 488 (``cv2.resize``, bilinear; the short side truncated to an integer), ``x / 255``
normalised with ImageNet's mean and std (applied to the BGR channels, as Paddle trains it), zero-padded at the
bottom and right to 488 x 488 (after normalisation, so padding is 0, not black).

Post-processing (``TableLabelDecode``): the argmax token of each step up to the first ``eos`` (``sos`` and
``eos`` dropped); the location output of each ``<td></td>`` / ``<td`` step is that cell's four corners as fractions
of the padded 488 square, so pixels of the input are ``value * 488 / ratio``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .tokens import CELL_TOKENS, EOS, SOS, TOKENS

INPUT_SIZE = 488
MEAN = np.array([0.485, 0.456, 0.406], np.float32)
STD = np.array([0.229, 0.224, 0.225], np.float32)


@dataclass(frozen=True)
class Resized:
    """How one image was fitted into the model's square: its size and the resize ratio."""

    height: int
    width: int
    ratio: float


@dataclass
class DecodedTable:
    """One table's decoded outputs.

    Attributes:
        tokens: the structure tokens (``sos``/``eos`` dropped).
        polygons: ``[N, 8]`` float32, each cell's corners ``x1, y1, ..., x4, y4`` in input pixels, in cell order.
        score: the mean probability of the chosen tokens.
    """

    tokens: list[str]
    polygons: np.ndarray
    score: float

    @property
    def boxes(self) -> np.ndarray:
        """``[N, 4]`` ``x0, y0, x1, y1`` around each cell's polygon."""
        if not len(self.polygons):
            return np.zeros((0, 4), np.float32)
        xs, ys = self.polygons[:, 0::2], self.polygons[:, 1::2]
        return np.stack([xs.min(1), ys.min(1), xs.max(1), ys.max(1)], 1)


def preprocess(images: Sequence[np.ndarray], size: int = INPUT_SIZE) -> tuple[torch.Tensor, list[Resized]]:
    """A batch ``[B, 3, size, size]`` from RGB uint8 images (see the module docstring), and how each was resized."""
    import cv2

    batch = np.zeros((len(images), size, size, 3), np.float32)
    metas = []
    for i, image in enumerate(images):
        h, w = image.shape[:2]
        ratio = size / max(h, w)
        rh, rw = max(1, int(h * ratio)), max(1, int(w * ratio))
        resized = cv2.resize(np.ascontiguousarray(image[..., ::-1]), (rw, rh))
        batch[i, :rh, :rw] = (resized.astype(np.float32) * np.float32(1 / 255.0) - MEAN) / STD
        metas.append(Resized(h, w, ratio))
    return torch.from_numpy(batch.transpose(0, 3, 1, 2).copy()), metas


def decode(structure_probs: np.ndarray, loc_preds: np.ndarray, meta: Resized, size: int = INPUT_SIZE
           ) -> DecodedTable:
    """Tokens and cell polygons of one table from its ``[T, C]`` probabilities and ``[T, 8]`` locations."""
    ids = structure_probs.argmax(-1)
    probs = structure_probs.max(-1)
    tokens, polygons, scores = [], [], []
    scale = size / meta.ratio
    for step, index in enumerate(ids):
        if step > 0 and index == EOS:
            break
        token = TOKENS[int(index)]
        if token in (SOS, TOKENS[EOS]):
            continue
        if token in CELL_TOKENS:
            polygon = loc_preds[step].astype(np.float32) * scale
            polygon[0::2] = polygon[0::2].clip(0, meta.width)
            polygon[1::2] = polygon[1::2].clip(0, meta.height)
            polygons.append(polygon)
        tokens.append(token)
        scores.append(float(probs[step]))
    return DecodedTable(tokens, np.array(polygons, np.float32).reshape(-1, 8),
                        float(np.mean(scores)) if scores else 0.0)
