"""From a composed config to a ready Trainer: instantiate the task, data, optimizer, schedule, callbacks."""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

from oarkit.core.config.targets import instantiate
from oarkit.core.errors import ConfigError


def build_trainer(cfg: DictConfig, **overrides: Any) -> Any:
    """The :class:`~oarkit.core.Trainer` a validated run config describes.

    Args:
        cfg: a config from :func:`~oarkit.core.config.load_config`.
        **overrides: Trainer arguments that win over the config (``resume=True``, ``callbacks=[...]``).
    """
    from oarkit.core.engine.trainer import Trainer

    task = instantiate(cfg.task)
    data = instantiate(cfg.data)
    optimizer = instantiate(cfg.optimizer) if cfg.get("optimizer") is not None else None
    scheduler = instantiate(cfg.scheduler) if cfg.get("scheduler") is not None else None
    if optimizer is not None and not callable(optimizer):
        raise ConfigError("optimizer must be a _partial_ optimizer (set `_partial_: true` under optimizer)")
    if scheduler is not None and not callable(scheduler):
        raise ConfigError("scheduler must be a _partial_ schedule (set `_partial_: true` under scheduler)")
    callbacks = [instantiate(c) for c in cfg.get("callbacks") or []]
    prune = instantiate(cfg.prune) if cfg.get("prune") else None
    if prune is not None:  # prune=l1|fpgm|taylor: the task's model is the pruned checkpoint, the loop the same
        task = prune.wrap_task(task)
        callbacks += prune.callbacks()
    distill = instantiate(cfg.distill) if cfg.get("distill") else None
    if distill is not None:  # distill=kd: the task is wrapped, the loop stays the same
        task = distill.wrap_task(task)
        callbacks += distill.callbacks()
    quant = instantiate(cfg.quant) if cfg.get("quant") else None
    if quant is not None:  # quant=qat: the task is wrapped, the loop stays the same
        task = quant.wrap_task(task)
        callbacks += quant.callbacks()
    kwargs = OmegaConf.to_container(cfg.get("trainer") or {}, resolve=True)
    kwargs.update(overrides)
    extra = kwargs.pop("callbacks", [])
    return Trainer(task, data, output_dir=cfg.get("output_dir", "runs/exp"), optimizer=optimizer,
                   scheduler=scheduler, callbacks=[*callbacks, *extra], config=cfg, **kwargs)
