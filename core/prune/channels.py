"""Channel pruning to a FLOPs target on Torch-Pruning's dependency graph (DepGraph, Fang et al. 2023).

Torch-Pruning traces the model once and groups every layer whose channels must shrink together (through
residual additions, concatenations, depthwise convolutions, normalisations and attention heads); a group's
importance is the norm of its weights (``l1``), their distance to the geometric median (``fpgm``, He et al.
2019) or the first-order Taylor estimate of the loss change (``taylor``, Molchanov et al. 2019). Every group
loses the same fraction of its channels; :func:`prune_to_flops` searches that fraction so that the pruned
model's FLOPs are the target fraction of the original's. Given a sensitivity table, each group loses its own
fraction instead (:mod:`oarkit.core.prune.layerwise`); :func:`find_prunable` names the groups by root layer.

What the model must keep is found by probing, not from names: a group whose loss of one channel changes the
model's output shapes or breaks its forward (a head's class count, box coordinates, a fixed reshape) keeps its
width, and so does a group that reaches an embedding table (the hidden width of a transformer: its heads and
feed-forward width are pruned instead).
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from oarkit.core.errors import ConfigError
from oarkit.core.prune.flops import count_flops

if TYPE_CHECKING:
    from oarkit.core.prune.layerwise import SensitivityTable

logger = logging.getLogger(__name__)

#: the importance criteria of ``prune=``
METHODS = ("l1", "fpgm", "taylor")

#: attention modules in the Hugging Face convention: head count, head width, and the projections per head
_HEAD_COUNT = ("num_attention_heads", "num_heads")
_PROJECTIONS = (("query", "key", "value"), ("query_proj", "key_proj", "value_proj"), ("q_proj", "k_proj", "v_proj"))


@dataclasses.dataclass
class PruneResult:
    """What :func:`prune_to_flops` did."""

    model: nn.Module
    ratio: float | None  #: the fraction of channels removed from every prunable group (``None``: layer-wise)
    flops_before: int
    flops_after: int
    trials: int
    ratios: dict[str, float] | None = None  #: layer-wise: each group's fraction, by root layer path
    threshold: float | None = None  #: layer-wise: the metric-loss threshold that gave them
    round_to: int | None = None  #: every pruned width is a multiple of it (``None``: not rounded)

    @property
    def flops_ratio(self) -> float:
        return self.flops_after / max(self.flops_before, 1)


def _importance(method: str) -> Any:
    import torch_pruning as tp

    if method == "l1":
        return tp.importance.MagnitudeImportance(p=1)
    if method == "fpgm":
        return tp.importance.FPGMImportance()
    if method == "taylor":
        return tp.importance.TaylorImportance()
    raise ConfigError(f"prune method {method!r} is not one of {list(METHODS)}")


_ROOTS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose2d, nn.Linear)


def _kept_layers(model: nn.Module, inputs: Sequence[torch.Tensor], trace: Callable[..., Any],
                 shapes: list[tuple[int, ...]]) -> list[nn.Module]:
    """Root layers of the groups that must keep their width.

    A group reaching an embedding table keeps its width by rule (a transformer's hidden size). Every other
    group is probed: one of its channels is removed from a copy of the model, which must still run and give
    outputs of the original shapes. That catches what no graph shows: a class count, box coordinates, or a
    reshape to a fixed number of channels (a DFL head's ``4 * (reg_max + 1)``). Attention projections are
    pruned by whole heads and not probed. ``trace`` and ``shapes``: the forward the graph is traced with
    (:func:`_tracer`) and the model's output shapes under it.
    """
    kept: list[str] = []
    passed: set[str] = set()
    while True:
        probe = copy.deepcopy(model)
        graph = _graph(probe, inputs, trace)
        names = {m: n for n, m in probe.named_modules()}
        ignored = [probe.get_submodule(n) for n in kept]
        passed |= {names[layer] for _, _, layers in _attention(probe) for layer in layers}  # pruned by whole heads
        broken = None
        for group in graph.get_all_groups(ignored_layers=ignored, root_module_types=_ROOTS):
            root = group[0][0].target.module
            name = names[root]
            if name in passed:
                continue
            embedding = any(isinstance(dep.target.module, nn.Embedding) for dep, _ in group)
            if embedding or len(group[0][1]) <= 1:
                kept.append(name)
                continue
            group.prune(idxs=[0])
            try:
                runs = _output_shapes(probe, inputs, trace) == shapes
            except Exception:  # noqa: BLE001 - a forward that fails is what the probe looks for
                runs = False
            if not runs:
                broken = name
                break
            passed.add(name)
        if broken is None:
            return [model.get_submodule(n) for n in kept]
        logger.debug("keeping the width of %s: pruning it changes or breaks the model's outputs", broken)
        kept.append(broken)


def _graph(model: nn.Module, inputs: Sequence[torch.Tensor], trace: Callable[..., Any]) -> Any:
    """Torch-Pruning's dependency graph of ``model``, traced with ``trace``."""
    import torch_pruning as tp

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Uu]nwrapped parameters.*")
        return tp.DependencyGraph().build_dependency(model, example_inputs=list(inputs), forward_fn=trace)


@dataclasses.dataclass
class Prunable:
    """What of a model can be pruned (:func:`find_prunable`)."""

    trace: Callable[[nn.Module, Sequence[torch.Tensor]], Any]  #: the forward the graph is traced with
    shapes: list[tuple[int, ...]]  #: the model's output shapes under it
    kept: list[str]  #: root layers of the groups that keep their width
    groups: dict[str, list[str]]  #: every other group: its root layer's path -> the paths of the layers in it


def find_prunable(model: nn.Module, inputs: Sequence[torch.Tensor]) -> Prunable:
    """The groups of ``model`` that may lose channels, named by their root layer (``backbone.blocks.3.pw.conv``),
    and those that keep their width (found by probing, see the module docstring)."""
    trace = _tracer(model, inputs)
    shapes = _output_shapes(model, inputs, trace)
    named = {m: n for n, m in model.named_modules()}
    kept = [named[m] for m in _kept_layers(model, inputs, trace, shapes)]
    ignored = [model.get_submodule(n) for n in kept]
    groups: dict[str, list[str]] = {}
    for group in _graph(model, inputs, trace).get_all_groups(ignored_layers=ignored, root_module_types=_ROOTS):
        layers = [named[dep.target.module] for dep, _ in group if dep.target.module in named]
        groups[named[group[0][0].target.module]] = list(dict.fromkeys(layers))
    return Prunable(trace, shapes, kept, groups)


def _attention(model: nn.Module) -> list[tuple[nn.Module, str, tuple[nn.Linear, ...]]]:
    found = []
    for module in model.modules():
        count = next((a for a in _HEAD_COUNT if type(getattr(module, a, None)) is int), None)
        if count is None:
            continue
        for names in _PROJECTIONS:
            layers = tuple(getattr(module, n, None) for n in names)
            if all(isinstance(layer, nn.Linear) for layer in layers):
                found.append((module, count, layers))
                break
    return found


def _head_ratio(ratio: float, heads: dict[nn.Module, int]) -> float:
    """The share of heads to remove: ``ratio``, short of removing every head of a layer (Torch-Pruning removes
    ``ceil(share * heads)`` of them)."""
    if not heads:
        return 0.0
    fewest = min(heads.values())
    return min(float(ratio), (fewest - 1) / fewest - 1e-6) if fewest > 1 else 0.0


def _fix_attention(attention: list[tuple[nn.Module, str, tuple[nn.Linear, ...]]], heads: dict[nn.Module, int]) -> None:
    for module, count, (query, *_) in attention:
        width = getattr(module, "attention_head_size", None) or getattr(module, "head_dim", None)
        if type(width) is int and width > 0:
            setattr(module, count, query.out_features // width)
        else:
            setattr(module, count, int(heads.get(query, getattr(module, count))))
        if type(getattr(module, "all_head_size", None)) is int:
            module.all_head_size = query.out_features


def prune_channels(model: nn.Module, inputs: Sequence[torch.Tensor], method: str, ratio: float,
                   kept: Sequence[str] | None = None, trace: Callable[..., Any] | None = None, *,
                   ratios: Mapping[str, float] | None = None, round_to: int | None = None) -> nn.Module:
    """Remove ``ratio`` of the channels of every prunable group of ``model``, in place (parameters that carry a
    ``.grad``, from one backward pass, feed the ``taylor`` criterion). ``kept``: paths of the root layers whose
    groups keep their width, and ``trace``: the forward to trace the graph with (both found when not given).
    ``ratios``: layer-wise instead, the share of channels each named group loses, by root layer path (as
    :attr:`Prunable.groups` names them); a group it does not name keeps its width and ``ratio`` is not used."""
    import torch_pruning as tp

    trace = _tracer(model, inputs) if trace is None else trace
    if kept is None:
        ignored = _kept_layers(model, inputs, trace, _output_shapes(model, inputs, trace))
    else:
        ignored = [model.get_submodule(n) for n in kept]
    attention = _attention(model)
    heads = {layer: getattr(module, count) for module, count, layers in attention for layer in layers}
    per_group: dict[nn.Module, float] | None = None
    per_head: dict[nn.Module, float] | None = None
    if ratios is not None:
        ratio = 0.0
        per_group = {model.get_submodule(n): float(r) for n, r in ratios.items() if r > 0}
        names = {m: n for n, m in model.named_modules()}
        per_head = {}
        for _, _, layers in attention:  # a layer's heads go as its projections' group ratio says
            share = max(float(ratios.get(names[layer], 0.0)) for layer in layers)
            per_head.update({layer: _head_ratio(share, heads) for layer in layers if share > 0})
    with warnings.catch_warnings():  # scalar parameters outside any layer (RepVGG's alpha) have nothing to prune
        warnings.filterwarnings("ignore", message=".*[Uu]nwrapped parameters.*")
        warnings.filterwarnings("ignore", message=".*last non-singleton dimension.*")
        pruner = tp.pruner.BasePruner(
            model, list(inputs), importance=_importance(method), pruning_ratio=float(ratio), ignored_layers=ignored,
            forward_fn=trace, pruning_ratio_dict=per_group, head_pruning_ratio_dict=per_head,
            num_heads=heads, prune_num_heads=bool(heads), prune_head_dims=not heads,
            head_pruning_ratio=_head_ratio(ratio, heads), round_to=round_to)
        pruner.step()
    _fix_attention(attention, pruner.num_heads)
    return model


def _forward_training(model: nn.Module, inputs: Sequence[torch.Tensor]) -> Any:
    """``model(*inputs)`` in training mode, so that branches only training runs (a DB head's threshold map) are
    in the graph; a batch of one is doubled (batch statistics need two samples) and the normalisation statistics
    are put back afterwards."""
    batch = [torch.cat([t, t]) if t.ndim and t.shape[0] == 1 else t for t in inputs]
    buffers = {k: v.detach().clone() for k, v in model.named_buffers()}
    training = model.training
    model.train()
    try:
        return model(*batch)
    finally:
        model.train(training)
        with torch.no_grad():
            for k, v in model.named_buffers():
                if k in buffers and v.shape == buffers[k].shape:
                    v.copy_(buffers[k])


def _forward_eval(model: nn.Module, inputs: Sequence[torch.Tensor]) -> Any:
    return model(*inputs)


def _tracer(model: nn.Module, inputs: Sequence[torch.Tensor]) -> Callable[[nn.Module, Sequence[torch.Tensor]], Any]:
    """The forward the graph is traced with: training mode where the model runs on inputs alone there, else eval
    mode (a detector in training mode wants its targets)."""
    try:
        with torch.no_grad():
            _forward_training(model, inputs)
    except Exception:  # noqa: BLE001 - any failure means: not without targets
        return _forward_eval
    return _forward_training


def _copy_with_gradients(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model)
    for (_, p), (_, q) in zip(model.named_parameters(), clone.named_parameters(), strict=True):
        q.grad = None if p.grad is None else p.grad.detach().clone()
    return clone


def _output_shapes(model: nn.Module, inputs: Sequence[torch.Tensor],
                   trace: Callable[[nn.Module, Sequence[torch.Tensor]], Any] = _forward_eval) -> list[tuple[int, ...]]:
    import torch_pruning as tp

    training = model.training
    model.eval()
    with torch.no_grad():
        out = model(*inputs)
        train_out = trace(model, inputs) if trace is _forward_training else None
    model.train(training)
    outputs = tp.utils.flatten_as_list([out] if train_out is None else [out, train_out])
    return [tuple(t.shape) for t in outputs if isinstance(t, torch.Tensor)]


def prune_to_flops(model: nn.Module, inputs: Sequence[torch.Tensor], method: str, target: float, *,
                   tolerance: float = 0.05, max_trials: int = 14,
                   progress: Callable[[float, float], None] | None = None,
                   sensitivity: SensitivityTable | None = None, round_to: int | None = None) -> PruneResult:
    """Prune a copy of ``model`` until its FLOPs on ``inputs`` are ``target`` times the original's, within
    ``tolerance`` (relative), by bisecting the fraction of channels each group loses, or, with a ``sensitivity``
    table, the metric-loss threshold that gives each group its own fraction (:mod:`oarkit.core.prune.layerwise`).

    ``round_to`` keeps each pruned width a multiple of it (CPU kernels run multiples of 8 much faster: a model
    pruned to odd widths can be slower than the original); where the target cannot be met so, the widths are
    left unrounded, with a warning.

    Raises:
        ConfigError: ``target`` outside (0, 1), or no fraction reaches the target within the tolerance (the
            model has too few prunable channels: name a smaller reduction).
    """
    if not 0.0 < float(target) < 1.0:
        raise ConfigError(f"prune.flops={target} must be in (0, 1): the fraction of the model's FLOPs to keep "
                          "(0.5 halves them)")
    if method not in METHODS:
        raise ConfigError(f"prune method {method!r} is not one of {list(METHODS)}")
    before = count_flops(model, inputs)
    prunable = find_prunable(model, inputs)
    trace, shapes, fixed = prunable.trace, prunable.shapes, prunable.kept
    if sensitivity is None:
        low, high = 0.0, 0.95
    else:
        _check_table(model, sensitivity, prunable)
        low, high, max_trials = 0.0, sensitivity.max_threshold, max(max_trials, 24)  # a flat start needs more steps
    best: tuple[float, float, nn.Module, dict[str, float] | None] | None = None  # (error, value, model, ratios)
    tried: list[tuple[float, float]] = []  # (value, kept share)
    trials = 0
    for trials in range(1, max_trials + 1):  # noqa: B007 - the count is reported
        value = (low + high) / 2
        ratios = None if sensitivity is None else sensitivity.ratios_at(value, prunable.groups)
        candidate = prune_channels(_copy_with_gradients(model), inputs, method, value, fixed, trace, ratios=ratios,
                                   round_to=round_to)
        kept = count_flops(candidate, inputs) / max(before, 1)
        tried.append((value, kept))
        if progress is not None:
            progress(value, kept)
        error = abs(kept / target - 1.0)
        if best is None or error < best[0]:
            best = (error, value, candidate, ratios)
        if error <= tolerance / 2:
            break
        low, high = (value, high) if kept > target else (low, value)
    assert best is not None
    if best[0] > tolerance and round_to and sensitivity is None:
        mixed = _mixed_ratios(model, inputs, method, target, tried, prunable, before, round_to, max_trials)
        if mixed is not None and mixed[0] < best[0]:
            best = mixed
    error, value, pruned, ratios = best
    if error > tolerance and round_to:
        logger.warning("prune.round_to=%d: no width rounded to a multiple of %d brings the model within %.0f%% of "
                       "prune.flops=%g; pruning to unrounded widths instead", round_to, round_to, 100 * tolerance,
                       target)
        return prune_to_flops(model, inputs, method, target, tolerance=tolerance, max_trials=max_trials,
                              progress=progress, sensitivity=sensitivity)
    if error > tolerance:
        kept_share = count_flops(pruned, inputs) / max(before, 1)
        if sensitivity is not None:
            raise ConfigError(f"the ratios of prune.sensitivity={sensitivity.path!r} cannot bring this model to "
                              f"prune.flops={target} of its FLOPs: the closest keeps {kept_share:.3f}; analyse "
                              "larger ratios or more layers (oarkit prune-sensitivity --ratios ... --layers ...), or "
                              "ask for a milder reduction")
        raise ConfigError(f"pruning cannot bring this model to prune.flops={target} of its FLOPs: the closest, "
                          f"{value:.3f} of every group's channels, keeps {kept_share:.3f}; too few of its channels "
                          "can be pruned, so ask for a milder reduction")
    if _output_shapes(pruned, inputs, trace) != shapes:
        raise ConfigError(f"pruning changed the model's output shapes ({shapes} -> "
                          f"{_output_shapes(pruned, inputs, trace)}); "
                          "this architecture has an output Torch-Pruning's graph does not see: report it")
    pruned.zero_grad(set_to_none=True)
    model.zero_grad(set_to_none=True)
    if sensitivity is None:  # one share for every group, or two (rounded widths, see _mixed_ratios)
        return PruneResult(pruned, value if ratios is None else None, before, count_flops(pruned, inputs), trials,
                           ratios=ratios, round_to=round_to)
    return PruneResult(pruned, None, before, count_flops(pruned, inputs), trials, ratios=ratios, threshold=value,
                       round_to=round_to)


def _mixed_ratios(model: nn.Module, inputs: Sequence[torch.Tensor], method: str, target: float,
                  tried: list[tuple[float, float]], prunable: Prunable, before: int, round_to: int,
                  max_trials: int) -> tuple[float, float, nn.Module, dict[str, float]] | None:
    """Rounded widths move in steps, and one share for every group can jump over the target (every 64-wide
    group loses its next 8 channels at once). Between the two shares around the target, give the larger to the
    first ``k`` groups and the smaller to the rest, and bisect ``k``: the best ``(error, k, model, ratios)``."""
    above = [v for v, kept in tried if kept > target]
    below = [v for v, kept in tried if kept < target]
    if not above or not below:
        return None
    mild, strong = max(above), min(below)
    groups = list(prunable.groups)
    low, high = 0, len(groups)
    best = None
    for _ in range(max_trials):
        if high - low < 1:
            break
        k = (low + high + 1) // 2
        ratios = {g: (strong if i < k else mild) for i, g in enumerate(groups)}
        candidate = prune_channels(_copy_with_gradients(model), inputs, method, 0.0, prunable.kept, prunable.trace,
                                   ratios=ratios, round_to=round_to)
        kept = count_flops(candidate, inputs) / max(before, 1)
        error = abs(kept / target - 1.0)
        if best is None or error < best[0]:
            best = (error, float(k), candidate, ratios)
        low, high = (k, high) if kept > target else (low, k - 1)
    return best


def _check_table(model: nn.Module, table: SensitivityTable, prunable: Prunable) -> None:
    """A table made for this architecture: its layers are modules of the model, most of them prunable groups."""
    modules = dict(model.named_modules())
    foreign = [n for n in table.curves if n not in modules]
    if foreign:
        raise ConfigError(f"prune.sensitivity={table.path!r} names layers this model does not have ({foreign[:3]}): "
                          "it was measured on another architecture; run oarkit prune-sensitivity on prune.checkpoint")
    unused = [n for n in table.curves if n not in prunable.groups]
    if unused:
        logger.info("prune.sensitivity: %d of its layers are not prunable groups here and are left out: %s",
                    len(unused), unused[:5])
