"""Extractive question answering (SQuAD / CMRC2018 style): start and end logits over context windows, EM / F1."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.nlp.data import QuestionAnsweringData
from oarkit.nlp.data.collate import WindowCollator
from oarkit.nlp.metrics import SquadMetric
from oarkit.nlp.tasks.base import TransformerTask


class QuestionAnsweringTask(TransformerTask):
    """Fine-tune an encoder to point at the answer span of a question in a context.

    Args:
        max_answer_tokens: the longest answer the decoder considers.
        allow_no_answer: let the model abstain (SQuAD 2.0) when the [CLS] score beats every span.
        **kwargs: see :class:`~oarkit.nlp.tasks.base.TransformerTask`.
    """

    name = "question_answering"
    data_module_class = QuestionAnsweringData
    head = "question_answering"
    outputs = ("start_logits", "end_logits")

    def __init__(self, model: Any = "nlp/ernie_3_0_medium_zh", *, max_answer_tokens: int = 30,
                 allow_no_answer: bool = False, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.max_answer_tokens, self.allow_no_answer = int(max_answer_tokens), bool(allow_no_answer)

    def pair_inputs(self) -> bool:
        return True

    def build_collator(self, tokenizer: Any) -> WindowCollator:
        return WindowCollator(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)

    def training_step(self, model: nn.Module, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        out = self.forward(model, batch)
        start = nn.functional.cross_entropy(out.start_logits.float(), batch["start_positions"])
        end = nn.functional.cross_entropy(out.end_logits.float(), batch["end_positions"])
        return {"loss": (start + end) / 2, "start_loss": start.detach(), "end_loss": end.detach()}

    def validation_step(self, model: nn.Module, batch: dict[str, Any]) -> Any:
        return self.forward(model, batch)

    def build_metric(self) -> SquadMetric:
        return SquadMetric(max_answer_tokens=self.max_answer_tokens, allow_no_answer=self.allow_no_answer)

    def postprocessing(self) -> dict[str, Any]:
        return {"max_answer_tokens": self.max_answer_tokens, "allow_no_answer": self.allow_no_answer,
                "doc_stride": self.preprocessing.get("doc_stride")}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from oarkit.nlp.predictor import QuestionAnswerer

        return QuestionAnswerer(model, tokenizer=self.tokenizer, max_length=self.preprocessing.get("max_length", 384),
                                doc_stride=self.preprocessing.get("doc_stride", 128),
                                max_answer_tokens=self.max_answer_tokens, **kwargs)
