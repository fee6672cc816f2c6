"""Verification of exported artifacts against eager PyTorch: output differences, latency and the task metric.

Outputs are compared by the deploy spec's comparators (:mod:`oarkit.core.export.compare`; by default
``max |artifact - eager| / max |eager|`` per output, relative to the output's range: element-wise relative errors
explode near zero and say nothing). The metric goes through the one evaluation path
(:func:`oarkit.core.engine.evaluation.run_evaluation`), exactly as training and ``oarkit eval`` compute it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, Subset

from oarkit.core.engine.evaluation import build_loader, run_evaluation
from oarkit.core.engine.task import DataModule, Task
from oarkit.core.export.compare import Difference, OutputComparator, compare_batch


def _as_tuple(out: Any) -> tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@torch.no_grad()
def compare_outputs(reference: nn.Module, deployed: nn.Module, batches: Iterable[tuple[torch.Tensor, ...]],
                    names: Sequence[str], compare: OutputComparator | Sequence[OutputComparator] | None = None
                    ) -> dict[str, Difference]:
    """Run both modules on every batch and keep each output's worst :class:`~.compare.Difference`.

    Args:
        reference: the eager export wrapper.
        deployed: the artifact, called like the wrapper (positional tensors in, a tuple out).
        batches: the graph's inputs, batch by batch.
        names: the output names, in order.
        compare: the deploy spec's comparators (outputs they do not judge: element-wise, relative to the range).
    """
    worst: dict[str, Difference] = {}
    for batch in batches:
        diffs = compare_batch(names, _as_tuple(reference(*batch)), _as_tuple(deployed(*batch)), compare)
        for name, diff in diffs.items():
            worst[name] = worst[name].worse(diff) if name in worst else diff
    return worst


@torch.no_grad()
def own_spread(reference: nn.Module, batches: Iterable[tuple[torch.Tensor, ...]], names: Sequence[str],
               compare: OutputComparator | Sequence[OutputComparator] | None, nudge: float, *, seed: int = 0
               ) -> dict[str, Difference]:
    """How far eager's own outputs move when its float inputs move by ``nudge`` times standard normal noise: each
    output's worst :class:`~.compare.Difference` over ``batches``, judged as the artifact is."""
    generator = torch.Generator().manual_seed(seed)

    def nudged(*inputs: torch.Tensor) -> Any:
        return reference(*(x + nudge * torch.randn(x.shape, generator=generator).to(x) if x.is_floating_point()
                           else x for x in inputs))

    return compare_outputs(reference, nudged, batches, names, compare)


def hold_to_own_spread(errors: dict[str, Difference], spread: dict[str, Difference], format_tolerance: float,
                       nudge: float) -> list[str]:
    """Raise each output's tolerance to eager's own spread (:func:`own_spread`) where that is larger, saying so in
    its note; returns the outputs raised."""
    raised = []
    for name, error in errors.items():
        own = spread.get(name)
        bound = format_tolerance if error.tolerance is None else error.tolerance
        if own is None or not own.error > bound:  # NaN spreads raise nothing
            continue
        error.tolerance = own.error
        error.note = "; ".join(filter(None, [error.note, f"held to eager's own spread {own.error:.3g} under a "
                                                          f"{nudge:g} input nudge (tolerance {bound:g})"]))
        raised.append(name)
    return raised


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


def task_metric(task: Task, model: nn.Module, dataset: Dataset, *, batch_size: int = 32, limit: int | None = None,
                data: DataModule | None = None) -> dict[str, Any]:
    """The task's metric of ``model`` on ``dataset``, through the one evaluation path the Trainer uses.

    An artifact enters wrapped so that the task's ``validation_step`` calls it as it calls the trained model
    (:attr:`DeploySpec.deployed_wrapper <oarkit.core.engine.deploy_spec.DeploySpec.deployed_wrapper>`), so the
    eager model and the artifact go through the same code.

    Args:
        task: the set-up or restored task.
        model: the eager model, or the wrapped artifact.
        dataset: the split (evaluation preprocessing).
        batch_size: samples per batch.
        limit: score the first ``limit`` samples only (``None``: all).
        data: the data module whose batch sampler groups the split (``None``: plain batches).
    """
    if limit is not None and limit < len(dataset):
        dataset = Subset(dataset, range(int(limit)))
    loader = build_loader(dataset, data, task, train=False, batch_size=batch_size)
    results, _ = run_evaluation(task, model, loader)
    return results
