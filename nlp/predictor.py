"""Text predictors: ``TextClassifier``, ``TokenClassifier`` and ``QuestionAnswerer``.

Each is built from a run directory (the tokenizer, labels and max length come from its meta.json), a registry name
(``pretrained`` weights, the tokenizer of the pretrained directory or hub repository) or a live module with its
tokenizer; each follows the ``preprocess`` / ``forward`` / ``postprocess`` split of a transformers pipeline, runs in
batches with dynamic padding, and returns result objects with ``to_dict()``. Inputs longer than the model's
``max_length`` are truncated for classification and split into overlapping windows for tagging and QA.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.deploy import is_export_dir
from oarkit.core.engine.checkpoint import find_model_dir, load_model_dir
from oarkit.core.errors import ConfigError, DataError
from oarkit.core.registry import create_model, model_info
from oarkit.nlp.data.collate import PadCollator, WindowCollator, model_inputs
from oarkit.nlp.data.examples import QAExample
from oarkit.nlp.data.features import encode_qa
from oarkit.nlp.decoding import best_answer, bio_spans
from oarkit.nlp.deploy import DeployedTextModel
from oarkit.nlp.metrics import logits_of
from oarkit.nlp.tokenizer import load_tokenizer, tokenizer_from_spec

TextInput = str | tuple[str, str] | Path
#: a word for tagging raw text: a CJK ideograph alone, a run of letters/digits, or one other symbol
_WORD = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+|\S", re.UNICODE)


def load_text_model(source: str | Path | nn.Module, *, tokenizer: Any = None, head: str | None = None,
                    pretrained: bool | str = True, num_classes: int | None = None) -> tuple[nn.Module, Any, dict]:
    """``(model, tokenizer, meta)`` from a run / model directory, an export folder, a registry name or a module.

    Args:
        source: a run or model directory, an export folder (``runs/x/export/onnx``), a registry name or an
            ``nn.Module``.
        tokenizer: a tokenizer object or path (default: the run's meta.json, or the weights' own).
        head: for a registry name: the task head to build.
        pretrained: for a registry name: ``True`` (registered weights) or a local directory / file.
        num_classes: for a registry name: the head's classes.
    """
    meta: dict[str, Any] = {}
    if isinstance(source, nn.Module):
        model = source
    elif is_export_dir(source):  # an exported artifact, run on its runtime with the tokenizer deploy.yaml records
        model = DeployedTextModel(source)
        meta = {**model.manifest.meta(), "nlp_task": model.manifest.preprocessing.get("task")}
    elif Path(source).exists():
        model, meta = load_model_dir(find_model_dir(Path(source)))
        if str(meta.get("task") or "").split("/", 1)[0] != "nlp":  # "nlp/<task>" (or "nlp" before task ids)
            raise ConfigError(f"{source} is a {meta.get('task')!r} model, not a text model")
    else:
        card = model_info(str(source))
        kwargs: dict[str, Any] = {"head": head} if head and card.task == "nlp/text_classification" else {}
        model = create_model(str(source), pretrained=pretrained, num_classes=num_classes, **kwargs)
        if tokenizer is None:
            tokenizer = pretrained if isinstance(pretrained, (str, Path)) else (
                card.weights.hub_id if card.weights and card.weights.hub_id else None)
    if isinstance(tokenizer, (str, Path)):
        tokenizer = load_tokenizer(tokenizer)
    if tokenizer is None:
        spec = (meta.get("preprocessing") or {}).get("tokenizer")
        if spec is None:
            raise ConfigError("no tokenizer for this model: pass tokenizer=DIR (or a tokenizer object)")
        tokenizer = tokenizer_from_spec(spec)
    return model.eval(), tokenizer, meta


class _TextPredictor:
    """Shared construction: model, tokenizer, labels, device, batching."""

    head: str | None = None

    def __init__(self, source: str | Path | nn.Module, *, tokenizer: Any = None, labels: Sequence[str] | None = None,
                 max_length: int | None = None, pretrained: bool | str = True, batch_size: int = 16,
                 device: str = "cpu", **extra: Any) -> None:
        self.model, self.tokenizer, self.meta = load_text_model(
            source, tokenizer=tokenizer, head=self.head, pretrained=pretrained,
            num_classes=len(labels) if labels else None)
        self.device = torch.device(device)
        self.model.to(self.device)
        self.labels = list(labels or self.meta.get("labels") or [])
        preprocessing = self.meta.get("preprocessing") or {}
        self.max_length = int(max_length or preprocessing.get("max_length") or 128)
        self.batch_size = max(1, int(batch_size))
        self.collator = PadCollator(self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0)
        self.configure(**extra)

    def configure(self, **extra: Any) -> None:
        if extra:
            raise TypeError(f"{type(self).__name__} got unexpected arguments {sorted(extra)}")

    def label(self, index: int) -> str:
        return self.labels[index] if index < len(self.labels) else f"LABEL_{index}"

    @torch.no_grad()
    def forward(self, features: list[dict[str, Any]]) -> Any:
        batch = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v
                 for k, v in self.collator(features).items()}
        return self.model(**model_inputs(batch)), batch


def _as_list(inputs: Any) -> tuple[list[Any], bool]:
    if isinstance(inputs, Path):
        lines = [line for line in inputs.read_text(encoding="utf-8").splitlines() if line.strip()]
        return lines, False
    if isinstance(inputs, (str, tuple)):
        return [inputs], True
    items: list[Any] = []
    for item in inputs:
        items += _as_list(item)[0] if isinstance(item, Path) else [item]
    return items, False


class JSONResult:
    """``save()`` for text results: :meth:`to_dict` as a JSON file (there is no picture of a text result)."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        """Write :meth:`to_dict` to ``path`` with a ``.json`` suffix; returns the path written."""
        import json

        path = Path(path).with_suffix(".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        return path


@dataclass
class TextClassificationResult(JSONResult):
    """The top-k classes of one text."""

    text: str
    labels: list[str]
    scores: list[float]
    text_pair: str | None = None

    @property
    def label(self) -> str:
        return self.labels[0]

    @property
    def score(self) -> float:
        return self.scores[0]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "label": self.label, "score": self.score}
        if self.text_pair is not None:
            out["text_pair"] = self.text_pair
        out["topk"] = [{"label": n, "score": s} for n, s in zip(self.labels, self.scores, strict=True)]
        return out


class TextClassifier(_TextPredictor):
    """Classify texts (or ``(text, text_pair)`` tuples) with a fine-tuned model.

    Example::

        clf = TextClassifier("runs/minilm_l6_text_cls")
        clf("wake me up at 7").label
        [r.to_dict() for r in clf(["play some jazz", ("is it raining", "in paris")])]

    Args:
        source: a run or model directory, an export folder, a registry name or an ``nn.Module``.
        tokenizer: the tokenizer (default: the one recorded in the run directory).
        labels: label names (default: the run's).
        max_length: longest input in tokens; longer texts are truncated.
        pretrained: for a registry name: its weights (``True``) or a local directory.
        topk: classes returned per text.
        batch_size: texts per forward pass.
        device: ``cpu``, ``cuda``, ...
    """

    head = "sequence_classification"

    def configure(self, *, topk: int = 1) -> None:
        self.topk = max(1, int(topk))

    def preprocess(self, items: Sequence[str | tuple[str, str]]) -> list[dict[str, Any]]:
        for item in items:
            if not isinstance(item, (str, tuple)) or (isinstance(item, tuple) and len(item) != 2):
                raise DataError(f"TextClassifier takes texts or (text, text_pair) tuples, not {item!r}")
        features: list[dict[str, Any]] = [{} for _ in items]
        # texts and pairs are encoded apart (a tokenizer takes a list of one kind), then put back in input order
        for is_pair in (False, True):
            indices = [i for i, item in enumerate(items) if isinstance(item, tuple) == is_pair]
            if not indices:
                continue
            texts = [items[i][0] if is_pair else items[i] for i in indices]
            pairs = [items[i][1] for i in indices] if is_pair else None
            encoding = self.tokenizer(texts, pairs, truncation=True, max_length=self.max_length)
            keys = [k for k in ("input_ids", "token_type_ids") if k in encoding]
            for row, i in enumerate(indices):
                features[i] = {k: list(encoding[k][row]) for k in keys}
        return features

    def postprocess(self, outputs: Any, items: Sequence[Any]) -> list[TextClassificationResult]:
        probs = logits_of(outputs).float().softmax(-1).cpu()
        scores, ids = probs.topk(min(self.topk, probs.shape[-1]), dim=-1)
        return [TextClassificationResult(text=item[0] if isinstance(item, tuple) else item,
                                         text_pair=item[1] if isinstance(item, tuple) else None,
                                         labels=[self.label(i) for i in c.tolist()], scores=s.tolist())
                for item, s, c in zip(items, scores, ids, strict=True)]

    def __call__(self, inputs: TextInput | Sequence[TextInput]) -> Any:
        """Classify one text (returns one result) or a list (returns a list); a ``Path`` is one text per line."""
        items, single = _as_list(inputs)
        results: list[TextClassificationResult] = []
        for start in range(0, len(items), self.batch_size):
            chunk = items[start:start + self.batch_size]
            outputs, _ = self.forward(self.preprocess(chunk))
            results += self.postprocess(outputs, chunk)
        return results[0] if single else results

    predict = __call__


@dataclass
class Entity:
    """One tagged span of a text: character offsets ``[start, end)``."""

    text: str
    label: str
    start: int
    end: int
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "label": self.label, "start": self.start, "end": self.end, "score": self.score}


@dataclass
class EntityResult(JSONResult):
    """The entities found in one text."""

    text: str
    entities: list[Entity] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "entities": [e.to_dict() for e in self.entities]}


def split_words(text: str) -> list[tuple[str, int, int]]:
    """Words of raw text with character offsets: CJK ideographs one by one, letter/digit runs, other symbols."""
    return [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]


class TokenClassifier(_TextPredictor):
    """Tag the entities of raw texts (or pre-split word lists) with a fine-tuned BIO tagger.

    Long texts are tagged in overlapping windows of ``max_length`` tokens; each word takes the prediction of the
    window in which it sits farthest from an edge.

    Args:
        source, tokenizer, labels, max_length, pretrained, batch_size, device: see :class:`TextClassifier`.
        stride: tokens shared by consecutive windows of a long text.
    """

    head = "token_classification"

    def configure(self, *, stride: int = 32, topk: int | None = None) -> None:
        self.stride = max(0, min(int(stride), self.max_length // 4))  # topk (a CLI option) has no meaning here

    def tag_words(self, sentences: list[list[str]]) -> list[list[tuple[str, float]]]:
        """``(tag, probability)`` per word of each sentence, in batches of windows across sentences."""
        todo = [i for i, words in enumerate(sentences) if words]
        out: list[list[tuple[str, float]]] = [[] for _ in sentences]
        if not todo:
            return out
        encoding = self.tokenizer([sentences[i] for i in todo], is_split_into_words=True, truncation=True,
                                  max_length=self.max_length, stride=self.stride, return_overflowing_tokens=True)
        keys = [k for k in ("input_ids", "token_type_ids") if k in encoding]
        windows = [{k: list(encoding[k][w]) for k in keys} for w in range(len(encoding["input_ids"]))]
        owner = [todo[i] for i in encoding["overflow_to_sample_mapping"]]
        best: dict[tuple[int, int], tuple[int, str, float]] = {}  # (sentence, word) -> (edge distance, tag, prob)
        for start in range(0, len(windows), self.batch_size):
            outputs, _ = self.forward(windows[start:start + self.batch_size])
            probs, tags = (t.cpu() for t in logits_of(outputs).float().softmax(-1).max(-1))
            for row in range(probs.shape[0]):
                w = start + row
                word_ids, previous = encoding.word_ids(w), None
                for t, word in enumerate(word_ids):
                    if word is not None and word != previous:
                        key, margin = (owner[w], word), min(t, len(word_ids) - 1 - t)
                        if key not in best or margin > best[key][0]:
                            best[key] = (margin, self.label(int(tags[row, t])), float(probs[row, t]))
                    previous = word
        for i in todo:
            out[i] = [best[(i, j)][1:] if (i, j) in best else ("O", 1.0) for j in range(len(sentences[i]))]
        return out

    def __call__(self, inputs: str | Sequence[str] | Sequence[Sequence[str]] | Path) -> Any:
        """Tag one text (returns one result) or a list of texts or of word lists; a ``Path`` is one text per line."""
        if isinstance(inputs, str):
            items, single = [inputs], True
        else:
            items, single = (_as_list(inputs)[0] if isinstance(inputs, Path) else list(inputs)), False
        parsed = []
        for item in items:
            if isinstance(item, str):
                text, spans = item, split_words(item)
            elif isinstance(item, (list, tuple)) and all(isinstance(w, str) for w in item):
                text, spans, offset = " ".join(item), [], 0
                for w in item:
                    spans.append((w, offset, offset + len(w)))
                    offset += len(w) + 1
            else:
                raise DataError(f"TokenClassifier takes texts or word lists, not {type(item).__name__}")
            parsed.append((text, spans))
        results = []
        for (text, spans), tagged in zip(parsed, self.tag_words([[w for w, _, _ in sp] for _, sp in parsed]),
                                         strict=True):
            entities = []
            for kind, first, last in bio_spans([t for t, _ in tagged]):
                begin, end = spans[first][1], spans[last - 1][2]
                score = sum(p for _, p in tagged[first:last]) / (last - first)
                entities.append(Entity(text=text[begin:end], label=kind, start=begin, end=end, score=score))
            results.append(EntityResult(text=text, entities=entities))
        return results[0] if single else results

    predict = __call__


@dataclass
class AnswerResult(JSONResult):
    """The answer span of one question: character offsets ``[start, end)`` of the context, and its score."""

    question: str
    answer: str
    start: int
    end: int
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "answer": self.answer, "start": self.start, "end": self.end,
                "score": self.score}


class QuestionAnswerer(_TextPredictor):
    """Answer questions about contexts with a fine-tuned extractive QA model.

    Args:
        source, tokenizer, max_length, pretrained, batch_size, device: see :class:`TextClassifier`.
        doc_stride: tokens shared by consecutive windows of a long context.
        max_answer_tokens: the longest answer considered.
    """

    head = "question_answering"

    def configure(self, *, doc_stride: int = 128, max_answer_tokens: int = 30, topk: int | None = None) -> None:
        self.doc_stride = max(0, min(int(doc_stride), self.max_length // 2 - 1))
        self.max_answer_tokens = int(max_answer_tokens)
        self.collator = WindowCollator(self.collator.pad_token_id)

    def __call__(self, inputs: dict[str, str] | Sequence[dict[str, str]]) -> Any:
        """Answer ``{"question": ..., "context": ...}`` (returns one result) or a list of them."""
        single = isinstance(inputs, dict)
        items = [inputs] if single else list(inputs)
        for item in items:
            if not isinstance(item, dict) or not {"question", "context"} <= set(item):
                raise DataError(f"QuestionAnswerer takes {{'question': ..., 'context': ...}} dicts, not {item!r}")
        examples = [QAExample(id=str(i), question=q["question"], context=q["context"]) for i, q in enumerate(items)]
        samples = encode_qa(self.tokenizer, examples, self.max_length, self.doc_stride)
        results = []
        for start in range(0, len(samples), self.batch_size):
            chunk = samples[start:start + self.batch_size]
            outputs, batch = self.forward(chunk)
            best: dict[int, tuple[int, int, float]] = {}
            for w, example in enumerate(batch["example_index"]):
                span = best_answer(outputs.start_logits[w].float().cpu(), outputs.end_logits[w].float().cpu(),
                                   batch["offsets"][w], max_answer_tokens=self.max_answer_tokens)
                if span is not None and (example not in best or span[2] > best[example][2]):
                    best[example] = span
            for i, sample in enumerate(chunk):
                begin, end, score = best.get(i, (0, 0, float("-inf")))
                results.append(AnswerResult(question=items[start + i]["question"],
                                            answer=sample["context"][begin:end], start=begin, end=end, score=score))
        return results[0] if single else results

    predict = __call__
