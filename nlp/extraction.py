"""``InformationExtractor``: UIE prediction with a schema of entities, relations and nested arguments.

A schema is a list whose items are entity types (``"时间"``) or ``{subject type: [relation types]}`` mappings, nested
to any depth, as in PaddleNLP's Taskflow (``["时间", {"竞赛名称": ["主办方", "承办方"]}]``). Extraction walks it
stage by stage: the root types are asked of every text; for each span found under a type with children, each child
is asked as ``relation_prompt(span, child)`` and its answers are attached under ``relations``. Long texts are
covered by overlapping windows, whose spans are mapped back to character offsets and merged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError, DataError
from oarkit.nlp.data.collate import PadCollator, model_inputs
from oarkit.nlp.decoding import pointer_spans
from oarkit.nlp.predictor import JSONResult, load_text_model
from oarkit.nlp.prompts import LANGS, detect_lang, relation_prompt

Schema = str | Sequence[Any] | dict[str, Any]


@dataclass
class SchemaNode:
    """One prompt type of a schema and the relation types asked of each of its spans."""

    name: str
    children: list[SchemaNode] = field(default_factory=list)


def parse_schema(schema: Schema) -> list[SchemaNode]:
    """The schema tree of a Taskflow-style schema (see the module docstring)."""
    if isinstance(schema, str):
        return [SchemaNode(schema)]
    if isinstance(schema, dict):
        nodes = []
        for name, children in schema.items():
            if not isinstance(name, str):
                raise ConfigError(f"schema keys must be type names (strings), got {name!r}")
            nodes.append(SchemaNode(name, parse_schema(children) if children else []))
        return nodes
    if isinstance(schema, (list, tuple)):
        return [node for item in schema for node in parse_schema(item)]
    raise ConfigError(f"a schema is a type name, a list of them, or {{type: [relation types]}}; got {schema!r}")


def schema_from_meta(schema: dict[str, list[str]] | None) -> list[Any] | None:
    """A flat schema (entity types only) from what a UIE run recorded; relations need their subject type."""
    if not schema:
        return None
    return list(schema.get("entities") or [])


@dataclass
class ExtractionResult(JSONResult):
    """What a schema found in one text: ``{type: [{"text", "start", "end", "probability", "relations"?}]}``."""

    text: str
    spans: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.spans)


class InformationExtractor:
    """Extract the spans a schema asks for, with a UIE model.

    Example::

        ie = InformationExtractor("runs/uie_tiny", schema=["person", {"company": ["founder"]}])
        ie("Steve Jobs founded Apple in Cupertino.").to_dict()
        # {"person": [{"text": "Steve Jobs", "start": 0, "end": 10, "probability": 0.97}],
        #  "company": [{"text": "Apple", ..., "relations": {"founder": [{"text": "Steve Jobs", ...}]}}]}

    Args:
        source: a UIE run or model directory, a registry name (``nlp/uie_base``) or a module.
        schema: what to extract (see :func:`parse_schema`); default: the entity types of the training data.
        tokenizer: the tokenizer (default: the run's).
        max_length: tokens per window (prompt included).
        threshold: the pointer probability threshold.
        prompt_lang: ``zh`` or ``en`` relation prompts (default: the run's, else detected from the schema).
        stride: tokens shared by consecutive windows of a long text.
        pretrained: for a registry name: its weights (``True``) or a local directory.
        batch_size: prompt windows per forward pass.
        device: ``cpu``, ``cuda``, ...
    """

    def __init__(self, source: str | Path | nn.Module, *, schema: Schema | None = None, tokenizer: Any = None,
                 max_length: int | None = None, threshold: float = 0.5, prompt_lang: str | None = None,
                 stride: int = 64, pretrained: bool | str = True, batch_size: int = 16, device: str = "cpu") -> None:
        self.model, self.tokenizer, self.meta = load_text_model(source, tokenizer=tokenizer, pretrained=pretrained)
        self.device = torch.device(device)
        self.model.to(self.device)
        preprocessing = self.meta.get("preprocessing") or {}
        self.max_length = int(max_length or preprocessing.get("max_length") or 512)
        self.stride = max(0, min(int(stride), self.max_length // 4))
        self.threshold, self.batch_size = float(threshold), max(1, int(batch_size))
        self.collator = PadCollator(self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0)
        self.prompt_lang = prompt_lang or self.meta.get("prompt_lang")
        if self.prompt_lang is not None and self.prompt_lang not in LANGS:
            raise ConfigError(f"prompt_lang={self.prompt_lang!r} must be one of {list(LANGS)}")
        self.schema: list[SchemaNode] = []
        recorded = schema_from_meta(self.meta.get("schema"))
        if schema is not None or recorded:
            self.set_schema(schema if schema is not None else recorded)

    def set_schema(self, schema: Schema) -> None:
        """Replace the schema (see :func:`parse_schema`)."""
        self.schema = parse_schema(schema)
        if not self.schema:
            raise ConfigError("the schema is empty; give at least one type to extract")
        if self.prompt_lang is None:
            names: list[str] = []
            stack = list(self.schema)
            while stack:
                node = stack.pop()
                names.append(node.name)
                stack += node.children
            self.prompt_lang = detect_lang(names)

    # -- one stage: prompts against texts ----------------------------------------------------------------------

    @torch.no_grad()
    def extract(self, pairs: Sequence[tuple[str, str]]) -> list[list[dict[str, Any]]]:
        """The spans answering each ``(prompt, text)`` pair: ``{"text", "start", "end", "probability"}`` dicts."""
        if not pairs:
            return []
        encoding = self.tokenizer([p for p, _ in pairs], [t for _, t in pairs], truncation="only_second",
                                  max_length=self.max_length, stride=self.stride, return_overflowing_tokens=True,
                                  return_offsets_mapping=True)
        keys = [k for k in ("input_ids", "token_type_ids") if k in encoding]
        n_windows = len(encoding["input_ids"])
        found: list[dict[tuple[int, int], float]] = [{} for _ in pairs]
        for start in range(0, n_windows, self.batch_size):
            rows = range(start, min(n_windows, start + self.batch_size))
            batch = self.collator([{k: list(encoding[k][w]) for k in keys} for w in rows])
            out = self.model(**{k: v.to(self.device) for k, v in model_inputs(batch).items()})
            starts, ends = out.start_logits.float().sigmoid().cpu(), out.end_logits.float().sigmoid().cpu()
            for row, w in enumerate(rows):
                pair = encoding["overflow_to_sample_mapping"][w]
                offsets, seq_ids = encoding["offset_mapping"][w], encoding.sequence_ids(w)
                allowed = [seq_ids[t] == 1 and offsets[t][1] > offsets[t][0] for t in range(len(seq_ids))]
                n = len(seq_ids)
                for s, e, p in pointer_spans(starts[row, :n].tolist(), ends[row, :n].tolist(),
                                             threshold=self.threshold, allowed=allowed):
                    span = (offsets[s][0], offsets[e][1])
                    found[pair][span] = max(p, found[pair].get(span, 0.0))
        return [[{"text": text[s:e], "start": s, "end": e, "probability": p}
                 for (s, e), p in sorted(spans.items())] for spans, (_, text) in zip(found, pairs, strict=True)]

    # -- the schema walk ------------------------------------------------------------------------------------

    def _walk(self, texts: list[str], nodes: list[SchemaNode], targets: list[dict[str, Any]],
              subjects: list[str | None]) -> None:
        """Ask ``nodes`` of each text (about its subject, when one is given) and fill ``targets`` in place."""
        for node in nodes:
            prompts = [node.name if subject is None else relation_prompt(subject, node.name, self.prompt_lang)
                       for subject in subjects]
            answers = self.extract(list(zip(prompts, texts, strict=True)))
            child_texts, child_targets, child_subjects = [], [], []
            for text, target, spans in zip(texts, targets, answers, strict=True):
                if not spans:
                    continue
                target[node.name] = spans
                for span in spans:
                    if node.children:
                        span["relations"] = {}
                        child_texts.append(text)
                        child_targets.append(span["relations"])
                        child_subjects.append(span["text"])
            if node.children and child_texts:
                self._walk(child_texts, node.children, child_targets, child_subjects)

    def __call__(self, inputs: str | Sequence[str]) -> ExtractionResult | list[ExtractionResult]:
        """Extract from one text (returns one result) or a list of texts (returns a list)."""
        single = isinstance(inputs, str)
        texts = [inputs] if single else list(inputs)
        if not all(isinstance(t, str) for t in texts):
            raise DataError("InformationExtractor takes texts (strings)")
        if not self.schema:
            raise ConfigError("no schema: pass schema=[...] or call set_schema() before extracting")
        found: list[dict[str, Any]] = [{} for _ in texts]
        self._walk(texts, self.schema, found, [None] * len(texts))
        results = [ExtractionResult(text=t, spans=f) for t, f in zip(texts, found, strict=True)]
        return results[0] if single else results

    predict = __call__
