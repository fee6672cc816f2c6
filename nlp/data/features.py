"""From examples to model features: token ids, aligned labels, answer positions and pointer targets.

Features are plain Python lists (padding happens per batch in :mod:`.collate`); every feature carries ``length``
for length bucketing. Token-level labels are aligned to the first sub-word of each word (the others get -100); QA
contexts longer than ``max_length`` become overlapping windows of one sample; UIE spans map from characters to
tokens through the tokenizer's offsets.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from oarkit.nlp.data.examples import PromptExample, QAExample, TaggedSentence, TextExample

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100


def _model_inputs(encoding: Any, i: int) -> dict[str, list[int]]:
    out = {"input_ids": list(encoding["input_ids"][i])}
    if "token_type_ids" in encoding:
        out["token_type_ids"] = list(encoding["token_type_ids"][i])
    return out


def encode_texts(tokenizer: Any, examples: Sequence[TextExample], label_ids: dict[str, int] | None,
                 max_length: int) -> list[dict[str, Any]]:
    """Classification features; ``labels`` is the class index (left out when ``label_ids`` is ``None``)."""
    pairs = [e.text_pair for e in examples]
    encoding = tokenizer([e.text for e in examples], pairs if any(p is not None for p in pairs) else None,
                         truncation=True, max_length=max_length)
    features = []
    for i, example in enumerate(examples):
        feature: dict[str, Any] = _model_inputs(encoding, i)
        if label_ids is not None and example.label is not None:
            feature["labels"] = label_ids[example.label]
        feature["length"] = len(feature["input_ids"])
        features.append(feature)
    return features


def align_word_labels(word_ids: Sequence[int | None], word_labels: Sequence[int]) -> list[int]:
    """Token labels from word labels: the first sub-word of a word carries its label, the rest -100."""
    out, previous = [], None
    for word in word_ids:
        out.append(IGNORE_INDEX if word is None or word == previous else word_labels[word])
        previous = word
    return out


def encode_tagged(tokenizer: Any, sentences: Sequence[TaggedSentence], tag_ids: dict[str, int],
                  max_length: int) -> list[dict[str, Any]]:
    """Token-classification features with ``labels`` per token, ``word_ids`` and the gold ``word_tags``."""
    encoding = tokenizer([list(s.words) for s in sentences], is_split_into_words=True, truncation=True,
                         max_length=max_length)
    features = []
    for i, sentence in enumerate(sentences):
        word_ids = encoding.word_ids(i)
        feature: dict[str, Any] = _model_inputs(encoding, i)
        feature["labels"] = align_word_labels(word_ids, [tag_ids[t] for t in sentence.tags])
        feature["word_ids"] = list(word_ids)
        feature["word_tags"] = list(sentence.tags)
        feature["length"] = len(feature["input_ids"])
        features.append(feature)
    return features


def char_span_to_tokens(offsets: Sequence[tuple[int, int]], sequence_ids: Sequence[int | None], start: int,
                        end: int, sequence: int = 1) -> tuple[int, int] | None:
    """The first and last token of ``sequence`` covering characters ``[start, end)``, or ``None`` when cut off."""
    tokens = [i for i, (s, e) in enumerate(offsets) if sequence_ids[i] == sequence and e > s]
    first = next((i for i in tokens if offsets[i][1] > start), None)
    last = next((i for i in reversed(tokens) if offsets[i][0] < end), None)
    if first is None or last is None or first > last or offsets[first][0] > start or offsets[last][1] < end:
        return None
    return first, last


def encode_qa(tokenizer: Any, examples: Sequence[QAExample], max_length: int, doc_stride: int) -> list[dict[str, Any]]:
    """QA samples: one per question, holding every window of its context.

    Each window has ``start_positions`` / ``end_positions`` (the [CLS] index 0 when the answer is not inside it) and
    ``offsets`` (character offsets of context tokens, ``None`` elsewhere) to map predictions back to text.
    """
    encoding = tokenizer([e.question for e in examples], [e.context for e in examples], truncation="only_second",
                         max_length=max_length, stride=doc_stride, return_overflowing_tokens=True,
                         return_offsets_mapping=True)
    samples: list[dict[str, Any]] = [{"windows": [], "context": e.context, "answers": [a for a, _ in e.answers],
                                      "id": e.id} for e in examples]
    for w, example_index in enumerate(encoding["overflow_to_sample_mapping"]):
        example = examples[example_index]
        offsets, seq_ids = encoding["offset_mapping"][w], encoding.sequence_ids(w)
        window: dict[str, Any] = _model_inputs(encoding, w)
        start = end = 0
        if example.answers:
            text, begin = example.answers[0]
            span = char_span_to_tokens(offsets, seq_ids, begin, begin + len(text))
            if span is not None:
                start, end = span
        window.update(start_positions=start, end_positions=end,
                      offsets=[tuple(o) if seq_ids[i] == 1 else None for i, o in enumerate(offsets)])
        samples[example_index]["windows"].append(window)
    for sample in samples:
        sample["length"] = max(len(w["input_ids"]) for w in sample["windows"])
    return samples


def encode_prompts(tokenizer: Any, examples: Sequence[PromptExample], max_length: int) -> list[dict[str, Any]]:
    """UIE features: ``[CLS] prompt [SEP] text [SEP]`` with 0/1 ``start_targets`` / ``end_targets`` per token and the
    gold token ``spans``; spans cut off by ``max_length`` are dropped (and counted in the log)."""
    encoding = tokenizer([e.prompt for e in examples], [e.text for e in examples], truncation="only_second",
                         max_length=max_length, return_offsets_mapping=True)
    features, dropped = [], 0
    for i, example in enumerate(examples):
        offsets, seq_ids = encoding["offset_mapping"][i], encoding.sequence_ids(i)
        feature: dict[str, Any] = _model_inputs(encoding, i)
        n = len(feature["input_ids"])
        starts, ends, spans = [0.0] * n, [0.0] * n, []
        for begin, finish in example.spans:
            span = char_span_to_tokens(offsets, seq_ids, begin, finish)
            if span is None:
                dropped += 1
                continue
            starts[span[0]] = ends[span[1]] = 1.0
            spans.append(span)
        text_mask = [int(seq_ids[t] == 1 and offsets[t][1] > offsets[t][0]) for t in range(n)]
        feature.update(start_targets=starts, end_targets=ends, text_mask=text_mask, spans=sorted(set(spans)),
                       length=n)
        features.append(feature)
    if dropped:
        logger.warning("%d answer spans lie beyond max_length=%d and were dropped; raise data.max_length",
                       dropped, max_length)
    return features
