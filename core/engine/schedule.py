"""Learning-rate schedules with linear warm-up, stepped once per optimizer step."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass

from torch.optim import Optimizer
from torch.optim.lr_scheduler import LambdaLR

from oarkit.core.errors import ConfigError, did_you_mean

logger = logging.getLogger(__name__)

DECAYS = ("cosine", "linear", "poly", "step", "constant")


@dataclass
class _Factor:
    """The LR multiplier at optimizer step ``t`` (a plain object, so LambdaLR can save and restore it)."""

    total: int
    warmup: int
    decay: str
    warmup_start_factor: float
    min_lr_ratio: float
    milestones: tuple[int, ...]
    gamma: float
    power: float = 0.9
    warmup_fraction: float = 0.0

    def stretch(self, total: int) -> None:
        """A new run length; step milestones keep their fraction of the run, and so does a warm-up given as one."""
        scale = max(1, total) / max(1, self.total)
        self.milestones = tuple(round(m * scale) for m in self.milestones)
        self.total = max(1, int(total))
        if self.warmup_fraction:
            self.warmup = round(self.warmup_fraction * self.total)

    def __call__(self, t: int) -> float:
        if t < self.warmup:
            return self.warmup_start_factor + (1 - self.warmup_start_factor) * t / self.warmup
        progress = min(1.0, (t - self.warmup) / max(1, self.total - self.warmup))
        if self.decay == "cosine":
            shape = 0.5 * (1 + math.cos(math.pi * progress))
        elif self.decay == "linear":
            shape = 1 - progress
        elif self.decay == "poly":  # PaddleSeg's PolynomialDecay
            shape = (1 - progress) ** self.power
        elif self.decay == "step":
            return self.gamma ** sum(t >= m for m in self.milestones)
        else:
            return 1.0
        return self.min_lr_ratio + (1 - self.min_lr_ratio) * shape


class _ScheduleLR(LambdaLR):
    """A LambdaLR whose checkpoint keeps only its position: on resume the shape comes from the current config
    (so raising ``max_epochs`` stretches the schedule instead of replaying the old one)."""

    def state_dict(self) -> dict:
        state = super().state_dict()
        state["lr_lambdas"] = [None] * len(self.lr_lambdas)
        return state

    def set_total_steps(self, total_steps: int) -> None:
        """Stretch (or shrink) the schedule to ``total_steps`` optimizer steps from now on (``trainer.time_limit``):
        decay ends at the new length, step milestones move with it, the warm-up stays as it is unless it was given
        as a fraction of the run."""
        for factor in self.lr_lambdas:
            if isinstance(factor, _Factor):
                factor.stretch(int(total_steps))


def WarmupLR(optimizer: Optimizer, *, steps_per_epoch: int, max_epochs: float | None = None,
             total_steps: int | None = None, decay: str = "cosine", warmup_epochs: float = 0.0,
             warmup_iters: int = 0, warmup_fraction: float = 0.0, warmup_start_factor: float = 0.01,
             min_lr_ratio: float = 0.0, milestones: Sequence[float] = (), gamma: float = 0.1,
             power: float = 0.9) -> LambdaLR:
    """Linear warm-up, then cosine, linear, polynomial, step or constant decay over the whole run.

    Configs name it with ``_partial_: true``; the Trainer supplies the optimizer and the run length
    (``steps_per_epoch``, ``max_epochs`` and ``total_steps``: a run counted in iterations knows its steps, one
    counted in epochs its epochs).

    Args:
        optimizer: the optimizer whose learning rates are scaled.
        steps_per_epoch: optimizer steps in one epoch (after gradient accumulation); converts the epoch-valued
            settings (``warmup_epochs``, ``milestones``) to steps.
        max_epochs: length of the run in epochs, when ``total_steps`` is not given.
        total_steps: length of the run in optimizer steps (``trainer.max_iters``); wins over ``max_epochs``.
        decay: ``cosine``, ``linear``, ``poly`` (``(1 - progress) ** power``, PaddleSeg's default), ``step``
            (multiply by ``gamma`` at each milestone epoch) or ``constant``.
        warmup_epochs: epochs of linear warm-up from ``warmup_start_factor`` times the base LR (may be fractional).
        warmup_iters: optimizer steps of linear warm-up (PaddleSeg's ``warmup_iters``); set it or
            ``warmup_epochs``, not both.
        warmup_fraction: warm-up as a fraction of the run's optimizer steps (own-data recipes, whose run length
            follows the data); set one of the three warm-up settings at most.
        warmup_start_factor: the LR multiplier at step 0.
        min_lr_ratio: the final LR of cosine, linear and poly decay, as a fraction of the base LR.
        milestones: epochs at which ``step`` decay multiplies the LR by ``gamma``.
        gamma: the factor of ``step`` decay.
        power: the exponent of ``poly`` decay.

    Raises:
        ConfigError: an unknown decay, a negative or doubly given warm-up, or no run length.
    """
    if decay not in DECAYS:
        raise ConfigError(f"scheduler.decay={decay!r} is not one of {DECAYS}.{did_you_mean(decay, DECAYS)}")
    if warmup_epochs < 0 or not 0 < warmup_start_factor <= 1:
        raise ConfigError("scheduler.warmup_epochs must be >= 0 and warmup_start_factor in (0, 1], got "
                          f"{warmup_epochs} and {warmup_start_factor}")
    if warmup_iters < 0 or int(warmup_iters) != warmup_iters:
        raise ConfigError(f"scheduler.warmup_iters must be a whole number >= 0, got {warmup_iters}")
    if not 0 <= warmup_fraction < 1:
        raise ConfigError(f"scheduler.warmup_fraction is a fraction of the run in [0, 1), got {warmup_fraction}")
    given = [f"scheduler.{k}={v}" for k, v in (("warmup_iters", warmup_iters), ("warmup_epochs", warmup_epochs),
                                               ("warmup_fraction", warmup_fraction)) if v]
    if len(given) > 1:
        raise ConfigError(f"{' and '.join(given)} are {'both' if len(given) == 2 else 'all'} set; give the warm-up "
                          "in one unit (set the others to 0)")
    if total_steps is None:
        if max_epochs is None:
            raise ConfigError("WarmupLR needs the run length: total_steps (iterations) or max_epochs")
        total_steps = round(steps_per_epoch * max_epochs)
    if total_steps < 1:
        raise ConfigError(f"the schedule needs at least one optimizer step, got total_steps={total_steps}")
    warmup = int(warmup_iters) or round(warmup_epochs * steps_per_epoch) or round(warmup_fraction * total_steps)
    if warmup > total_steps:
        logger.warning("the warm-up (%d steps) is longer than the run (%d steps): the LR never reaches its base "
                       "value", warmup, total_steps)
    factor = _Factor(total=int(total_steps), warmup=warmup, decay=decay, warmup_start_factor=warmup_start_factor,
                     min_lr_ratio=min_lr_ratio, milestones=tuple(round(m * steps_per_epoch) for m in milestones),
                     gamma=gamma, power=float(power), warmup_fraction=float(warmup_fraction))
    return _ScheduleLR(optimizer, factor)
