"""The forward calls of a model during one training step, with the outputs of named submodules in each.

Distillation matches what the student and the teacher compute on the same inputs. The kit's ``training_step``
calls the student itself (with its targets, under its own loss), so the wrappers watch instead of calling: a
forward hook on the model records each call's inputs and output, and hooks on the layers the kit names
(:meth:`~oarkit.core.engine.task.Task.distill_layers`, the feature pairs of ``distill=feature``) record what those
layers returned during that call. A detector's training forward returns losses, so its head's logits come from
such layers, not from the model's output.
"""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from oarkit.core.errors import ConfigError


@dataclass
class Call:
    """One forward call: its inputs, its output and the last output of each watched layer during it."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    output: Any = None
    layers: dict[str, Any] = field(default_factory=dict)


def submodule(model: nn.Module, name: str, what: str) -> nn.Module:
    """``model``'s submodule ``name``, or a :class:`ConfigError` naming the closest names."""
    modules = dict(model.named_modules())
    if name not in modules:
        close = difflib.get_close_matches(name, list(modules), n=4, cutoff=0.5)
        hint = f"; closest: {close}" if close else f"; e.g. {list(modules)[1:5]}"
        raise ConfigError(f"{what}: {type(model).__name__} has no layer {name!r}{hint} (list them with "
                          "`print(dict(model.named_modules()).keys())`)")
    return modules[name]


@contextlib.contextmanager
def record_calls(model: nn.Module, layers: Sequence[str] = (), what: str = "distill") -> Iterator[list[Call]]:
    """Record every forward call of ``model`` inside the block, with the outputs of ``layers`` (module names)
    during each; the list fills as the block runs.

    Raises:
        ConfigError: a layer name the model does not have.
    """
    calls: list[Call] = []
    current: list[Call] = []

    def before(_m: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        current.append(Call(args, kwargs))

    def after(_m: nn.Module, _args: Any, _kwargs: Any, out: Any) -> None:
        call = current.pop()
        call.output = out
        calls.append(call)

    def layer_hook(name: str) -> Any:
        def hook(_m: nn.Module, _args: Any, out: Any) -> None:
            if current:
                current[-1].layers[name] = out
        return hook

    handles = [model.register_forward_pre_hook(before, with_kwargs=True),
               model.register_forward_hook(after, with_kwargs=True)]
    try:
        handles += [submodule(model, name, what).register_forward_hook(layer_hook(name)) for name in layers]
        yield calls
    finally:
        for handle in handles:
            handle.remove()


def call_outputs(call: Call, layers: Sequence[str]) -> Any:
    """What the kit's ``distill_logits`` takes from a call: the model's output, or its named layers' outputs."""
    if not layers:
        return call.output
    missing = [name for name in layers if name not in call.layers]
    if missing:
        raise ConfigError(f"distill: the layers {missing} did not run in the forward call (Task.distill_layers "
                          "names layers every forward calls)")
    return {name: call.layers[name] for name in layers}
