"""Getting a module ready for export: re-parameterized blocks fused, example inputs that keep axes dynamic."""

from __future__ import annotations

import copy
import inspect
import logging
from typing import Any

import torch
from torch import nn

from oarkit.core.engine.task import DeploySpec

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
    return DeploySpec(module=module, example_inputs=spec.example_inputs, input_names=list(spec.input_names),
                      output_names=list(spec.output_names), dynamic_axes=dict(spec.dynamic_axes),
                      preprocessing=dict(spec.preprocessing), postprocessing=dict(spec.postprocessing),
                      labels=list(spec.labels))


def export_inputs(spec: DeploySpec) -> tuple[torch.Tensor, ...]:
    """The spec's example inputs with every dynamic axis of size one repeated to two.

    ``torch.export`` specialises an axis of size 0 or 1 into a constant, which would fix the batch at one.
    """
    out = []
    for name, x in zip(spec.input_names, spec.example_inputs):
        for axis in spec.dynamic_axes.get(name, {}):
            if x.shape[int(axis)] == 1:
                repeats = [1] * x.ndim
                repeats[int(axis)] = 2
                x = x.repeat(*repeats)
        out.append(x)
    return tuple(out)


def dynamic_shapes(spec: DeploySpec, max_batch: int | None = None) -> tuple[dict[int, Any], ...]:
    """``torch.export`` dynamic shapes from a spec's ``dynamic_axes``, positionally (one dict per input).

    Args:
        spec: the deploy spec.
        max_batch: an upper bound for every dynamic axis (ExecuTorch plans memory for it).
    """
    dims: dict[str, Any] = {}
    shapes = []
    for name in spec.input_names:
        axes = {}
        for axis, label in spec.dynamic_axes.get(name, {}).items():
            if label not in dims:
                dims[label] = torch.export.Dim(label, min=1, max=max_batch) if max_batch else torch.export.Dim(
                    label, min=1)
            axes[int(axis)] = dims[label]
        shapes.append(axes)
    return tuple(shapes)


def random_like(inputs: tuple[torch.Tensor, ...], *, seed: int, batch: int | None = None,
                dynamic: dict[int, dict[int, str]] | None = None) -> tuple[torch.Tensor, ...]:
    """Fresh inputs shaped like ``inputs``: standard normal for float inputs, and for integer inputs (token
    ids, masks, types) uniform integers within the range the template holds, so ids stay inside the vocabulary.

    Args:
        inputs: the templates.
        seed: the generator seed (verification uses seeds the export never saw).
        batch: a size for every dynamic axis (``dynamic`` maps input position to its dynamic axes).
        dynamic: dynamic axes per input position.
    """
    g = torch.Generator().manual_seed(seed)
    out = []
    for i, x in enumerate(inputs):
        shape = list(x.shape)
        for axis in (dynamic or {}).get(i, {}):
            if batch is not None:
                shape[int(axis)] = batch
        if x.is_floating_point():
            out.append(torch.randn(shape, generator=g, dtype=x.dtype))
        elif x.dtype == torch.bool:
            out.append(torch.randint(0, 2, shape, generator=g).bool())
        else:
            low, high = (int(x.min()), int(x.max())) if x.numel() else (0, 0)
            out.append(torch.randint(low, high + 1, shape, generator=g, dtype=x.dtype))
    return tuple(out)
