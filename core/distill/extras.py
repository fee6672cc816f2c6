"""Modules a distillation wrapper trains beside the student (feature adapters, a DML peer) but never saves in
the student's weights: their parameters join the optimizer, their weights and step count travel in the resumable
training state (``last/``) through a callback, and under DDP their gradients are averaged across ranks."""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from oarkit.core.engine.callbacks import Callback


def default_groups(module: nn.Module, decay_norm_and_bias: bool) -> list[dict[str, Any]]:
    """The Trainer's default parameter groups of ``module``."""
    from oarkit.core.engine.trainer import parameter_groups

    return parameter_groups(module, decay_norm_and_bias)


def average_gradients_across_ranks(module: nn.Module) -> None:
    """Under an initialised process group of several ranks, average each parameter's gradient over the ranks
    as soon as it is accumulated (DDP does this for the model; these modules sit outside it)."""
    if not (dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1):
        return
    world = dist.get_world_size()

    def hook(p: torch.Tensor) -> None:
        dist.all_reduce(p.grad)
        p.grad.div_(world)

    for p in module.parameters():
        if p.requires_grad:
            p.register_post_accumulate_grad_hook(hook)


class ExtrasState(Callback):
    """Saves and restores the wrapper's extra modules, and its step count where it keeps one (the draw of
    unlabeled batches), with the run's training state."""

    all_ranks = True

    def __init__(self, owner: Any) -> None:
        self.owner = owner

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"weights": {k: v.detach().cpu().clone()
                                             for k, v in self.owner.extras.state_dict().items()}}
        if hasattr(self.owner, "step"):
            state["step"] = int(self.owner.step)
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if "step" in state:
            self.owner.step = int(state["step"])
        if state.get("weights"):
            self.owner.extras.load_state_dict(state["weights"])


def extras_groups(owner: Any, model: nn.Module, groups: list[dict[str, Any]] | None, decay_norm_and_bias: bool,
                  extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]] | None:
    """``groups`` (the task's, or the default ones of ``model``) plus ``extra`` (the groups of ``owner.extras``;
    their default groups when not given), the extras moved to ``model``'s device; ``groups`` unchanged when there
    are no extras."""
    extras: nn.Module = owner.extras
    if not any(True for _ in extras.parameters()):
        return groups
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    extras.to(device)
    average_gradients_across_ranks(extras)
    return [*(groups or default_groups(model, decay_norm_and_bias)),
            *(extra if extra is not None else default_groups(extras, decay_norm_and_bias))]
