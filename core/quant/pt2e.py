"""torchao's PT2E flow: capture with ``torch.export``, prepare with a backend quantizer, calibrate or train,
convert to int8 (q/dq ops around float kernels that the backends fuse into int8 kernels).

Backends:

- ``onnxruntime``: the x86 scheme (uint8 activations, int8 per-channel weights) with every convolution's and
  linear layer's output quantized as well (after its BatchNorm), because onnxruntime turns only
  ``DQ -> Conv -> Q`` (a Relu or Clip in between is absorbed) into its int8 ``QLinearConv``. Weights use
  [-127, 127] and :func:`convert` puts biases on the int32 grid of input scale x weight scale, as
  onnxruntime's own quantizer and kernels do: the ONNX artifact then computes exactly what the converted module
  computes.
- ``x86``: torchao's ``X86InductorQuantizer``, made for ``torch.compile``: a convolution and the activation after
  it (HardSwish, SiLU, an add) are one fused oneDNN kernel, so only the activation's output is quantized. In ONNX
  that leaves ``DQ -> Conv -> HardSwish -> Q``, which onnxruntime runs as a float convolution.
- ``xnnpack``: ExecuTorch's ``XNNPACKQuantizer`` (int8 activations), for ``.pte`` programs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

from oarkit.core.deploy.optional import require
from oarkit.core.errors import ConfigError, did_you_mean

logger = logging.getLogger(__name__)

BACKENDS = ("onnxruntime", "x86", "xnnpack")


@functools.cache
def _onnxruntime_quantizer_class() -> type:
    """``X86InductorQuantizer`` that also quantizes each conv/linear output (built once torchao is imported)."""
    x86 = require("torchao.quantization.pt2e.quantizer.x86_inductor_quantizer",
                  purpose="PT2E int8 quantization (onnxruntime backend)")
    from torchao.quantization.pt2e.quantizer import QuantizationAnnotation

    aten = torch.ops.aten
    producers = {aten.conv1d.default, aten.conv2d.default, aten.linear.default}
    batch_norms = {aten.batch_norm.default, aten._native_batch_norm_legit.default,
                   aten._native_batch_norm_legit_no_training.default}
    # onnxruntime folds these into the quantized output range of the op before them
    absorbed = {aten.relu.default, aten.relu_.default, aten.hardtanh.default, aten.hardtanh_.default,
                aten.clamp.default, aten.clamp_.default}

    class OnnxRuntimeQuantizer(x86.X86InductorQuantizer):
        """The x86 scheme, with the output of every quantized convolution and linear layer quantized too.

        The x86 quantizer leaves a convolution's output in float when an activation it fuses follows; here the
        output (after the BatchNorm that QAT folds into it) gets its own fake-quant, so that the exported ONNX
        graph has ``DQ -> Conv -> Q`` for every convolution: onnxruntime's int8 ``QLinearConv``.
        """

        def annotate(self, model: torch.fx.GraphModule) -> torch.fx.GraphModule:
            super().annotate(model)
            spec = self.global_config.output_activation if self.global_config else None
            if spec is None:
                return model
            for node in model.graph.nodes:
                # The x86 quantizer finds linear layers by their source module; one that calls F.linear itself
                # (timm's Linear) has no source record and would stay in float.
                if (node.target == aten.linear.default and "quantization_annotation" not in node.meta
                        and isinstance(node.args[1], torch.fx.Node) and node.args[1].op == "get_attr"):
                    self._annotate_linear_node_helper(node, True, self.global_config)
            for node in list(model.graph.nodes):
                annotation = node.meta.get("quantization_annotation")
                if node.target not in producers or annotation is None or not annotation.input_qspec_map:
                    continue
                out = node
                if len(out.users) == 1 and next(iter(out.users)).target in batch_norms:
                    out = next(iter(out.users))
                if len(out.users) == 1 and next(iter(out.users)).target in absorbed:
                    continue
                if all(user.op == "output" for user in out.users):
                    continue  # a graph output stays float: onnxruntime's QGemm / QLinearConv can return float
                existing = out.meta.get("quantization_annotation")
                if existing is None:
                    out.meta["quantization_annotation"] = QuantizationAnnotation(output_qspec=spec, _annotated=True)
                elif existing.output_qspec is None:
                    existing.output_qspec = spec
            return model

    return OnnxRuntimeQuantizer


def make_quantizer(backend: str, *, is_qat: bool) -> Any:
    """The torchao quantizer of ``backend`` with its default int8 scheme (per-channel weights)."""
    if backend in ("x86", "onnxruntime"):
        x86 = require("torchao.quantization.pt2e.quantizer.x86_inductor_quantizer",
                      purpose=f"PT2E int8 quantization ({backend} backend)")
        config = x86.get_default_x86_inductor_quantization_config(is_qat=is_qat)
        if backend == "x86":
            return x86.X86InductorQuantizer().set_global(config)
        # onnxruntime's int8 kernels are exact for weights in [-127, 127]; a weight of -128 (which the x86
        # scheme allows) makes its QLinearConv differ from the float simulation
        weight = dataclasses.replace(config.weight, quant_min=-127)
        config = dataclasses.replace(config, weight=weight)
        return _onnxruntime_quantizer_class()().set_global(config)
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
                dynamic_shapes: Sequence[dict[int, Any]] | None, *, backend: str = "onnxruntime"
                ) -> torch.fx.GraphModule:
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


@contextlib.contextmanager
def observers_paused(module: nn.Module) -> Iterator[None]:
    """Keep every fake-quant's range where it is inside the block (evaluation must not move them).

    A fake-quant observes whenever its observer is on, in eval mode too: without this, validation batches would
    pull the learned activation ranges towards the validation data. Each one's previous state is restored.
    """
    from torchao.quantization.pt2e.fake_quantize import FakeQuantizeBase

    fake_quants = [m for m in module.modules() if isinstance(m, FakeQuantizeBase)]
    states = [m.observer_enabled.clone() for m in fake_quants]
    for m in fake_quants:
        m.disable_observer()
    try:
        yield
    finally:
        for m, state in zip(fake_quants, states):
            m.observer_enabled.copy_(state)


def freeze_trained_qparams(prepared: torch.fx.GraphModule) -> int:
    """Make conversion use the scales and zero points the fake-quants trained with.

    ``convert_pt2e`` asks each fake-quant's observer for fresh qparams, and the observer's formula differs from
    the one the fused fake-quant kernel used during training: for symmetric per-channel weights the observer
    divides the largest magnitude by 127.5, the kernel by 127 (or 128 on the negative side). Every weight scale
    moved by 0.4 %, most int8 weights changed by one step, and the converted model no longer computed what
    QAT had trained and validated. Returns the number of fake-quants frozen.
    """
    from torchao.quantization.pt2e.fake_quantize import FakeQuantizeBase

    count = 0
    for module in prepared.modules():
        if isinstance(module, FakeQuantizeBase) and hasattr(module, "scale") and hasattr(module, "zero_point"):
            scale, zero_point = module.scale.detach().clone(), module.zero_point.detach().clone()
            module.calculate_qparams = functools.partial(_trained_qparams, scale, zero_point)
            count += 1
    return count


def _trained_qparams(scale: torch.Tensor, zero_point: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return scale, zero_point


def convert(prepared: torch.fx.GraphModule, *, int32_bias: bool = False) -> torch.fx.GraphModule:
    """The int8 module of a calibrated or trained prepared module, in eval mode, unused fp32 tensors stripped.

    ``prepared`` is consumed (converted in place). Quantization-aware trained fake-quants keep the scales they
    trained with (:func:`freeze_trained_qparams`), so the result computes what the fake-quantized model did.

    Args:
        prepared: the calibrated or trained module.
        int32_bias: put every quantized convolution's and linear layer's bias on the int32 grid its int8 kernel
            uses (:func:`round_biases_to_int32`); for graphs exported to onnxruntime.
    """
    pt2e = require("torchao.quantization.pt2e.quantize_pt2e", purpose="PT2E int8 quantization")
    from torchao.quantization.pt2e import allow_exported_model_train_eval, move_exported_model_to_eval

    freeze_trained_qparams(prepared)
    converted = pt2e.convert_pt2e(prepared)
    move_exported_model_to_eval(converted)
    allow_exported_model_train_eval(converted)
    if int32_bias:
        round_biases_to_int32(converted)
    strip_unused(converted)
    return converted


def _constant(graph_module: torch.fx.GraphModule, arg: Any) -> torch.Tensor | None:
    """A q/dq argument as a tensor: a literal, or the attribute a ``get_attr`` node reads (None otherwise)."""
    if isinstance(arg, (int, float)):
        return torch.tensor(float(arg))
    if isinstance(arg, torch.fx.Node) and arg.op == "get_attr":
        value = graph_module
        for part in str(arg.target).split("."):
            value = getattr(value, part)
        return value if isinstance(value, torch.Tensor) else None
    return None


@torch.no_grad()
def round_biases_to_int32(converted: torch.fx.GraphModule) -> int:
    """Round the bias of each convolution and linear layer that reads dequantized int8 inputs and weights to
    the grid of ``input_scale * weight_scale`` (per output channel).

    An int8 kernel accumulates in int32 and adds its bias there: onnxruntime quantizes a float bias to that grid
    when it fuses ``DQ -> Conv -> Q`` into ``QLinearConv``. Rounding it here, once, makes the converted module
    compute what the kernel computes (the change is below half a unit of that grid, far below one output step).

    Returns:
        The number of biases rounded.
    """
    aten = torch.ops.aten
    qd = torch.ops.quantized_decomposed
    dequantize = {qd.dequantize_per_tensor.default, qd.dequantize_per_tensor.tensor, qd.dequantize_per_channel.default}
    count = 0
    for node in converted.graph.nodes:
        if node.target not in (aten.conv1d.default, aten.conv2d.default, aten.linear.default) or len(node.args) < 3:
            continue
        x, w, bias = node.args[:3]
        if not (isinstance(x, torch.fx.Node) and isinstance(w, torch.fx.Node) and x.target in dequantize
                and w.target in dequantize):
            continue
        x_scale, w_scale, b = _constant(converted, x.args[1]), _constant(converted, w.args[1]), _constant(converted,
                                                                                                           bias)
        if x_scale is None or w_scale is None or b is None or x_scale.numel() != 1:
            continue
        if w.target == qd.dequantize_per_channel.default and int(w.args[3]) != 0:
            continue  # the bias runs along the weight's output axis only
        grid = (x_scale.float() * w_scale.float()).reshape(-1)
        b.copy_(torch.round(b / grid) * grid)
        count += 1
    logger.debug("rounded %d biases to their int32 grid", count)
    return count


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
