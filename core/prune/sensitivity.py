"""Sensitivity analysis (PaddleSlim's ``sensitivity``): ``oarkit prune-sensitivity RUN``.

Every prunable group of a trained model (:func:`~oarkit.core.prune.channels.find_prunable`, named by its root
layer's path) is pruned alone, on a copy, at a few ratios, and the copy is scored with the task's metric on the
validation data without fine-tuning, through the run's own evaluation path
(:class:`~oarkit.core.engine.evaluation.RunEvaluation`). The loss against the unpruned model, relative as in
PaddleSlim (``(baseline - metric) / baseline`` for a metric where higher is better), says how much each layer
tolerates; ``prune.sensitivity=<sensitivity.json>`` turns the table into layer-wise ratios
(:mod:`oarkit.core.prune.layerwise`).
"""

from __future__ import annotations

import copy
import csv
import dataclasses
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.core.prune.channels import METHODS, find_prunable, prune_channels
from oarkit.core.prune.flops import count_flops, module_flops

logger = logging.getLogger(__name__)

#: the ratios analysed by default (PaddleSlim's ``pruned_ratios``)
DEFAULT_RATIOS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: criteria the analysis can rank channels with: Taylor needs gradients from a training pass, which it does not run
ANALYSABLE = ("l1", "fpgm")
#: layers drawn in sensitivity.png: the most sensitive ones
PLOTTED = 12


@dataclasses.dataclass
class LayerSensitivity:
    """One prunable group's metric when it alone is pruned."""

    name: str  #: the root layer's module path
    channels: int  #: the group's width
    flops_share: float  #: the share of the model's FLOPs in the group's layers
    ratios: list[float]
    metric: list[float]  #: the metric at each ratio
    loss: list[float]  #: the relative metric loss against the unpruned model at each ratio
    flops: list[float]  #: the share of the model's FLOPs kept at each ratio


@dataclasses.dataclass
class SensitivityReport:
    """What :func:`analyse_sensitivity` measured; :meth:`to_dict` is the content of ``sensitivity.json``."""

    method: str
    metric: str
    higher_is_better: bool
    baseline: float
    flops: int
    source: str
    split: str
    groups: int  #: prunable groups of the model (``layers`` may hold fewer: ``--layers``)
    layers: list[LayerSensitivity]

    def to_dict(self) -> dict[str, Any]:
        head = {k: v for k, v in dataclasses.asdict(self).items() if k != "layers"}
        return {**head, "layers": {layer.name: {k: v for k, v in dataclasses.asdict(layer).items() if k != "name"}
                                   for layer in self.layers}}


def check_ratios(ratios: Sequence[float]) -> list[float]:
    """``ratios`` sorted and without repeats.

    Raises:
        ConfigError: none given, or one outside (0, 1).
    """
    if not ratios:
        raise ConfigError("no pruning ratios given; pass --ratios such as 0.1,0.3,0.5")
    bad = [r for r in ratios if not 0.0 < float(r) < 1.0]
    if bad:
        raise ConfigError(f"pruning ratio {bad[0]} is outside (0, 1): each is the share of a group's channels "
                          "removed; pass e.g. --ratios 0.1,0.3,0.5")
    return sorted({float(r) for r in ratios})


def metric_loss(baseline: float, value: float, higher_is_better: bool = True) -> float:
    """The relative loss of ``value`` against ``baseline`` (positive: worse); absolute when the baseline is 0."""
    drop = (baseline - value) if higher_is_better else (value - baseline)
    return drop / abs(baseline) if baseline else drop


