"""Text metrics, each keeping summable tensor state (one ``all_reduce(SUM)`` per tensor in distributed runs).

- :class:`TextClassificationMetric`: accuracy and macro-F1 from a confusion matrix.
- :class:`SpanF1Metric`: entity-level precision / recall / F1 of BIO tagging (spans, not tokens), per type too.
- :class:`SquadMetric`: exact match and token F1 of extractive QA, SQuAD's normalisation.
- :class:`PointerSpanMetric`: UIE's span precision / recall / F1.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Sequence
from typing import Any

import torch

from oarkit.core.engine.metric import Metric
from oarkit.core.errors import ConfigError
from oarkit.nlp.decoding import best_answer, bio_spans, pointer_spans


def _ratio(a: float, b: float) -> float:
    return 100.0 * a / b if b else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def logits_of(outputs: Any) -> torch.Tensor:
    """The logits tensor of a transformers output (or a bare tensor)."""
    return getattr(outputs, "logits", outputs)


class TextClassificationMetric(Metric):
    """Accuracy, macro-F1, per-class F1 and the mean cross-entropy of single-label text classification.

    State: ``confusion`` [C, C] int64 (rows: true class, columns: predicted), ``loss_sum`` float64 (summed
    cross-entropy). The loss breaks ties of accuracy (a small dev set is often saturated after an epoch or two:
    the better-fitted later checkpoint then becomes best).

    Args:
        num_classes: the number of classes ``C``.
    """

    main_indicator = "accuracy"
    tie_breaker = "loss"

    def __init__(self, num_classes: int) -> None:
        if num_classes < 2:
            raise ConfigError(f"text classification needs at least 2 classes, got {num_classes}")
        self.num_classes = int(num_classes)
        super().__init__()

    def reset(self) -> None:
        self.state = {"confusion": torch.zeros(self.num_classes, self.num_classes, dtype=torch.int64),
                      "loss_sum": torch.zeros((), dtype=torch.float64)}

    @torch.no_grad()
    def update(self, outputs: Any, batch: dict[str, Any]) -> None:
        """Add logits (N, C) against ``batch["labels"]`` (N,)."""
        logits, labels = logits_of(outputs).float(), batch["labels"].view(-1).long()
        if logits.shape != (labels.numel(), self.num_classes):
            raise ValueError(f"TextClassificationMetric({self.num_classes} classes) got logits {tuple(logits.shape)} "
                             f"for {labels.numel()} labels")
        self.state["loss_sum"] += torch.nn.functional.cross_entropy(logits, labels, reduction="sum").double().cpu()
        pairs = labels.cpu() * self.num_classes + logits.argmax(-1).cpu()
        self.state["confusion"] += torch.bincount(pairs, minlength=self.num_classes ** 2).view(
            self.num_classes, self.num_classes)

    def compute(self) -> dict[str, Any]:
        """``accuracy``, ``macro_f1`` and ``per_class_f1`` in percent, ``loss`` and ``num_samples``."""
        c = self.state["confusion"].double()
        tp, support, predicted = c.diag(), c.sum(1), c.sum(0)
        per_class = [_f1(_ratio(float(t), float(p)), _ratio(float(t), float(s))) for t, p, s in
                     zip(tp, predicted, support, strict=True)]
        present = [f for f, s in zip(per_class, support, strict=True) if s > 0]
        total = float(c.sum())
        return {"accuracy": _ratio(float(tp.sum()), total), "macro_f1": sum(present) / len(present) if present else 0.0,
                "per_class_f1": per_class, "loss": float(self.state["loss_sum"]) / total if total else 0.0,
                "num_samples": int(total)}


class SpanF1Metric(Metric):
    """Entity-level F1 of BIO tagging: an entity counts only when its type and both boundaries match.

    Predictions are read at the first sub-word of each word and compared with the gold word tags (words cut off by
    ``max_length`` count as predicted ``O``, so truncation costs recall instead of hiding it).
    State: ``correct``, ``predicted``, ``gold`` per entity type (int64 [T]).

    Args:
        tags: the tag names, index order (``O``, ``B-PER``, ``I-PER``, ...).
    """

    main_indicator = "f1"

    def __init__(self, tags: Sequence[str]) -> None:
        self.tags = list(tags)
        self.types = sorted({t[2:] for t in self.tags if t != "O"})
        if not self.types:
            raise ConfigError(f"the tag set {self.tags} names no entity type (expected B-TYPE / I-TYPE tags)")
        super().__init__()

    def reset(self) -> None:
        n = len(self.types)
        self.state = {k: torch.zeros(n, dtype=torch.int64) for k in ("correct", "predicted", "gold")}

    def word_tags(self, token_tags: Sequence[int], word_ids: Sequence[int | None], num_words: int) -> list[str]:
        """Word-level tag names from token-level predictions (first sub-word of each word)."""
        out, previous = ["O"] * num_words, None
        for tag, word in zip(token_tags, word_ids, strict=False):
            if word is not None and word != previous:
                out[word] = self.tags[tag]
            previous = word
        return out

    @torch.no_grad()
    def update(self, outputs: Any, batch: dict[str, Any]) -> None:
        """Add token logits (N, L, num_tags) against ``batch["word_tags"]`` through ``batch["word_ids"]``."""
        predictions = logits_of(outputs).argmax(-1).cpu().tolist()
        index = {t: i for i, t in enumerate(self.types)}
        for pred, word_ids, gold_tags in zip(predictions, batch["word_ids"], batch["word_tags"], strict=True):
            pred_spans = set(bio_spans(self.word_tags(pred, word_ids, len(gold_tags))))
            gold_spans = set(bio_spans(gold_tags))
            for kind, *_ in pred_spans:
                self.state["predicted"][index[kind]] += 1
            for kind, *_ in gold_spans:
                self.state["gold"][index[kind]] += 1
            for kind, *_ in pred_spans & gold_spans:
                self.state["correct"][index[kind]] += 1

    def compute(self) -> dict[str, Any]:
        """Micro ``precision`` / ``recall`` / ``f1`` (percent) and ``per_type`` F1."""
        correct, predicted, gold = (self.state[k].double() for k in ("correct", "predicted", "gold"))
        p, r = _ratio(float(correct.sum()), float(predicted.sum())), _ratio(float(correct.sum()), float(gold.sum()))
        per_type = {t: _f1(_ratio(float(c), float(pr)), _ratio(float(c), float(g)))
                    for t, c, pr, g in zip(self.types, correct, predicted, gold, strict=True)}
        return {"precision": p, "recall": r, "f1": _f1(p, r), "per_type_f1": per_type,
                "num_entities": int(gold.sum())}


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def _tokens(text: str) -> list[str]:
    normalized = normalize_answer(text)
    # Texts without spaces (Chinese) are compared character by character, as CMRC2018's evaluation does.
    return normalized.split() if " " in normalized or normalized.isascii() else list(normalized.replace(" ", ""))


def answer_f1(prediction: str, gold: str) -> float:
    """Token-overlap F1 of two answers, in [0, 1]."""
    pred, ref = _tokens(prediction), _tokens(gold)
    if not pred or not ref:
        return float(pred == ref)
    common = sum((collections.Counter(pred) & collections.Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


class SquadMetric(Metric):
    """Exact match and F1 of extractive QA over whole questions (the best span across a question's windows).

    A question without gold answers is matched by the empty prediction only (SQuAD 2.0); set
    ``allow_no_answer`` to let the model abstain when the [CLS] score beats every span.
    State: ``exact`` and ``f1`` sums (float64) and ``count`` (int64).

    Args:
        max_answer_tokens: the longest answer considered.
        allow_no_answer: predict no answer when the null score ([CLS] start + end) is highest.
    """

    main_indicator = "f1"

    def __init__(self, *, max_answer_tokens: int = 30, allow_no_answer: bool = False) -> None:
        self.max_answer_tokens, self.allow_no_answer = int(max_answer_tokens), bool(allow_no_answer)
        super().__init__()

    def reset(self) -> None:
        self.state = {"exact": torch.zeros((), dtype=torch.float64), "f1": torch.zeros((), dtype=torch.float64),
                      "count": torch.zeros((), dtype=torch.int64)}

    def predictions(self, outputs: Any, batch: dict[str, Any]) -> list[str]:
        """The predicted answer text of every question of the batch."""
        start, end = outputs.start_logits.float().cpu(), outputs.end_logits.float().cpu()
        best: dict[int, tuple[float, str]] = {}
        null: dict[int, float] = {}
        for w, example in enumerate(batch["example_index"]):
            context = batch["contexts"][example]
            null[example] = max(null.get(example, float("-inf")), float(start[w, 0] + end[w, 0]))
            span = best_answer(start[w], end[w], batch["offsets"][w], max_answer_tokens=self.max_answer_tokens)
            if span is not None and (example not in best or span[2] > best[example][0]):
                best[example] = (span[2], context[span[0]:span[1]])
        out = []
        for example in range(len(batch["contexts"])):
            score, text = best.get(example, (float("-inf"), ""))
            out.append("" if self.allow_no_answer and null.get(example, float("-inf")) > score else text)
        return out

    @torch.no_grad()
    def update(self, outputs: Any, batch: dict[str, Any]) -> None:
        """Add a batch of windows (``start_logits`` / ``end_logits`` (W, L)) against ``batch["answers"]``."""
        for prediction, answers in zip(self.predictions(outputs, batch), batch["answers"], strict=True):
            golds = answers or [""]
            self.state["exact"] += max(float(normalize_answer(prediction) == normalize_answer(g)) for g in golds)
            self.state["f1"] += max(answer_f1(prediction, g) for g in golds)
            self.state["count"] += 1

    def compute(self) -> dict[str, Any]:
        """``exact_match`` and ``f1`` in percent, and ``num_questions``."""
        n = int(self.state["count"])
        return {"exact_match": _ratio(float(self.state["exact"]), n), "f1": _ratio(float(self.state["f1"]), n),
                "num_questions": n}


class PointerSpanMetric(Metric):
    """UIE's span precision / recall / F1: predicted pointer spans against the gold token spans of each prompt.

    State: ``correct``, ``predicted``, ``gold`` (int64 scalars).

    Args:
        threshold: the pointer probability threshold.
    """

    main_indicator = "f1"

    def __init__(self, threshold: float = 0.5) -> None:
        if not 0 < threshold < 1:
            raise ConfigError(f"threshold={threshold} must lie in (0, 1)")
        self.threshold = float(threshold)
        super().__init__()

    def reset(self) -> None:
        self.state = {k: torch.zeros((), dtype=torch.int64) for k in ("correct", "predicted", "gold")}

    @torch.no_grad()
    def update(self, outputs: Any, batch: dict[str, Any]) -> None:
        """Add pointer logits (``start_logits`` / ``end_logits`` (N, L)) against ``batch["spans"]``."""
        start = outputs.start_logits.float().sigmoid().cpu()
        end = outputs.end_logits.float().sigmoid().cpu()
        allowed = batch["text_mask"].bool().cpu()  # only tokens of the text may be pointed at
        for i, gold in enumerate(batch["spans"]):
            found = {(s, e) for s, e, _ in pointer_spans(start[i].tolist(), end[i].tolist(), threshold=self.threshold,
                                                          allowed=allowed[i].tolist())}
            gold_set = {tuple(span) for span in gold}
            self.state["predicted"] += len(found)
            self.state["gold"] += len(gold_set)
            self.state["correct"] += len(found & gold_set)

    def compute(self) -> dict[str, Any]:
        """``precision``, ``recall`` and ``f1`` in percent, and ``num_spans`` (gold)."""
        c, p, g = (float(self.state[k]) for k in ("correct", "predicted", "gold"))
        precision, recall = _ratio(c, p), _ratio(c, g)
        return {"precision": precision, "recall": recall, "f1": _f1(precision, recall), "num_spans": int(g)}
