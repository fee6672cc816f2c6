"""Metrics on hand-computed cases, span decoding, and the summable state that distributed runs reduce."""

from __future__ import annotations

import copy
import math

import pytest
import torch
from transformers.modeling_outputs import QuestionAnsweringModelOutput

from oarkit.nlp.decoding import best_answer, bio_spans, pointer_spans
from oarkit.nlp.metrics import (
    PointerSpanMetric,
    SpanF1Metric,
    SquadMetric,
    TextClassificationMetric,
    answer_f1,
    normalize_answer,
)


def _one_hot(indices: list[list[int]], n: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(indices), n).float()


def test_accuracy_and_macro_f1() -> None:
    metric = TextClassificationMetric(3)
    logits = _one_hot([0, 0, 1, 2, 2, 2], 3)
    metric.update(logits, {"labels": torch.tensor([0, 1, 1, 2, 2, 0])})
    out = metric.compute()
    assert out["accuracy"] == pytest.approx(100 * 4 / 6)
    # per class: 0: p 1/2 r 1/2 -> .5 ; 1: p 1 r 1/2 -> 2/3 ; 2: p 2/3 r 1 -> .8
    assert out["per_class_f1"] == pytest.approx([50.0, 200 / 3, 80.0])
    assert out["macro_f1"] == pytest.approx((50 + 200 / 3 + 80) / 3)
    # one-hot logits: log-softmax of the hit is 1 - log(e + 2), of a miss -log(e + 2)
    assert out["loss"] == pytest.approx(math.log(math.e + 2) - 4 / 6)
    assert TextClassificationMetric.tie_breaker == "loss" and not TextClassificationMetric.tie_breaker_higher_is_better


def test_state_sums_across_ranks() -> None:
    """Two ranks' states summed equal one process over both halves (what Metric.reduce relies on)."""
    logits, labels = _one_hot([0, 1, 1, 2], 3), torch.tensor([0, 1, 2, 2])
    whole = TextClassificationMetric(3)
    whole.update(logits, {"labels": labels})
    a, b = TextClassificationMetric(3), TextClassificationMetric(3)
    a.update(logits[:2], {"labels": labels[:2]})
    b.update(logits[2:], {"labels": labels[2:]})
    other = copy.deepcopy(b.state)
    a.synchronize(lambda t: t + other[next(k for k, v in a.state.items() if v is t)], lambda obj: [obj])
    assert a.compute() == whole.compute()


def test_bio_spans() -> None:
    assert bio_spans(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4)]
    assert bio_spans(["I-PER", "I-PER", "B-PER"]) == [("PER", 0, 2), ("PER", 2, 3)]  # a stray I- opens an entity
    assert bio_spans(["B-PER", "I-LOC"]) == [("PER", 0, 1), ("LOC", 1, 2)]
    assert bio_spans(["O", "O"]) == []


def test_span_f1_counts_entities_not_tokens() -> None:
    tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    metric = SpanF1Metric(tags)
    # words: john smith visits paris ; tokens: [CLS] john smith visits par ##is [SEP]
    word_ids = [None, 0, 1, 2, 3, 3, None]
    gold = ["B-PER", "I-PER", "O", "B-LOC"]
    # Predicted: the person cut short (B-PER, O), the city right (the second sub-word's tag is ignored).
    pred = [0, 1, 0, 0, 3, 1, 0]
    metric.update(_one_hot([pred], 5), {"word_ids": [word_ids], "word_tags": [gold]})
    out = metric.compute()
    assert (out["precision"], out["recall"], out["f1"]) == (50.0, 50.0, 50.0)
    assert out["per_type_f1"] == {"LOC": 100.0, "PER": 0.0}


def test_span_f1_counts_truncated_words_as_missed() -> None:
    metric = SpanF1Metric(["O", "B-LOC", "I-LOC"])
    metric.update(_one_hot([[0, 1, 0]], 3), {"word_ids": [[None, 0, None]], "word_tags": [["B-LOC", "B-LOC"]]})
    assert metric.compute()["recall"] == 50.0 and metric.compute()["precision"] == 100.0


def test_squad_normalisation_and_f1() -> None:
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert answer_f1("ada lovelace", "Ada Lovelace.") == 1.0
    assert answer_f1("ada", "ada lovelace") == pytest.approx(2 / 3)
    assert answer_f1("北京大学", "北京") == pytest.approx(2 * 1 * 0.5 / 1.5)  # characters for Chinese


