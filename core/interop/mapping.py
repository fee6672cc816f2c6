"""Paddle state dicts onto torch modules: the declared mapping every ported family uses.

A family declares, beside its model, how Paddle's names and layouts become its own::

    PADDLE_MAPPING = PaddleMapping(
        renames=[(r"^conv1\\.conv\\.", "conv_stem."), (r"^fc\\.", "classifier.")],
        zeros=(r"^conv_head\\.bias$",),                   # a bias Paddle's layer does not have
        transforms=[(r"^classifier\\.weight$", lambda w: w * 0.8)],
    )

and :func:`apply_mapping` turns a Paddle state dict into the target module's, in this order:

0. ``bind(model)``: a family whose layout depends on how the module was built (a head's prefix, a pooler that a
   token classifier lacks) gives the mapping of that module;
1. ``hook(state)``: the family's own rewrite on Paddle's names (re-parameterized branches, fused tensors);
2. ``drop``: Paddle tensors the port leaves out (training-only branches);
3. BatchNorm statistics ``*._mean`` / ``*._variance`` become ``*.running_mean`` / ``*.running_var``;
4. ``renames``, each ``(regex, replacement)`` applied in turn with :func:`re.sub` (a replacement may be a
   function of the match), or a callable ``name -> new name`` (``None`` drops the tensor);
5. Linear weights, stored ``[in, out]`` by Paddle, are transposed to ``[out, in]`` for every ``nn.Linear`` of
   the target (found by module type, so a square layer is transposed too);
6. ``transforms`` rewrite values of target names (a folded dropout scale);
7. target tensors matching ``zeros`` that Paddle does not have are zero-filled.

Then every tensor is checked: one error lists each target tensor left without a value, each Paddle tensor
left over, and each shape that disagrees, with the Paddle name and shape beside the expected one. Two Paddle names
that map onto one target are aliases when they hold equal tensors (same shape, dtype and values: Paddle's ``nn.LSTM``
saves each weight as ``lstm.0.cell_fw.weight_ih`` and ``lstm.weight_ih_l0``), and one of them is used; two that
differ are an inconsistent checkpoint and are listed in that error.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.core.errors import WeightsError
from oarkit.core.hub import in_head
from oarkit.core.interop.inference_model import bf16_to_float32

Rename = tuple[str, str | Callable[[re.Match[str]], str]] | Callable[[str], str | None]
StateHook = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]

_BN_STATS = ((re.compile(r"\._mean$"), ".running_mean"), (re.compile(r"\._variance$"), ".running_var"))


@functools.cache
def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


# Counters torch keeps and Paddle has no notion of; they keep the target's value.
_TORCH_ONLY = re.compile(r"(^|\.)num_batches_tracked$")


@dataclass(frozen=True)
class PaddleMapping:
    """How a Paddle checkpoint of one family maps onto its oarkit module (see the module docstring).

    Attributes:
        renames: ``(regex, replacement)`` pairs or ``name -> name | None`` callables, applied in order.
        drop: regexes of Paddle names to leave out.
        zeros: regexes of target names that Paddle's layers lack and that are zero there (a bias).
        transforms: ``(regex, function)`` pairs rewriting the values of matching target names.
        hook: the family's own rewrite of the Paddle state dict, run first.
        transpose_linear: transpose the weights of the target's ``nn.Linear`` layers.
        source: where Paddle's layer names come from (``ppcls...PPLCNet_x1_0``), for error messages and docs.
        bind: ``module -> PaddleMapping``: the mapping of the module actually built (step 0 above).
        model_kwargs: ``PaddleNLP config -> registry keyword arguments`` (depth, widths, epsilons, head,
            ``num_classes``), so that a converted model is built with the checkpoint's own architecture.
        source_meta: ``(source path, PaddleNLP config) -> meta.json entries`` read beside the weights (task id,
            labels, tokenizer); when set, it replaces the kit's registry view of the model.
    """

    renames: Sequence[Rename] = ()
    drop: Sequence[str] = ()
    zeros: Sequence[str] = ()
    transforms: Sequence[tuple[str, Callable[[np.ndarray], np.ndarray]]] = ()
    hook: StateHook | None = None
    transpose_linear: bool = True
    source: str = ""
    bind: Callable[[nn.Module], PaddleMapping] | None = None
    model_kwargs: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    source_meta: Callable[[Path, dict[str, Any]], dict[str, Any]] | None = None

    def rename(self, name: str) -> str | None:
        """The target name of a Paddle name (``None``: dropped)."""
        if any(_re(p).search(name) for p in self.drop):
            return None
        for pattern, suffix in _BN_STATS:
            name = pattern.sub(suffix, name)
        for rule in self.renames:
            if callable(rule):
                name = rule(name)
                if name is None:
                    return None
            else:
                pattern, replacement = rule
                name = _re(pattern).sub(replacement, name)
        return name


def linear_weights(module: nn.Module) -> set[str]:
    """State-dict names of the weights of every ``nn.Linear`` in ``module``."""
    return {f"{prefix}.weight" if prefix else "weight" for prefix, m in module.named_modules()
            if isinstance(m, nn.Linear)}


def _shape(a: np.ndarray | torch.Tensor) -> list[int]:
    return list(a.shape)


def _same_tensor(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two Paddle tensors are one tensor under two names: same shape, dtype and values (NaN equal to NaN)."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _difference(a: np.ndarray, b: np.ndarray) -> str:
    """How two tensors under one target differ, for the error message."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"{a.dtype} {_shape(a)} vs {b.dtype} {_shape(b)}"
    if a.dtype.kind in "fiu":
        return f"{a.dtype} {_shape(a)}, max |difference| {np.abs(a.astype(np.float64) - b).max():.3g}"
    return f"{a.dtype} {_shape(a)}, values differ"


