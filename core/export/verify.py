"""Verification of exported artifacts against eager PyTorch: output errors, latency and the task metric.

Errors are measured per output as ``max_abs = max |artifact - eager|`` and ``max_rel = max_abs / max |eager|``
(relative to the output's range: element-wise relative errors explode near zero and say nothing).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from oarkit.core.engine.task import Task


@dataclass
class OutputError:
    """The worst difference of one output over every verified input."""

    name: str
    max_abs: float = 0.0
    max_rel: float = 0.0

    def update(self, reference: torch.Tensor, actual: torch.Tensor) -> None:
        if reference.shape != actual.shape:
            raise ValueError(f"output {self.name!r} has shape {tuple(actual.shape)}, eager gives "
                             f"{tuple(reference.shape)}")
        ref, act = reference.detach().float().cpu(), actual.detach().float().cpu()
        diff = float((ref - act).abs().max()) if ref.numel() else 0.0
        scale = float(ref.abs().max()) if ref.numel() else 0.0
        self.max_abs = max(self.max_abs, diff)
        self.max_rel = max(self.max_rel, diff / scale if scale > 0 else diff)


def _as_tuple(out: Any) -> tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@torch.no_grad()
def compare_outputs(reference: nn.Module, deployed: nn.Module, batches: Iterable[tuple[torch.Tensor, ...]],
                    names: Sequence[str]) -> list[OutputError]:
    """Run both modules on every batch and keep each output's worst absolute and relative error."""
    errors = [OutputError(n) for n in names]
    for batch in batches:
        ref, out = _as_tuple(reference(*batch)), _as_tuple(deployed(*batch))
        if len(ref) != len(out):
            raise ValueError(f"the artifact returns {len(out)} outputs, eager returns {len(ref)}")
        for err, r, o in zip(errors, ref, out):
            err.update(r, o)
    return errors


@torch.no_grad()
def median_latency_ms(fn: Callable[..., Any], inputs: tuple[torch.Tensor, ...], *, warmup: int = 3,
                      runs: int = 30, budget_s: float = 3.0) -> float:
    """Median wall time of ``fn(*inputs)`` in milliseconds (stops early once ``budget_s`` is spent)."""
    for _ in range(warmup):
        fn(*inputs)
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < runs and (len(times) < 3 or time.perf_counter() < deadline):
        tic = time.perf_counter()
        fn(*inputs)
        times.append(time.perf_counter() - tic)
    return 1000.0 * statistics.median(times)


def model_inputs(batch: Any, count: int) -> tuple[torch.Tensor, ...]:
    """The first ``count`` tensors of a ``(inputs..., targets)`` batch: what the export wrapper takes."""
    items = batch if isinstance(batch, (tuple, list)) else (batch,)
    return tuple(items[:count])


@torch.no_grad()
def task_metric(task: Task, model: nn.Module, dataset: Dataset, *, batch_size: int = 32,
                limit: int | None = None) -> dict[str, Any]:
    """The task's metric of ``model`` on ``dataset``, computed exactly as the Trainer's evaluation does.

    An artifact enters as a :class:`~oarkit.core.deploy.DeployedModel`: a task's ``validation_step`` calls the
    model as its export wrapper is called, so the eager model and the artifact go through the same code.
    """
    loader = DataLoader(dataset, batch_size=batch_size, shuffle=False, collate_fn=task.collate)
    metric = task.build_metric()
    seen = 0
    for batch in loader:
        metric.update(task.validation_step(model, batch), batch)
        seen += len(batch[-1]) if isinstance(batch, (tuple, list)) else batch_size
        if limit is not None and seen >= limit:
            break
    return metric.compute()