def analyse_sensitivity(source: str | Path, *, data_root: str | None = None, split: str = "val",
                        method: str = "l1", ratios: Sequence[float] = DEFAULT_RATIOS, layers: int | None = None,
                        batch_size: int | None = None, device: str = "cpu",
                        progress: bool = True) -> SensitivityReport:
    """Prune each group of a run's model alone at each ratio and score it on ``split`` without fine-tuning.

    Args:
        source: a run directory (its ``best/``), ``best/``, ``last/`` or a model directory.
        data_root: the dataset; default: the one the run was trained on.
        split: the split scored.
        method: the channel importance, ``l1`` or ``fpgm``.
        ratios: shares of a group's channels to remove, each in (0, 1).
        layers: analyse only this many groups, those with the most FLOPs.
        batch_size: samples per evaluation batch (default: the run's).
        device: where the models run.
        progress: show a progress bar over groups x ratios.

    Raises:
        ConfigError: ``taylor`` or an unknown method, a ratio outside (0, 1), ``layers`` below 1.
    """
    from tqdm.auto import tqdm

    from oarkit.core.engine.evaluation import RunEvaluation, move_to

    if method not in ANALYSABLE:
        why = ("needs gradients from a training pass, which sensitivity analysis does not run; analyse with l1 or "
               "fpgm (prune=taylor can still use the table)") if method in METHODS else \
            f"is not a pruning method; use one of {list(ANALYSABLE)}"
        raise ConfigError(f"--method {method} {why}")
    ratios = check_ratios(ratios)
    if layers is not None and layers < 1:
        raise ConfigError(f"--layers {layers} must be at least 1: the number of groups to analyse")
    run = RunEvaluation.load(source, data_root=data_root, split=split, batch_size=batch_size, device=device)
    model = run.trained.model.eval()
    inputs = move_to(tuple(run.task.example_inputs()), run.device)
    template = run.task.build_metric()
    indicator, higher = template.main_indicator, bool(template.higher_is_better)
    baseline = float(run.score(model)[0][indicator])
    total = count_flops(model, inputs)
    prunable = find_prunable(model, inputs)
    per_module = module_flops(model, inputs)
    shares = {root: sum(per_module.get(n, 0) for n in members) / max(total, 1)
              for root, members in prunable.groups.items()}
    chosen = sorted(prunable.groups, key=lambda n: -shares[n])[:layers]
    results = []
    bar = tqdm(total=len(chosen) * len(ratios), desc="sensitivity", disable=not progress)
    for name in chosen:
        metric, loss, flops = [], [], []
        for ratio in ratios:
            bar.set_postfix_str(f"{name} @ {ratio:g}")
            candidate = prune_channels(copy.deepcopy(model), inputs, method, 0.0, prunable.kept, prunable.trace,
                                       ratios={name: ratio})
            value = float(run.score(candidate)[0][indicator])
            metric.append(value)
            loss.append(metric_loss(baseline, value, higher))
            flops.append(count_flops(candidate, inputs) / max(total, 1))
            bar.update()
        results.append(LayerSensitivity(name, _width(model.get_submodule(name)), shares[name], list(ratios), metric,
                                        loss, flops))
    bar.close()
    return SensitivityReport(method, indicator, higher, baseline, total, str(run.trained.folder), split,
                             len(prunable.groups), results)


def _width(layer: nn.Module) -> int:
    return int(getattr(layer, "out_channels", None) or getattr(layer, "out_features", 0))


def write_sensitivity(report: SensitivityReport, out: str | Path) -> dict[str, Path]:
    """Write ``sensitivity.json``, ``sensitivity.csv`` (a row per layer: the metric and the loss at each ratio)
    and ``sensitivity.png`` into ``out``; returns their paths by kind."""
    from oarkit.core.engine.checkpoint import atomic_write_text

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "sensitivity.json", "csv": out / "sensitivity.csv", "png": out / "sensitivity.png"}
    atomic_write_text(paths["json"], json.dumps(report.to_dict(), indent=2) + "\n")
    ratios = report.layers[0].ratios if report.layers else []
    with open(paths["csv"], "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["layer", "channels", "flops_share", *(f"{report.metric}@{r:g}" for r in ratios),
                         *(f"loss@{r:g}" for r in ratios)])
        for layer in report.layers:
            writer.writerow([layer.name, layer.channels, f"{layer.flops_share:.6f}",
                             *(f"{v:.6g}" for v in layer.metric), *(f"{v:.6g}" for v in layer.loss)])
    plot_sensitivity(report, paths["png"])
    return paths


def plot_sensitivity(report: SensitivityReport, path: str | Path) -> Path:
    """The metric against the ratio, one line per layer, for the :data:`PLOTTED` most sensitive layers (the
    largest loss at the largest ratio); the unpruned metric dashed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    shown = sorted(report.layers, key=lambda layer: -max(layer.loss, default=0.0))[:PLOTTED]
    fig = Figure(figsize=(10, 5.5), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)  # no pyplot: no global backend switch, no display
    ax = fig.subplots()
    for layer in shown:
        ax.plot([0.0, *layer.ratios], [report.baseline, *layer.metric], marker="o", ms=3, lw=1.4,
                label=f"{layer.name} ({100 * layer.flops_share:.1f}% FLOPs)")
    ax.axhline(report.baseline, ls="--", lw=1, color="black", label=f"unpruned {report.baseline:.4g}")
    ax.set(xlabel="share of the group's channels removed", ylabel=report.metric)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    which = f"the {len(shown)} most sensitive of {len(report.layers)} layers" if len(shown) < len(report.layers) \
        else f"{len(shown)} layers"
    ax.set_title(f"{report.metric} with one group pruned ({report.method}, no fine-tuning): {which}", fontsize=10)
    fig.savefig(path)
    return Path(path)