def apply_mapping(state: Mapping[str, np.ndarray], model: nn.Module, mapping: PaddleMapping, *,
                  head: Sequence[str] = (), reset_head: bool = False,
                  source: str = "Paddle checkpoint") -> dict[str, torch.Tensor]:
    """Convert a Paddle state dict into ``model``'s state dict (see the module docstring for the steps).

    Args:
        state: Paddle tensors by structured name.
        model: the target module; its state dict gives the names, shapes and dtypes expected.
        mapping: the family's declared mapping.
        head: module prefixes of the classification head (the card's ``classifier``).
        reset_head: head tensors whose shape differs from the checkpoint's (another number of classes) keep
            their fresh initialisation instead of being an error.
        source: names the checkpoint in error messages.

    Returns:
        A complete state dict for ``model``, less the head tensors left at their initialisation.

    Raises:
        WeightsError: tensors left unmapped, missing or mis-shaped; every one is listed.
    """
    target = model.state_dict()
    if mapping.bind is not None:
        mapping = mapping.bind(model)
    state = dict(state)
    if mapping.hook is not None:
        state = mapping.hook(state)
    linear = linear_weights(model) if mapping.transpose_linear else set()

    converted: dict[str, np.ndarray] = {}
    origin: dict[str, str] = {}
    stored: dict[str, np.ndarray] = {}  # each target's Paddle value as read, to compare aliases with
    unexpected: list[str] = []
    duplicates: list[str] = []
    for paddle_name, value in state.items():
        name = mapping.rename(paddle_name)
        if name is None:
            continue
        if name not in target:
            unexpected.append(f"{paddle_name} {_shape(value)} (became {name!r})" if name != paddle_name
                              else f"{paddle_name} {_shape(value)}")
            continue
        array = np.asarray(value)
        if name in converted:
            if _same_tensor(array, stored[name]):
                continue  # an alias (Paddle's nn.LSTM keeps each weight under two names): one copy is enough
            duplicates.append(f"{paddle_name} and {origin[name]} both map to {name} but hold different values "
                              f"({_difference(array, stored[name])}): the checkpoint is inconsistent; "
                              "re-save it from the Paddle model, or drop one of the two names")
            continue
        stored[name] = array
        if array.dtype == np.uint16 and target[name].is_floating_point():
            array = bf16_to_float32(array)  # paddle.save writes bfloat16 tensors as their raw 16 bits
        if name in linear and array.ndim == 2:
            array = array.T
        converted[name], origin[name] = array, paddle_name

    for pattern, fn in mapping.transforms:
        for name in [k for k in converted if _re(pattern).search(k)]:
            converted[name] = np.asarray(fn(converted[name]))
    for name, tensor in target.items():
        if name not in converted and any(_re(p).search(name) for p in mapping.zeros):
            converted[name], origin[name] = np.zeros(tuple(tensor.shape), dtype=np.float32), "(zeros)"

    if reset_head:
        converted = {k: v for k, v in converted.items()
                     if not (in_head(k, head) and tuple(v.shape) != tuple(target[k].shape))}
    mis_shaped = [f"{origin[k]} {_shape(v)} -> {k}: expected {_shape(target[k])}" for k, v in converted.items()
                  if tuple(v.shape) != tuple(target[k].shape)]
    missing = [f"{k} {_shape(v)}" for k, v in target.items()
               if k not in converted and not _TORCH_ONLY.search(k) and not (reset_head and in_head(k, head))]
    if unexpected or missing or mis_shaped or duplicates:
        parts = [f"{label} ({len(items)}):\n    " + "\n    ".join(items[:20]) + ("\n    ..." if len(items) > 20 else "")
                 for label, items in (("shape mismatch (Paddle name and shape -> target)", mis_shaped),
                                      ("target tensors without a Paddle value", missing),
                                      ("Paddle tensors left unmapped", unexpected),
                                      ("several Paddle tensors for one target", duplicates)) if items]
        where = f" (Paddle names from {mapping.source})" if mapping.source else ""
        hint = ""
        if mis_shaped and all(in_head(m.split(" -> ", 1)[1].split(":", 1)[0], head) for m in mis_shaped):
            hint = "\n  only the head differs: give the checkpoint's number of classes (num_classes / --num-classes)"
        raise WeightsError(f"{source} does not map onto {type(model).__name__}{where}:\n  " + "\n  ".join(parts)
                           + hint)
    return {k: torch.from_numpy(np.ascontiguousarray(v)).to(target[k].dtype) for k, v in converted.items()}
