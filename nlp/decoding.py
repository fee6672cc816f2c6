"""Decoding raw outputs into spans: BIO tags into entities, QA logits into an answer, UIE pointers into spans.

Shared by the metrics (training-time evaluation) and the predictors, so that what is scored is what is served.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def bio_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entity spans ``(type, start, end)`` (``end`` exclusive, in tag positions) of a BIO tag sequence.

    As conlleval: ``B-X`` opens an entity, ``I-X`` continues an open ``X`` and, after ``O`` or another type, opens one
    (the lenient reading of a stray ``I-``).
    """
    spans: list[tuple[str, int, int]] = []
    kind, start = None, 0
    for i, tag in enumerate([*tags, "O"]):
        prefix, _, label = tag.partition("-")
        continues = prefix == "I" and label == kind
        if kind is not None and not continues:
            spans.append((kind, start, i))
            kind = None
        if prefix in ("B", "I") and not continues:
            kind, start = label, i
    return spans


def best_answer(start_logits: torch.Tensor, end_logits: torch.Tensor, offsets: Sequence[tuple[int, int] | None], *,
                max_answer_tokens: int = 30, n_best: int = 20) -> tuple[int, int, float] | None:
    """The best context span of one window: ``(char_start, char_end, score)``, or ``None`` when none is valid.

    Candidates are the ``n_best`` start and end tokens; a span must lie in the context (``offsets`` not ``None``),
    end at or after its start and be at most ``max_answer_tokens`` long. The score is the sum of the two logits.
    """
    starts = torch.topk(start_logits, min(n_best, start_logits.numel())).indices.tolist()
    ends = torch.topk(end_logits, min(n_best, end_logits.numel())).indices.tolist()
    best: tuple[int, int, float] | None = None
    for s in starts:
        for e in ends:
            if s >= len(offsets) or e >= len(offsets) or offsets[s] is None or offsets[e] is None:
                continue
            if e < s or e - s + 1 > max_answer_tokens:
                continue
            score = float(start_logits[s] + end_logits[e])
            if best is None or score > best[2]:
                best = (offsets[s][0], offsets[e][1], score)
    return best


def pointer_spans(start_probs: Sequence[float], end_probs: Sequence[float], *, threshold: float = 0.5,
                  allowed: Sequence[bool] | None = None) -> list[tuple[int, int, float]]:
    """Spans ``(start, end, probability)`` (token indices, ``end`` inclusive) from UIE's start and end pointers.

    Tokens whose probability exceeds ``threshold`` are starts and ends; each end closes the latest start at or
    before it that no earlier end has closed, and a start left without an end yields nothing (PaddleNLP's
    ``get_span``). The probability of a span is the product of its two pointer probabilities.

    Args:
        start_probs, end_probs: per-token probabilities.
        threshold: the pointer threshold.
        allowed: per-token mask of positions that may be pointed at (the text, not the prompt or padding).
    """
    def hits(probs: Sequence[float]) -> list[int]:
        return [i for i, p in enumerate(probs) if p > threshold and (allowed is None or allowed[i])]

    starts, spans = hits(start_probs), []
    open_starts: list[int] = []
    ends = hits(end_probs)
    pointer = 0
    for end in ends:
        while pointer < len(starts) and starts[pointer] <= end:
            open_starts.append(starts[pointer])
            pointer += 1
        if open_starts:
            start = open_starts.pop()  # the latest open start
            open_starts.clear()  # earlier starts are shadowed by it
            spans.append((start, end, float(start_probs[start]) * float(end_probs[end])))
    return spans
