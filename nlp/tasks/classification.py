"""Text classification (single texts and pairs): a sequence-classification head, cross-entropy, accuracy / macro-F1."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.nlp.data import TextClassificationData
from oarkit.nlp.metrics import TextClassificationMetric, logits_of
from oarkit.nlp.tasks.base import TransformerTask


class TextClassificationTask(TransformerTask):
    """Fine-tune an encoder to classify texts or text pairs (CLUE TNEWS / AFQMC style).

    Args:
        label_smoothing: label smoothing of the cross-entropy.
        **kwargs: see :class:`~oarkit.nlp.tasks.base.TransformerTask`.
    """

    name = "text_classification"
    data_module_class = TextClassificationData
    head = "sequence_classification"
    outputs = ("logits",)

    def __init__(self, model: Any = "nlp/ernie_3_0_medium_zh", *, label_smoothing: float = 0.0, **kwargs: Any) -> None:
        if not 0.0 <= label_smoothing < 1.0:
            raise ConfigError(f"task.label_smoothing must lie in [0, 1), got {label_smoothing}")
        super().__init__(model, **kwargs)
        self.label_smoothing = float(label_smoothing)

    def pair_inputs(self) -> bool:
        return bool(self.data_meta.get("pair"))

    def training_step(self, model: nn.Module, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        logits = logits_of(self.forward(model, batch)).float()
        loss = nn.functional.cross_entropy(logits, batch["labels"], label_smoothing=self.label_smoothing)
        return {"loss": loss}

    def validation_step(self, model: nn.Module, batch: dict[str, Any]) -> torch.Tensor:
        return logits_of(self.forward(model, batch)).float()

    def distill_logits(self, outputs: Any) -> list[tuple[torch.Tensor, int]]:
        return [(logits_of(outputs), -1)]

    def build_metric(self) -> TextClassificationMetric:
        return TextClassificationMetric(num_classes=max(2, len(self.labels)))

    def postprocess(self, outputs: Any, topk: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
        """Top-k ``(probabilities, class_ids)`` from logits."""
        probs = logits_of(outputs).float().softmax(-1)
        return probs.topk(min(topk, probs.shape[-1]), dim=-1)

    def postprocessing(self) -> dict[str, Any]:
        return {"activation": "softmax", "topk": min(5, len(self.labels))}

    def predictor(self, model: nn.Module, **kwargs: Any) -> Any:
        from oarkit.nlp.predictor import TextClassifier

        return TextClassifier(model, tokenizer=self.tokenizer, labels=self.labels,
                              max_length=self.preprocessing.get("max_length", 128), **kwargs)
