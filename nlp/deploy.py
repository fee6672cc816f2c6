"""Export wrappers: a text model's forward with positional tensor inputs and flat tensor outputs.

transformers models take keyword inputs and return ``ModelOutput`` objects; exporters want positional tensors in,
tensors out. :class:`FlatOutputs` calls the model with ``input_ids``, ``attention_mask`` and (when the task feeds
sentence types) ``token_type_ids``, and returns the named output fields, in eval mode.
"""

from __future__ import annotations

import torch
from torch import nn


class FlatOutputs(nn.Module):
    """``(input_ids, attention_mask[, token_type_ids]) -> tuple of output tensors`` around a text model.

    Args:
        model: a transformers model (or UIE) taking keyword inputs.
        fields: the output fields returned, in order (``("logits",)``, ``("start_logits", "end_logits")``).
    """

    def __init__(self, model: nn.Module, fields: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.fields = model, tuple(fields)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor | None = None) -> torch.Tensor | tuple[torch.Tensor, ...]:
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        if token_type_ids is not None:
            inputs["token_type_ids"] = token_type_ids
        out = self.model(**inputs)
        values = tuple(getattr(out, f) for f in self.fields)
        return values[0] if len(values) == 1 else values
