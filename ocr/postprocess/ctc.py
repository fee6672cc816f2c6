"""Greedy CTC decoding (PaddleOCR's ``CTCLabelDecode``): the best class per step, repeats collapsed, blanks
dropped; a line's score is the mean probability of the characters it keeps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..charset import CharDictionary


@dataclass(frozen=True)
class Decoded:
    """One decoded line: its text and score (mean probability of its characters; 0 for an empty line)."""

    text: str
    score: float


def ctc_greedy_decode(probs: torch.Tensor | np.ndarray, dictionary: CharDictionary,
                      lengths: torch.Tensor | np.ndarray | None = None) -> list[Decoded]:
    """Decode a batch of per-step probabilities ``[B, T, C]`` (class 0 the blank).

    Args:
        probs: softmax probabilities (logits decode to the same text; their scores are then not probabilities).
        dictionary: the recognizer's classes.
        lengths: valid steps per sample (the rest is padding); default: all ``T``.
    """
    array = probs.detach().float().cpu().numpy() if isinstance(probs, torch.Tensor) else np.asarray(probs)
    if array.ndim != 3:
        raise ValueError(f"ctc_greedy_decode takes [batch, steps, classes] probabilities, got shape {array.shape}")
    if array.shape[2] != dictionary.num_classes:
        raise ValueError(f"the recognizer outputs {array.shape[2]} classes but the dictionary {dictionary.name!r} "
                         f"has {dictionary.num_classes} (blank included); use the dictionary the model was trained "
                         "with")
    best = array.argmax(axis=2)
    conf = array.max(axis=2)
    out = []
    for b in range(array.shape[0]):
        steps = array.shape[1] if lengths is None else int(lengths[b])
        idx, cf = best[b, :steps], conf[b, :steps]
        keep = np.ones(steps, dtype=bool)
        keep[1:] = idx[1:] != idx[:-1]
        keep &= idx != CharDictionary.blank
        chars = idx[keep]
        text = dictionary.decode(chars.tolist())
        out.append(Decoded(text=text, score=float(cf[keep].mean()) if keep.any() else 0.0))
    return out
