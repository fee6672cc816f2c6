"""ExecuTorch programs (``.pte``) lowered to the XNNPACK delegate, for phones and embedded CPUs."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.deploy.optional import require
from oarkit.core.errors import ConfigError
from oarkit.core.export.context import ExportContext
from oarkit.core.export.formats import ExportFormat, register_format

logger = logging.getLogger(__name__)


def lower_to_pte(ctx: ExportContext, module: nn.Module) -> str:
    """Export ``module`` with a bounded batch axis, delegate to XNNPACK and write ``model.pte``.

    Some programs only run at the batch they were traced with: the XNNPACK delegate's outputs around a
    ``chunk`` / ``cat`` keep their traced size (ShuffleNet v2's channel split; LeViT and MaxViT fail alike).
    The program is therefore run once at batch 1; when that fails it
    is exported again for a fixed batch of 1 (``max_batch: 1`` in deploy.yaml; the runtime then feeds larger
    batches one sample at a time).
    """
    path = ctx.folder / "model.pte"
    path.write_bytes(_lowered(module, ctx.inputs, ctx.dynamic_shapes(ctx.options["max_batch"])))
    batch_inputs = [i for i, spec in enumerate(ctx.spec.input_specs()) if 0 in spec.dynamic()]
    if batch_inputs and not _runs(path, _first_sample(ctx.inputs, batch_inputs)):
        logger.warning("this ExecuTorch program fails at batch 1 (some of its tensors keep the traced batch size); "
                       "exporting it for a fixed batch of 1 instead (larger batches run one sample at a time)")
        path.write_bytes(_lowered(module, _first_sample(ctx.inputs, batch_inputs), None))
        ctx.options["max_batch"] = 1
    return path.name


def _lowered(module: nn.Module, inputs: tuple[torch.Tensor, ...], dynamic_shapes: Any) -> bytes:
    exir = require("executorch.exir", purpose="the 'executorch' export formats")
    xnnpack = require("executorch.backends.xnnpack.partition.xnnpack_partitioner",
                      purpose="the 'executorch' export formats")
    # Out-variants of the q/dq ops, for the parts of an int8 graph the XNNPACK delegate does not take.
    require("executorch.kernels.quantized", purpose="the 'executorch' export formats")
    program = torch.export.export(module, inputs, dynamic_shapes=dynamic_shapes, strict=False)
    lowered = exir.to_edge_transform_and_lower(program, partitioner=[xnnpack.XnnpackPartitioner()])
    return lowered.to_executorch().buffer


def _first_sample(inputs: tuple[torch.Tensor, ...], batch_inputs: list[int]) -> tuple[torch.Tensor, ...]:
    return tuple(t[:1].contiguous() if i in batch_inputs else t for i, t in enumerate(inputs))


def _runs(path: Path, inputs: tuple[torch.Tensor, ...]) -> bool:
    """Whether ExecuTorch's runtime executes the program at ``path`` on ``inputs``."""
    runtime = require("executorch.runtime", purpose="checking ExecuTorch (.pte) artifacts")
    method = runtime.Runtime.get().load_program(str(path)).load_method("forward")
    try:
        method.execute(list(inputs))
    except RuntimeError:
        return False
    return True


def export_executorch(ctx: ExportContext) -> str:
    scheme = getattr(ctx.module, "oarkit_quantization", None)
    if scheme and scheme.get("activations") != "int8":
        # XNNPACK delegates signed int8 activations only; the rest would need kernels the runtime lacks.
        raise ConfigError(f"this int8 graph has {scheme.get('activations')} activations, which XNNPACK does not "
                          "run; for a .pte train with quant.backend=xnnpack (or export the float model with "
                          "--format executorch --quantize int8)")
    return lower_to_pte(ctx, ctx.module)


register_format(ExportFormat(
    name="executorch", artifact="model.pte", runtime="executorch", exporter=export_executorch,
    description="ExecuTorch program (.pte) with the XNNPACK delegate; batch up to max_batch",
    requires=("executorch",), options={"max_batch": 32}, atol_rel=1e-4, metric_tolerance=0.1,
))
