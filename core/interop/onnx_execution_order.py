"""Weights from an ONNX file with anonymous tensor names, mapped onto a port by execution order.

Some released models exist only as ONNX exported by Paddle2ONNX, with BatchNorm left unfused but every tensor
named after its position (``conv2d_12.w_0``, or constants): nothing says which layer of the port a tensor belongs
to. Both graphs compute the same layers in the same order, so the mapping is the order itself:

1. :func:`execution_order` runs the port once with forward hooks and records its convolutions, batch norms and
   linear layers in the order they execute (each module once, at its first call);
2. :func:`onnx_layers` lists the ONNX graph's ``Conv`` / ``BatchNormalization`` / ``Gemm`` nodes in graph order
   (Paddle2ONNX writes the program's operators in execution order) with their weights, whether initializers or
   ``Constant`` nodes;
3. :func:`map_execution_order` pairs them one to one, checking kind and every tensor's shape, and returns the
   port's state dict. A mismatch is an error naming both sides and the position, which is where the port's
   forward differs from the exported program (a branch run in another order, a missing layer).

Two layers of equal shapes run in another order than Paddle's would be swapped silently: a port mapped this way
keeps Paddle's operator order in its forward (and its parity with onnxruntime, tested, is the proof).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from oarkit.core.errors import WeightsError

#: module types recorded, and the ONNX operator each becomes
_KINDS: dict[type[nn.Module], str] = {nn.Conv2d: "Conv", nn.BatchNorm2d: "BatchNormalization", nn.Linear: "Gemm"}


@dataclass
class OnnxLayer:
    """One weighted ONNX node: its operator, node name and tensors under the PyTorch parameter names."""

    op_type: str
    name: str
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    epsilon: float | None = None

    def describe(self) -> str:
        shapes = ", ".join(f"{k} {list(v.shape)}" for k, v in self.tensors.items())
        return f"{self.op_type} {self.name!r} ({shapes})"


def execution_order(model: nn.Module, *inputs: Any, forward: Callable[..., Any] | None = None,
                    types: Sequence[type[nn.Module]] = tuple(_KINDS)) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of the model's convolutions, batch norms and linear layers in the order a forward pass
    runs them (each at its first call), on ``inputs``, in eval mode and without gradients.

    Args:
        model: the port.
        *inputs: its example inputs.
        forward: what to run instead of ``model(*inputs)`` (another method of the model, e.g. its raw outputs).
        types: the module types to record.
    """
    names = {m: n for n, m in model.named_modules()}
    order: list[tuple[str, nn.Module]] = []
    seen: set[int] = set()

    def hook(module: nn.Module, *_: Any) -> None:
        if id(module) not in seen:
            seen.add(id(module))
            order.append((names[module], module))

    handles = [m.register_forward_pre_hook(hook) for m in model.modules() if type(m) in tuple(types)]
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            (forward or model)(*inputs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return order


def _onnx_arrays(graph: Any) -> dict[str, np.ndarray]:
    from onnx import numpy_helper

    arrays = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant":
            for attr in node.attribute:
                if attr.name == "value":
                    arrays[node.output[0]] = numpy_helper.to_array(attr.t)
    return arrays


def onnx_layers(path: str | Path) -> list[OnnxLayer]:
    """The ``Conv``, ``BatchNormalization`` and ``Gemm`` nodes of an ONNX file in graph order, with their weights.

    Raises:
        WeightsError: a node's weight is computed rather than stored (a graph this mapping cannot read).
    """
    import onnx

    graph = onnx.load(str(path)).graph
    arrays = _onnx_arrays(graph)
    roles = {"Conv": ("", "weight", "bias"), "Gemm": ("", "weight", "bias"),
             "BatchNormalization": ("", "weight", "bias", "running_mean", "running_var")}
    layers = []
    for node in graph.node:
        if node.op_type not in roles:
            continue
        layer = OnnxLayer(node.op_type, node.name or node.output[0])
        for role, tensor in zip(roles[node.op_type], node.input):
            if not role or not tensor:  # the data input, or an absent optional bias
                continue
            if tensor not in arrays:
                raise WeightsError(f"{path}: the {role} of {node.op_type} node {layer.name!r} ({tensor}) is computed "
                                   "in the graph, not stored; this ONNX file cannot be mapped by execution order")
            layer.tensors[role] = arrays[tensor]
        if node.op_type == "BatchNormalization":
            layer.epsilon = next((a.f for a in node.attribute if a.name == "epsilon"), 1e-5)
        if node.op_type == "Gemm" and not any(a.name == "transB" and a.i for a in node.attribute):
            layer.tensors["weight"] = layer.tensors["weight"].T  # Paddle's [in, out] layout
        layers.append(layer)
    return layers


def map_execution_order(model: nn.Module, onnx_path: str | Path, *inputs: Any,
                        forward: Callable[..., Any] | None = None) -> dict[str, torch.Tensor]:
    """The state dict of ``model`` filled from an ONNX file by execution order (see the module docstring).

    Args:
        model: the port.
        onnx_path: the ONNX file.
        *inputs: example inputs that run every layer once (the ONNX model's input shape).
        forward: what to run instead of ``model(*inputs)``.

    Returns:
        Every recorded module's tensors (``<module>.weight``, ``.bias``, ``.running_mean``, ``.running_var``);
        tensors of other modules are not in it.

    Raises:
        WeightsError: the counts, kinds or shapes disagree (the first disagreement, with both sides and its index),
            or a batch norm's epsilon differs from the port's.
    """
    ours = execution_order(model, *inputs, forward=forward)
    theirs = onnx_layers(onnx_path)
    state: dict[str, torch.Tensor] = {}
    for i, ((name, module), layer) in enumerate(zip(ours, theirs)):
        kind = _KINDS[type(module)]
        own = {k: v for k, v in module.state_dict().items() if k != "num_batches_tracked"}
        problem = ""
        if kind != layer.op_type:
            problem = f"a {type(module).__name__} meets ONNX {layer.op_type}"
        elif set(own) != set(layer.tensors):
            problem = f"tensors {sorted(own)} against ONNX {sorted(layer.tensors)}"
        else:
            bad = [k for k in own if tuple(own[k].shape) != tuple(layer.tensors[k].shape)]
            if bad:
                problem = f"{bad[0]} {list(own[bad[0]].shape)} against ONNX {list(layer.tensors[bad[0]].shape)}"
        if not problem and layer.epsilon is not None and abs(layer.epsilon - module.eps) > 1e-9:
            problem = f"epsilon {module.eps} against ONNX {layer.epsilon}"
        if problem:
            raise WeightsError(f"{onnx_path} does not map onto {type(model).__name__} by execution order at layer "
                               f"{i}: {name} ({problem}); the ONNX node is {layer.describe()}. The port's forward "
                               "must run its layers in the exported program's order")
        for k, v in layer.tensors.items():
            state[f"{name}.{k}"] = torch.from_numpy(np.array(v)).to(own[k].dtype)
    if len(ours) != len(theirs):
        raise WeightsError(f"{onnx_path} has {len(theirs)} Conv/BatchNormalization/Gemm layers, "
                           f"{type(model).__name__} runs {len(ours)}: not the same architecture")
    return state
