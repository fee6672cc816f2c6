"""torchao's PT2E flow: capture with ``torch.export``, prepare with a backend quantizer, calibrate or train,
convert to int8 (q/dq ops around float kernels that the backends fuse into int8 kernels).

Backends: ``x86`` (``X86InductorQuantizer``: uint8 activations, int8 per-channel weights; the pattern
onnxruntime and OpenVINO run fast) and ``xnnpack`` (ExecuTorch's ``XNNPACKQuantizer``: int8 activations).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.deploy.optional import require
from oarkit.core.errors import ConfigError, did_you_mean

logger = logging.getLogger(__name__)

BACKENDS = ("x86", "xnnpack")


def make_quantizer(backend: str, *, is_qat: bool) -> Any:
    """The torchao quantizer of ``backend`` with its default int8 scheme (per-channel weights)."""
    if backend == "x86":
        x86 = require("torchao.quantization.pt2e.quantizer.x86_inductor_quantizer",
                      purpose="PT2E int8 quantization (x86 backend)")
        quantizer = x86.X86InductorQuantizer()
        quantizer.set_global(x86.get_default_x86_inductor_quantization_config(is_qat=is_qat))
        return quantizer
    if backend == "xnnpack":
        xnn = require("executorch.backends.xnnpack.quantizer.xnnpack_quantizer",
                      purpose="PT2E int8 quantization (xnnpack backend)")
        return xnn.XNNPACKQuantizer().set_global(xnn.get_symmetric_quantization_config(is_per_channel=True,
                                                                                       is_qat=is_qat))
    raise ConfigError(f"quantization backend {backend!r} is not one of {list(BACKENDS)}."
                      f"{did_you_mean(backend, BACKENDS)}")


def capture(module: nn.Module, inputs: tuple[torch.Tensor, ...],
            dynamic_shapes: Sequence[dict[int, Any]] | None = None) -> torch.fx.GraphModule:
    """The ATen graph of ``module`` that PT2E annotates (batch axis dynamic where ``dynamic_shapes`` says)."""
    return torch.export.export(module, inputs, dynamic_shapes=tuple(dynamic_shapes) if dynamic_shapes else None,
                               strict=False).module()


def prepare_ptq(module: nn.Module, inputs: tuple[torch.Tensor, ...], dynamic_shapes: Sequence[dict[int, Any]] | None,
                *, backend: str = "x86") -> torch.fx.GraphModule:
    """An eval-mode module with observers inserted, ready for :func:`calibrate`."""
    pt2e = require("torchao.quantization.pt2e.quantize_pt2e", purpose="PT2E int8 quantization")
    return pt2e.prepare_pt2e(capture(module.eval(), inputs, dynamic_shapes), make_quantizer(backend, is_qat=False))


@torch.no_grad()
def calibrate(prepared: torch.fx.GraphModule, batches: Iterable[tuple[torch.Tensor, ...]]) -> int:
    """Run calibration batches through a prepared module; returns how many were run."""
    count = 0
    for batch in batches:
        prepared(*batch)
        count += 1
    return count


def prepare_qat(module: nn.Module, inputs: tuple[torch.Tensor, ...],
                dynamic_shapes: Sequence[dict[int, Any]] | None, *, backend: str = "x86") -> torch.fx.GraphModule:
    """A fake-quantized module for quantization-aware training that accepts ``.train()`` and ``.eval()``.

    Conv + BatchNorm pairs are fused for QAT by torchao (BatchNorm statistics keep updating in training).
    """
    pt2e = require("torchao.quantization.pt2e.quantize_pt2e", purpose="quantization-aware training")
    from torchao.quantization.pt2e import allow_exported_model_train_eval

    prepared = pt2e.prepare_qat_pt2e(capture(module.train(), inputs, dynamic_shapes),
                                     make_quantizer(backend, is_qat=True))
    allow_exported_model_train_eval(prepared)
    shape_observers(prepared, inputs)
    return prepared


@torch.no_grad()
def shape_observers(prepared: torch.fx.GraphModule, inputs: tuple[torch.Tensor, ...]) -> None:
    """Give every observer buffer its final shape, so that saved states load into a freshly prepared module.

    Per-channel observers start with empty buffers that only the first forward pass sizes; a state saved after
    training would not load into them. One eval-mode pass sizes them (weight ranges depend on the weights
    alone); the per-tensor activation ranges it recorded from ``inputs`` are then forgotten again.
    """
    from torchao.quantization.pt2e.observer import MinMaxObserver

    prepared.eval()
    prepared(*inputs)
    for module in prepared.modules():
        if isinstance(module, MinMaxObserver) and module.min_val.ndim == 0:
            module.reset_min_max_vals()
    prepared.train()


def convert(prepared: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """The int8 module of a calibrated or trained prepared module, in eval mode, unused fp32 tensors stripped."""
    pt2e = require("torchao.quantization.pt2e.quantize_pt2e", purpose="PT2E int8 quantization")
    from torchao.quantization.pt2e import allow_exported_model_train_eval, move_exported_model_to_eval

    converted = pt2e.convert_pt2e(prepared)
    move_exported_model_to_eval(converted)
    allow_exported_model_train_eval(converted)
    strip_unused(converted)
    return converted


def strip_unused(graph_module: torch.fx.GraphModule) -> int:
    """Delete parameters, buffers and submodules the graph no longer reads (convert leaves the fp32 weights).

    Returns:
        The number of tensor elements removed.
    """
    used = {str(n.target) for n in graph_module.graph.nodes if n.op in ("get_attr", "call_module")}
    removed = 0
    named = list(graph_module.named_parameters(remove_duplicate=False)) + list(
        graph_module.named_buffers(remove_duplicate=False))
    for name, tensor in named:
        if name in used or any(name.startswith(u + ".") for u in used):
            continue
        owner_name, _, leaf = name.rpartition(".")
        owner = graph_module.get_submodule(owner_name) if owner_name else graph_module
        if hasattr(owner, leaf):
            delattr(owner, leaf)
            removed += tensor.numel()
    graph_module.delete_all_unused_submodules()
    graph_module.recompile()
    if removed:
        logger.debug("stripped %d unused elements from the converted module", removed)
    return removed
