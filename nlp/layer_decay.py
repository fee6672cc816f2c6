"""Layer-wise learning-rate decay: parameter groups whose ``lr_scale`` shrinks from the head down to the embeddings.

ELECTRA's and DeBERTa-v3's fine-tuning recipe (and PaddleNLP's ``layerwise_decay``): with ``L`` encoder layers and
decay ``d``, the head and pooler train at the full learning rate, layer ``i`` (0-based) at ``d ** (L - i)`` and the
embeddings at ``d ** (L + 1)``. Each group carries its ``lr_scale``; the optimizer's learning rate of a group is
the base rate times that scale. Biases and normalisation weights get no weight decay unless asked for.
"""

from __future__ import annotations

import re
from typing import Any

from torch import nn

from oarkit.core.errors import ConfigError

_LAYER = re.compile(r"\.(?:layer|layers|albert_layer_groups)\.(\d+)\.")


def layer_depth(name: str, num_layers: int) -> int:
    """0 for embeddings, ``i + 1`` for encoder layer ``i``, ``num_layers + 1`` for everything above."""
    if "embeddings" in name.split(".")[0] or ".embeddings." in f".{name}":
        return 0
    match = _LAYER.search(f".{name}")
    return int(match.group(1)) + 1 if match else num_layers + 1


def layerwise_lr_groups(model: nn.Module, decay: float, *, decay_norm_and_bias: bool = False) -> list[dict[str, Any]]:
    """Parameter groups with ``lr_scale = decay ** (num_layers + 1 - depth)`` (see the module docstring).

    Args:
        model: a transformers model (its encoder layers are named ``...layer.<i>...``).
        decay: the per-layer factor in (0, 1]; 1 gives every group scale 1.
        decay_norm_and_bias: also apply weight decay to biases and normalisation weights.

    Returns:
        One group per (depth, weight-decay) pair that has parameters, each with ``lr_scale`` and ``depth``;
        groups without weight decay carry ``weight_decay: 0.0``.
    """
    if not 0 < decay <= 1:
        raise ConfigError(f"layerwise_lr_decay={decay} must lie in (0, 1]")
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    indices = [int(m.group(1)) for n, _ in named if (m := _LAYER.search(f".{n}"))]
    num_layers = max(indices, default=-1) + 1
    depths = [layer_depth(n, num_layers) for n, _ in named]
    groups: dict[tuple[int, bool], dict[str, Any]] = {}
    for (_, param), depth in zip(named, depths, strict=True):
        no_decay = not decay_norm_and_bias and param.ndim <= 1
        group = groups.setdefault((depth, no_decay), {"params": [], "depth": depth,
                                                      "lr_scale": decay ** (num_layers + 1 - depth)})
        if no_decay:
            group["weight_decay"] = 0.0
        group["params"].append(param)
    return [groups[k] for k in sorted(groups)]
