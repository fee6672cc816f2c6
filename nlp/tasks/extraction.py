"""Universal information extraction (UIE): prompt-conditioned start / end pointers, span P / R / F1."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.nlp.data import InformationExtractionData
from oarkit.nlp.metrics import PointerSpanMetric
from oarkit.nlp.tasks.base import TransformerTask


class InformationExtractionTask(TransformerTask):
    """Fine-tune UIE on doccano annotations: entities and relations become prompts answered by spans.

    Args:
        threshold: the pointer probability above which a token starts or ends a span.
        **kwargs: see :class:`~oarkit.nlp.tasks.base.TransformerTask` (``model`` defaults to ``nlp/uie_base``).
    """

    name = "information_extraction"
    data_module_class = InformationExtractionData
    head = None  # UIE's own pointers
    outputs = ("start_logits", "end_logits")

    def __init__(self, model: Any = "nlp/uie_base", *, threshold: float = 0.5, **kwargs: Any) -> None:
        if not 0 < threshold < 1:
            raise ConfigError(f"task.threshold={threshold} must lie in (0, 1)")
        super().__init__(model, **kwargs)
        self.threshold = float(threshold)

    def pair_inputs(self) -> bool:
        return True

    def model_kwargs(self) -> dict[str, Any]:
        kwargs = super().model_kwargs()
        kwargs["num_classes"] = 1  # the schema lives in the prompts, not in the head
        return kwargs

    def training_step(self, model: nn.Module, batch: dict[str, Any]) -> dict[str, torch.Tensor]:
        out = self.forward(model, batch)
        mask = batch["attention_mask"].float()
        bce = nn.functional.binary_cross_entropy_with_logits
        start = (bce(out.start_logits.float(), batch["start_targets"], reduction="none") * mask).sum() / mask.sum()
        end = (bce(out.end_logits.float(), batch["end_targets"], reduction="none") * mask).sum() / mask.sum()
        return {"loss": (start + end) / 2, "start_loss": start.detach(), "end_loss": end.detach()}

    def validation_step(self, model: nn.Module, batch: dict[str, Any]) -> Any:
        return self.forward(model, batch)

    def build_metric(self) -> PointerSpanMetric:
        return PointerSpanMetric(self.threshold)

    def postprocessing(self) -> dict[str, Any]:
        return {"activation": "sigmoid", "threshold": self.threshold,
                "prompt_lang": self.data_meta.get("prompt_lang", "zh")}

    def predictor(self, model: nn.Module, *, schema: Any = None, **kwargs: Any) -> Any:
        from oarkit.nlp.extraction import InformationExtractor

        return InformationExtractor(model, tokenizer=self.tokenizer, schema=schema or self.data_meta.get("schema"),
                                    max_length=self.preprocessing.get("max_length", 512), threshold=self.threshold,
                                    prompt_lang=self.data_meta.get("prompt_lang"), **kwargs)
