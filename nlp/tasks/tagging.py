"""Token classification (NER and other BIO tagging): a token head, cross-entropy on first sub-words, span F1."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.nlp.data import TokenClassificationData
from oarkit.nlp.data.features import IGNORE_INDEX
from oarkit.nlp.metrics import SpanF1Metric, logits_of
from oarkit.nlp.tasks.base import TransformerTask


class TokenClassificationTask(TransformerTask):
    """Fine-tune an encoder to tag words with BIO labels (MSRA-NER / CoNLL-2003 style).

    Args:
        **kwargs: see :class:`~oarkit.nlp.tasks.base.TransformerTask`.
    """

    name = "token_classification"
    data_module_class = TokenClassificationData
    head = "token_classification"
    outputs = ("logits",)

    def training_step(self, model: nn.Module, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        logits = logits_of(self.forward(model, batch)).float()
        loss = nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE_INDEX)
        return {"loss": loss}

    def validation_step(self, model: nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        return logits_of(self.forward(model, batch)).float()

    def build_metric(self) -> SpanF1Metric:
        return SpanF1Metric(self.labels)

    def postprocessing(self) -> dict[str, Any]:
        return {"scheme": "BIO", "aggregation": "first_subword"}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from oarkit.nlp.predictor import TokenClassifier

        return TokenClassifier(model, tokenizer=self.tokenizer, labels=self.labels,
                               max_length=self.preprocessing.get("max_length", 128), **kwargs)
