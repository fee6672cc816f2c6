"""FLOPs of a forward pass (and of each module in it), counted by :mod:`torch.utils.flop_counter` (convolutions
and matrix products)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode


def _counted(model: nn.Module, inputs: Sequence[torch.Tensor]) -> FlopCounterMode:
    """The counter after ``model(*inputs)`` in eval mode without gradients (the model's mode restored)."""
    training = model.training
    model.eval()
    try:
        with FlopCounterMode(display=False) as counter, torch.no_grad():
            model(*inputs)
    finally:
        model.train(training)
    return counter


def count_flops(model: nn.Module, inputs: Sequence[torch.Tensor]) -> int:
    """The floating-point operations of ``model(*inputs)`` in eval mode, without gradients (the model's mode is
    restored afterwards). Elementwise work is not counted, as in every FLOPs table of the field."""
    return int(_counted(model, inputs).get_total_flops())


def module_flops(model: nn.Module, inputs: Sequence[torch.Tensor]) -> dict[str, int]:
    """The FLOPs of each module of ``model(*inputs)`` (its submodules' included), by module path (``""``: the
    whole model); counted as :func:`count_flops` counts them."""
    counter = _counted(model, inputs)
    prefix = type(model).__name__
    flops: dict[str, int] = {}
    for key, counts in counter.get_flop_counts().items():  # keys: "Global", then "<Class>.<path>"
        if key == "Global":
            continue
        path = "" if key == prefix else key.removeprefix(prefix + ".")
        flops[path] = flops.get(path, 0) + int(sum(counts.values()))
    return flops