def _qa_batch():
    context = "acme was founded by ada lovelace in paris"
    # tokens: 0 [CLS] 1 who 2 [SEP] 3 acme 4 was 5 founded 6 by 7 ada 8 lovelace 9 in 10 paris 11 [SEP]
    spans = [(0, 4), (5, 8), (9, 16), (17, 19), (20, 23), (24, 32), (33, 35), (36, 41)]
    offsets = [None, None, None, *spans, None]
    return context, offsets


def test_squad_metric_takes_the_best_window() -> None:
    context, offsets = _qa_batch()
    start, end = torch.full((2, 12), -5.0), torch.full((2, 12), -5.0)
    start[0, 7], end[0, 8] = 4.0, 4.0  # window 0: "ada lovelace", score 8
    start[1, 10], end[1, 10] = 3.0, 3.0  # window 1: "paris", score 6
    batch = {"example_index": [0, 0], "offsets": [offsets, offsets], "contexts": [context],
             "answers": [["ada lovelace", "lovelace"]]}
    metric = SquadMetric()
    out = QuestionAnsweringModelOutput(start_logits=start, end_logits=end)
    assert metric.predictions(out, batch) == ["ada lovelace"]
    metric.update(out, batch)
    assert metric.compute() == {"exact_match": 100.0, "f1": 100.0, "num_questions": 1}


def test_squad_metric_no_answer() -> None:
    context, offsets = _qa_batch()
    start, end = torch.full((1, 12), -5.0), torch.full((1, 12), -5.0)
    start[0, 0], end[0, 0] = 9.0, 9.0  # [CLS] wins
    start[0, 7], end[0, 8] = 1.0, 1.0
    batch = {"example_index": [0], "offsets": [offsets], "contexts": [context], "answers": [[]]}
    out = QuestionAnsweringModelOutput(start_logits=start, end_logits=end)
    abstaining = SquadMetric(allow_no_answer=True)
    abstaining.update(out, batch)
    assert abstaining.compute()["exact_match"] == 100.0
    forced = SquadMetric()
    forced.update(out, batch)
    assert forced.compute()["exact_match"] == 0.0


def test_best_answer_respects_order_length_and_context() -> None:
    _, offsets = _qa_batch()
    start, end = torch.zeros(12), torch.zeros(12)
    start[8], end[7] = 5.0, 5.0  # the best pair ends before it starts: invalid
    start[1], end[1] = 9.0, 9.0  # a question token: not in the context
    start[3], end[10] = 3.0, 1.0
    assert best_answer(start, end, offsets)[:2] == (0, 23)  # tokens 3..7: "acme was founded by ada"
    begin, finish, _ = best_answer(start, end, offsets, max_answer_tokens=2)
    assert sum(1 for o in offsets if o is not None and begin <= o[0] < finish) <= 2


def test_pointer_spans_pairing() -> None:
    p = [0.0] * 8
    starts, ends = list(p), list(p)
    starts[1] = starts[2] = 0.9  # two starts before one end: the latest wins
    ends[3] = 0.8
    starts[5] = 0.7
    ends[5] = ends[7] = 0.6  # a one-token span, then an end with no start left
    spans = pointer_spans(starts, ends)
    assert [(s, e) for s, e, _ in spans] == [(2, 3), (5, 5)]
    assert spans[0][2] == pytest.approx(0.9 * 0.8)
    allowed = [True] * 8
    allowed[2] = False
    assert [(s, e) for s, e, _ in pointer_spans(starts, ends, allowed=allowed)] == [(1, 3), (5, 5)]


def test_pointer_span_metric() -> None:
    start, end = torch.full((1, 8), -9.0), torch.full((1, 8), -9.0)
    start[0, 2], end[0, 3] = 9.0, 9.0  # correct
    start[0, 5], end[0, 6] = 9.0, 9.0  # wrong
    batch = {"spans": [[(2, 3), (6, 6)]], "text_mask": torch.ones(1, 8)}
    metric = PointerSpanMetric()
    metric.update(QuestionAnsweringModelOutput(start_logits=start, end_logits=end), batch)
    out = metric.compute()
    assert (out["precision"], out["recall"], out["f1"]) == (50.0, 50.0, 50.0)
