"""Exponential moving average of a model's weights, evaluated and saved in place of the raw weights."""

from __future__ import annotations

import copy

import torch
from torch import nn


class ModelEMA:
    """An EMA copy of ``model`` whose decay ramps up as ``min(decay, (1 + n) / (10 + n))`` over updates ``n``.

    The ramp lets short fine-tuning runs benefit too; long runs settle at ``decay``.
    """

    def __init__(self, model: nn.Module, decay: float = 0.9998) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"EMA decay must lie in (0, 1), got {decay}")
        self.module = copy.deepcopy(model).eval().requires_grad_(False)
        self.decay = decay
        self.updates = 0

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        self.updates += 1
        d = min(self.decay, (1 + self.updates) / (10 + self.updates))
        for ema_v, v in zip(self.module.state_dict().values(), model.state_dict().values()):
            if ema_v.dtype.is_floating_point:
                ema_v.lerp_(v.detach(), 1.0 - d)
            else:
                ema_v.copy_(v)

    def state_dict(self) -> dict:
        return {"module": self.module.state_dict(), "updates": self.updates, "decay": self.decay}

    def load_state_dict(self, state: dict) -> None:
        self.module.load_state_dict(state["module"])
        self.updates = int(state["updates"])
