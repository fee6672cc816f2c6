"""Text models across the export boundary, both ways.

transformers models take keyword inputs and return ``ModelOutput`` objects; exporters want positional tensors in,
tensors out. :class:`FlatOutputs` calls the model with ``input_ids``, ``attention_mask`` and (when the task feeds
sentence types) ``token_type_ids``, and returns the named output fields, in eval mode. :class:`DeployedTextModel`
is the way back: an export folder called with keywords, returning an object with the named fields, so the text
predictors, and export verification's metric, run on an artifact exactly as on the eager model.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import torch
from torch import nn

from oarkit.core.deploy import DeployedModel
from oarkit.core.errors import OarkitError


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


class DeployedTextModel(nn.Module):
    """An exported text graph (ONNX, OpenVINO, ...) called like a transformers model.

    Keyword inputs the graph does not take are dropped (a single-text graph has no ``token_type_ids``: the eager
    model saw zeros there); the outputs come back as attributes named after the graph's outputs (``logits``, or
    ``start_logits`` and ``end_logits``).

    Export verification scores an artifact through the text task's own ``validation_step`` this way (it is the
    text deploy spec's ``deployed_wrapper``).

    Args:
        folder: an export folder of a text run, or its :class:`~oarkit.core.deploy.DeployedModel`.
    """

    def __init__(self, folder: str | Path | DeployedModel) -> None:
        super().__init__()
        self.deployed = folder if isinstance(folder, DeployedModel) else DeployedModel(folder)
        self.manifest = self.deployed.manifest
        self.input_names = [t.name for t in self.manifest.inputs]
        self.output_names = [t.name for t in self.manifest.outputs]

    def forward(self, **inputs: torch.Tensor) -> SimpleNamespace:
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise OarkitError(f"{self.deployed.folder} needs the inputs {self.input_names}; {missing} not given")
        outs = self.deployed(*(inputs[n] for n in self.input_names))
        outs = outs if isinstance(outs, tuple) else (outs,)
        return SimpleNamespace(**dict(zip(self.output_names, outs, strict=True)))
