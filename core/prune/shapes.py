"""The pruned architecture as data: which modules changed which sizes, and the shapes of their tensors.

:func:`pruned_shapes` compares a model before and after pruning; :func:`apply_pruned_shapes` gives a freshly
built model (``create_model`` with the run's own arguments) those sizes, so that the pruned checkpoint loads
into it with nothing but ``load_state_dict``. The record is plain JSON (module paths, attribute names and
integers): reading it never runs code, and the pruning library is not needed to load a pruned run.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from oarkit.core.errors import WeightsError

#: attribute types a pruned size may have (channel counts, groups, normalized shapes, head counts)
_SIZE_TYPES = (int, tuple)


def _sizes(module: nn.Module) -> dict[str, Any]:
    return {k: v for k, v in vars(module).items() if not k.startswith("_") and type(v) in _SIZE_TYPES
            and (type(v) is int or all(type(i) is int for i in v))}


def _tensors(module: nn.Module) -> dict[str, list[int]]:
    named = {**module._parameters, **module._buffers}
    return {k: list(t.shape) for k, t in named.items() if t is not None}


def snapshot(model: nn.Module) -> dict[str, tuple[dict[str, Any], dict[str, list[int]]]]:
    """Every module's size attributes and tensor shapes, by module path."""
    return {name: (_sizes(m), _tensors(m)) for name, m in model.named_modules()}


def pruned_shapes(before: dict[str, tuple[dict[str, Any], dict[str, list[int]]]],
                  model: nn.Module) -> dict[str, dict[str, Any]]:
    """What changed between ``before`` (a :func:`snapshot`) and ``model``: per module path, the size attributes
    and the tensor shapes that differ."""
    changes: dict[str, dict[str, Any]] = {}
    for name, module in model.named_modules():
        sizes, tensors = before.get(name, ({}, {}))
        now_sizes, now_tensors = _sizes(module), _tensors(module)
        attributes = {k: list(v) if isinstance(v, tuple) else v for k, v in now_sizes.items() if sizes.get(k) != v}
        shapes = {k: v for k, v in now_tensors.items() if tensors.get(k) != v}
        if attributes or shapes:
            changes[name] = {"attributes": attributes, "tensors": shapes}
    return changes


def apply_pruned_shapes(model: nn.Module, changes: dict[str, dict[str, Any]], *, source: str = "meta.json") -> None:
    """Resize ``model``'s modules as ``changes`` (from :func:`pruned_shapes`) records, in place; the values are
    left uninitialised for ``load_state_dict`` to fill.

    Raises:
        WeightsError: the record names a module, attribute or tensor this model does not have (a record of
            another architecture), or a size that is not a non-negative integer.
    """
    for path, change in changes.items():
        try:
            module = model.get_submodule(path)
        except AttributeError as err:
            raise WeightsError(f"{source} records a pruned module {path!r} that {type(model).__name__} does not "
                               "have: the record belongs to another architecture") from err
        for key, value in (change.get("attributes") or {}).items():
            old = vars(module).get(key)
            if type(old) not in _SIZE_TYPES or not _is_size(value):
                raise WeightsError(f"{source}: pruned size {path}.{key}={value!r} does not fit the model's "
                                   f"{type(old).__name__} attribute")
            setattr(module, key, tuple(value) if isinstance(old, tuple) else int(value))
        for key, shape in (change.get("tensors") or {}).items():
            if not _is_size(shape) or not isinstance(shape, list):
                raise WeightsError(f"{source}: pruned shape {path}.{key}={shape!r} is not a list of sizes")
            if module._parameters.get(key) is not None:
                old = module._parameters[key]
                module._parameters[key] = nn.Parameter(torch.empty(shape, dtype=old.dtype),
                                                       requires_grad=old.requires_grad)
            elif module._buffers.get(key) is not None:
                module._buffers[key] = torch.empty(shape, dtype=module._buffers[key].dtype)
            else:
                raise WeightsError(f"{source} records a pruned tensor {path}.{key} that the model does not have")


def _is_size(value: Any) -> bool:
    if type(value) is int:
        return value >= 0
    return isinstance(value, (list, tuple)) and all(type(v) is int and v >= 0 for v in value)
