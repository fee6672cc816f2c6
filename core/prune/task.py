"""Structured pruning inside the normal Trainer: ``prune=l1 | fpgm | taylor``.

The config group instantiates :class:`StructuredPruning`; the config builder asks it to wrap the kit's task.
:class:`PruneTask` builds the model as the kit does, loads ``prune.checkpoint``, removes channels until the
model's FLOPs are ``prune.flops`` of the original's (:func:`~oarkit.core.prune.channels.prune_to_flops`), and
hands the smaller model to the Trainer, which fine-tunes it with the recipe's optimizer and schedule. With
``prune.sensitivity`` (a table from ``oarkit prune-sensitivity``) each group loses its own share of channels.

The run's meta.json records the pruned sizes (:mod:`oarkit.core.prune.shapes`), so ``load_model``, predictors,
``oarkit eval``, export, QAT and distillation rebuild the pruned architecture from its registry name without
Torch-Pruning. Resuming a pruned run prunes the same checkpoint again, which gives the same architecture (the
criteria are deterministic; Taylor's gradients come from the first training samples under a fixed seed).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from torch import nn

from oarkit.core.engine.seeding import rng_state, seed_everything, set_rng_state
from oarkit.core.engine.task import DataModule, Task, TaskWrapper
from oarkit.core.errors import ConfigError
from oarkit.core.prune.channels import METHODS, PruneResult, prune_to_flops
from oarkit.core.prune.layerwise import SensitivityTable, table_record
from oarkit.core.prune.shapes import pruned_shapes, snapshot

logger = logging.getLogger(__name__)


class PruneTask(TaskWrapper):
    """A kit's task whose model is a checkpoint pruned to a FLOPs target (see the module docstring)."""

    def __init__(self, task: Task, *, method: str, checkpoint: str | Path, flops: float,
                 tolerance: float = 0.05, sensitivity: SensitivityTable | None = None,
                 round_to: int | None = 8) -> None:
        super().__init__(task)
        self.round_to = round_to
        self.method, self.checkpoint, self.flops, self.tolerance = method, Path(checkpoint), float(flops), tolerance
        self.sensitivity = sensitivity
        self.result: PruneResult | None = None
        self.changes: dict[str, Any] = {}

    def setup(self, data: DataModule) -> nn.Module:
        from oarkit.core.engine.checkpoint import checkpoint_folder, read_meta, restore_pruned
        from oarkit.core.hub import load_state_dict, read_state_dict

        model = self.inner.setup(data)
        built = snapshot(model)  # sizes are recorded against the architecture the registry builds
        folder = checkpoint_folder(self.checkpoint, "prune.checkpoint")
        restore_pruned(model, read_meta(folder), source=str(folder))  # a pruned run pruned further
        load_state_dict(model, read_state_dict(folder), source=str(folder))
        with _seeded(0):
            inputs = self.inner.example_inputs()
            if self.method == "taylor":
                self._backward(model, data)
            self.result = prune_to_flops(model.eval(), inputs, self.method, self.flops, tolerance=self.tolerance,
                                         sensitivity=self.sensitivity, round_to=self.round_to,
                                         progress=lambda r, k: logger.debug("pruning at %.4g keeps %.3f of FLOPs",
                                                                            r, k))
        pruned = self.result.model.train()
        self.changes = pruned_shapes(built, pruned)
        params = (sum(p.numel() for p in model.parameters()), sum(p.numel() for p in pruned.parameters()))
        r = self.result
        if r.ratio is not None:
            how = f"{100 * r.ratio:.1f}% of every channel group removed"
        elif self.sensitivity is not None:
            how = f"layer-wise ratios from {self.sensitivity.path} ({len(r.ratios or {})} groups)"
        else:  # two shares, so that the widths stay multiples of round_to (prune_to_flops)
            shares = sorted(set((r.ratios or {}).values()))
            how = (f"{100 * shares[0]:.1f}% to {100 * shares[-1]:.1f}% of each channel group removed, widths "
                   f"multiples of {r.round_to}")
        logger.info("pruned %s (%s): %s; FLOPs %.4g -> %.4g (%.3f), parameters %d -> %d", folder, self.method, how,
                    r.flops_before, r.flops_after, r.flops_ratio, *params)
        return pruned

    def _backward(self, model: nn.Module, data: DataModule) -> None:
        """Gradients of the task's loss on the first training samples, for the Taylor criterion."""
        dataset = data.train_dataset()
        count = min(len(dataset), max(int(getattr(data, "batch_size", 8) or 8), 2))
        batch = self.inner.collate([dataset[i] for i in range(count)])
        model.train()
        model.zero_grad(set_to_none=True)
        self.inner.training_step(model, batch)["loss"].backward()

    def meta(self) -> dict[str, Any]:
        meta = self.inner.meta()
        if self.result is None:
            return meta
        r = self.result
        record = {"method": self.method, "tool": "Torch-Pruning (DepGraph)", "flops": self.flops,
                  "channel_ratio": None if r.ratio is None else round(r.ratio, 6), "flops_before": r.flops_before,
                  "flops_after": r.flops_after, "round_to": r.round_to, "checkpoint": str(self.checkpoint)}
        if self.sensitivity is not None and r.ratios is not None:
            record.update(table_record(self.sensitivity, r.ratios, float(r.threshold or 0.0)))
        elif r.ratios is not None:  # rounded widths: two shares between the groups
            record["layer_ratios"] = {n: round(v, 6) for n, v in r.ratios.items()}
        return {**meta, "prune": {**record, "modules": self.changes}}


