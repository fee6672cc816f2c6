"""What knowledge distillation matches in a detector: the head's per-level class logits and distance bins.

A detector's training forward returns losses, so the task names the head layers (the model's
``distill_layers()``, see :mod:`oarkit.det.models`) and turns their outputs into logits with a class dimension:
sigmoid class logits become two-way logits ``[x, 0]`` (the soft target is each class's Bernoulli probability, as
in PaddleDetection's PP-YOLOE distillation), distance bins ``[B, 4 * (R + 1), H, W]`` become ``[B, 4, R + 1, H, W]``
over the bins (localization distillation, Zheng et al. 2022).
"""

from __future__ import annotations

import torch
from torch import nn

from oarkit.core.errors import ConfigError

KINDS = ("class", "bins", "class+bins")


def head_layers(model: nn.Module) -> dict[str, str]:
    """``model.distill_layers()``, checked, or a :class:`ConfigError` for a detector that declares none."""
    layers = model.distill_layers() if hasattr(model, "distill_layers") else {}
    if not layers:
        raise ConfigError(f"{type(model).__name__} declares no head layers to distill (distill_layers()); distill= "
                          "works on PP-YOLOE(+) and PicoDet students and teachers")
    unknown = {k for k in layers.values() if k not in KINDS}
    if unknown:
        raise ConfigError(f"{type(model).__name__}.distill_layers() names kinds {sorted(unknown)}; use {KINDS}")
    return dict(layers)


def _two_way(logits: torch.Tensor) -> tuple[torch.Tensor, int]:
    return torch.stack([logits, torch.zeros_like(logits)], dim=-1), -1


def _bins(logits: torch.Tensor) -> tuple[torch.Tensor, int]:
    b, c, h, w = logits.shape
    if c % 4:
        raise ConfigError(f"distance-bin logits have {c} channels, not 4 * (reg_max + 1)")
    return logits.reshape(b, 4, c // 4, h, w), 2


def head_logits(outputs: dict[str, torch.Tensor], kinds: dict[str, str],
                num_classes: int) -> list[tuple[torch.Tensor, int]]:
    """The logits of the head layers' outputs (``name -> tensor``), each with its class dimension, in the
    order the model names them."""
    out = []
    for name, tensor in outputs.items():
        kind = kinds[name]
        if kind == "class":
            out.append(_two_way(tensor))
        elif kind == "bins":
            out.append(_bins(tensor))
        else:
            out += [_two_way(tensor[:, :num_classes]), _bins(tensor[:, num_classes:])]
    return out
