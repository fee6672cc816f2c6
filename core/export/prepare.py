"""Getting a module ready for export and verification: re-parameterized blocks fused, example inputs that keep
their axes dynamic, ``torch.export`` dims and random inputs that follow the declared ranges and multiples."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import logging
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.deploy_spec import DeploySpec, Dim

logger = logging.getLogger(__name__)


def _no_arg_method(module: nn.Module, name: str) -> bool:
    """Whether ``module.<name>`` is a method callable without arguments (a sub-module or a method with
    arguments of that name, such as PaddleSeg's ``fuse`` layers, is not a re-parameterization hook)."""
    fn = getattr(module, name, None)
    if not inspect.ismethod(fn):
        return False
    try:
        inspect.signature(fn).bind()
    except TypeError:
        return False
    return True


def reparameterize(model: nn.Module) -> int:
    """Fuse re-parameterizable blocks in place, as for inference (RepVGG / MobileOne / PP-LCNetV2 branches).

    Follows timm's convention: a child with ``fuse()`` is replaced by what it returns, one with
    ``reparameterize()`` or ``switch_to_deploy()`` converts itself.

    Returns:
        How many blocks were fused.
    """
    count = 0
    for name, child in list(model.named_children()):
        if _no_arg_method(child, "fuse"):
            setattr(model, name, child.fuse())
            count += 1
        elif _no_arg_method(child, "reparameterize"):
            child.reparameterize()
            count += 1
        elif _no_arg_method(child, "switch_to_deploy"):
            child.switch_to_deploy()
            count += 1
        count += reparameterize(getattr(model, name))
    return count


def deploy_copy(spec: DeploySpec) -> DeploySpec:
    """A copy of ``spec`` whose module is a fused, eval-mode deep copy (the original stays as it is)."""
    module = copy.deepcopy(spec.module)
    module.eval()
    fused = reparameterize(module)
    if fused:
        logger.info("fused %d re-parameterizable blocks for export", fused)
    return dataclasses.replace(spec, module=module, input_names=list(spec.input_names),
                               output_names=list(spec.output_names), preprocessing=dict(spec.preprocessing),
                               postprocessing=dict(spec.postprocessing), labels=list(spec.labels))


def _traceable_size(dim: Dim, size: int) -> int:
    """``size``, or the smallest admitted size above it that ``torch.export`` keeps symbolic.

    ``torch.export`` specialises a symbol whose example value is 0 or 1 into a constant: a batch of one, or a
    height of 32 declared as a multiple of 32 (the symbol is ``height / 32``).
    """
    if size // dim.multiple >= 2:
        return size
    target = max(2 * dim.multiple, dim.lowest)
    if dim.highest is not None and target > dim.highest:
        return size  # the range holds a single traceable value at most: leave the example as it is
    return target


def _resize_axis(x: torch.Tensor, axis: int, size: int) -> torch.Tensor:
    """``x`` tiled along ``axis`` and cut to ``size`` (any content will do for tracing)."""
    repeats = [1] * x.ndim
    repeats[axis] = -(-size // x.shape[axis])
    return x.repeat(*repeats).narrow(axis, 0, size)


def traceable_inputs(spec: DeploySpec) -> tuple[torch.Tensor, ...]:
    """The spec's example inputs, with every dynamic axis grown where ``torch.export`` would specialise it.

    Axes that share a name grow together, so inputs that must agree (ids and mask) still do.
    """
    specs = spec.input_specs()
    sizes: dict[str, int] = {}
    for input_spec, x in zip(specs, spec.example_inputs):
        for axis, dim in input_spec.dynamic().items():
            sizes.setdefault(dim.name, _traceable_size(dim, int(x.shape[axis])))
    out = []
    for input_spec, x in zip(specs, spec.example_inputs):
        for axis, dim in input_spec.dynamic().items():
            if x.shape[axis] != sizes[dim.name]:
                x = _resize_axis(x, axis, sizes[dim.name])
        out.append(x)
    return tuple(out)


def _torch_dim(dim: Dim, bound: int | None) -> Any:
    """The ``torch.export`` dim of ``dim`` (a multiple of ``m`` is ``m`` times a symbol), capped at ``bound``."""
    high = dim.highest
    if bound is not None:
        high = bound if high is None else min(high, bound)
    if dim.multiple == 1:
        return torch.export.Dim(dim.name, min=dim.lowest, max=high) if high is not None else torch.export.Dim(
            dim.name, min=dim.lowest)
    low = dim.lowest // dim.multiple
    base_name = f"{dim.name}_div{dim.multiple}"
    base = torch.export.Dim(base_name, min=low, max=high // dim.multiple) if high is not None else torch.export.Dim(
        base_name, min=low)
    return dim.multiple * base


def dynamic_shapes(spec: DeploySpec, max_batch: int | None = None) -> tuple[dict[int, Any], ...]:
    """``torch.export`` dynamic shapes of a spec's inputs, positionally (one dict per input).

    Each declared :class:`~oarkit.core.engine.deploy_spec.Dim` becomes a ``torch.export`` dim with its range; a
    multiple of ``m`` becomes ``m`` times a symbol, so the traced graph may rely on the divisibility.

    Args:
        spec: the deploy spec.
        max_batch: an upper bound for the batch axis (the first axis) of every input (ExecuTorch plans memory
            for it); other axes keep their declared ranges.
    """
    dims: dict[str, Any] = {}
    shapes = []
    for input_spec in spec.input_specs():
        axes = {}
        for axis, dim in input_spec.dynamic().items():
            if dim.name not in dims:
                dims[dim.name] = _torch_dim(dim, max_batch if axis == 0 else None)
            axes[axis] = dims[dim.name]
        shapes.append(axes)
    return tuple(shapes)


def verification_sizes(spec: DeploySpec, traced: tuple[torch.Tensor, ...], *, seed: int, smallest: bool = False
                       ) -> dict[str, int]:
    """A size for every dynamic axis, drawn from its declared range and multiple.

    ``smallest``: every axis at its smallest admitted size (a batch of one, the smallest image). Otherwise each
    axis is drawn uniformly among its admitted sizes up to twice the traced size (so a verification costs a few
    traced passes, however large the declared range), avoiding the traced size itself when there is a choice.
    """
    g = torch.Generator().manual_seed(seed)
    sizes: dict[str, int] = {}
    for input_spec, x in zip(spec.input_specs(), traced):
        for axis, dim in input_spec.dynamic().items():
            if dim.name in sizes:
                continue
            traced_size = int(x.shape[axis])
            choices = dim.sizes(max(2 * traced_size, dim.lowest))
            if not smallest:
                choices = [c for c in choices if c != traced_size] or choices
            sizes[dim.name] = choices[0] if smallest else choices[int(torch.randint(len(choices), (1,), generator=g))]
    return sizes


def batch_one_sizes(spec: DeploySpec, traced: tuple[torch.Tensor, ...]) -> dict[str, int]:
    """The traced sizes with the batch axes (first axes) at their smallest: what a batch-1 latency runs on."""
    sizes: dict[str, int] = {}
    for input_spec, x in zip(spec.input_specs(), traced):
        for axis, dim in input_spec.dynamic().items():
            sizes.setdefault(dim.name, dim.lowest if axis == 0 else int(x.shape[axis]))
    return sizes


def random_inputs(spec: DeploySpec, sizes: dict[str, int], *, seed: int) -> tuple[torch.Tensor, ...]:
    """Fresh inputs of the spec's shapes with the dynamic axes at ``sizes``, values as each input declares.

    Float inputs are standard normal (or uniform in ``[low, high)``); integer inputs (token ids, masks, types)
    are uniform integers in ``[low, high)``, so ids stay inside the vocabulary.
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    for input_spec in spec.input_specs():
        shape = [sizes[d.name] if isinstance(d, Dim) else int(d) for d in input_spec.dims]
        dtype = getattr(torch, str(input_spec.dtype))
        low, high = input_spec.low, input_spec.high
        if dtype == torch.bool:
            out.append(torch.randint(0, 2, shape, generator=g).bool())
        elif dtype.is_floating_point:
            x = torch.randn(shape, generator=g) if low is None or high is None else \
                torch.rand(shape, generator=g) * (high - low) + low
            out.append(x.to(dtype))
        else:
            low, high = int(low or 0), int(high if high is not None else (low or 0) + 1)
            out.append(torch.randint(low, max(high, low + 1), shape, generator=g, dtype=dtype))
    return tuple(out)


def shape_problems(spec: DeploySpec, inputs: tuple[torch.Tensor, ...]) -> list[str]:
    """Why ``inputs`` do not fit the spec's declared shapes (an empty list when they do)."""
    problems = []
    sizes: dict[str, int] = {}
    for input_spec, x in zip(spec.input_specs(), inputs):
        if x.ndim != len(input_spec.dims):
            problems.append(f"{input_spec.name} has {x.ndim} axes, the graph takes {len(input_spec.dims)}")
            continue
        for axis, (dim, size) in enumerate(zip(input_spec.dims, x.shape)):
            size = int(size)
            if isinstance(dim, Dim):
                if not dim.admits(size):
                    problems.append(f"{input_spec.name} axis {axis} is {size}, outside {dim.describe()}")
                elif sizes.setdefault(dim.name, size) != size:
                    problems.append(f"{input_spec.name} axis {axis} ({dim.name}) is {size}, another input's is "
                                    f"{sizes[dim.name]}")
            elif size != dim:
                problems.append(f"{input_spec.name} axis {axis} is {size}, the graph takes {dim}")
    return problems