@contextlib.contextmanager
def _seeded(seed: int) -> Iterator[None]:
    """Fixed random state for the block (Python, NumPy, torch), the previous state put back afterwards."""
    state = rng_state()
    seed_everything(seed)
    try:
        yield
    finally:
        set_rng_state(state)


class StructuredPruning:
    """The ``prune=`` config group: prune a trained checkpoint's channels to a FLOPs target, then fine-tune.

    Args:
        method: the channel importance: ``l1`` (filter L1 norm, Li et al. 2017), ``fpgm`` (distance to the
            geometric median, He et al. 2019) or ``taylor`` (first-order Taylor, Molchanov et al. 2019).
        checkpoint: the run (or model directory) to prune.
        flops: the fraction of the model's FLOPs to keep, in (0, 1).
        tolerance: how far (relative) the pruned FLOPs may be from the target.
        sensitivity: a ``sensitivity.json`` from ``oarkit prune-sensitivity``: each group then loses its own share
            of channels, chosen by a metric-loss threshold (:mod:`oarkit.core.prune.layerwise`); groups the table
            does not name keep their width. ``None``: one share for every group.
        round_to: keep every pruned width a multiple of this (8: what CPU and GPU kernels run fastest; odd widths
            can make a pruned model slower than the original); ``null`` leaves widths unrounded. Where the target
            cannot be met with rounded widths, they are left unrounded with a warning.

    Raises:
        ConfigError: an unknown method, a ratio outside (0, 1), no checkpoint given, an unreadable table.
        WeightsError: the checkpoint does not exist.
    """

    def __init__(self, method: str, *, checkpoint: str, flops: float = 0.5, tolerance: float = 0.05,
                 sensitivity: str | None = None, round_to: int | None = 8) -> None:
        import importlib.util

        from oarkit.core.engine.checkpoint import checkpoint_folder

        if importlib.util.find_spec("torch_pruning") is None:
            raise ConfigError("prune= needs Torch-Pruning: pip install 'oarkit[compress]'")
        if method not in METHODS:
            raise ConfigError(f"prune={method!r} is not a pruning method; use one of {list(METHODS)}")
        if not checkpoint or str(checkpoint) == "???":
            raise ConfigError("prune.checkpoint is required: the run directory (or model directory) to prune")
        if not 0.0 < float(flops) < 1.0:
            raise ConfigError(f"prune.flops={flops} must be in (0, 1): the fraction of the model's FLOPs to keep "
                              "(0.5 halves them)")
        if not 0.0 < float(tolerance) < 0.5:
            raise ConfigError(f"prune.tolerance={tolerance} must be in (0, 0.5)")
        if round_to is not None and int(round_to) < 1:
            raise ConfigError(f"prune.round_to={round_to} must be a positive channel count (8) or null")
        self.round_to = None if round_to is None else int(round_to)
        checkpoint_folder(checkpoint, "prune.checkpoint")
        self.method, self.checkpoint = method, str(checkpoint)
        self.flops, self.tolerance = float(flops), float(tolerance)
        self.sensitivity = SensitivityTable.load(sensitivity) if sensitivity else None
        if self.sensitivity is not None and self.sensitivity.method not in ("", method):
            logger.info("prune.sensitivity was measured with %s; pruning with %s", self.sensitivity.method, method)

    def wrap_task(self, task: Task) -> PruneTask:
        return PruneTask(task, method=self.method, checkpoint=self.checkpoint, flops=self.flops,
                         tolerance=self.tolerance, sensitivity=self.sensitivity, round_to=self.round_to)

    def callbacks(self) -> list[Any]:
        return []
