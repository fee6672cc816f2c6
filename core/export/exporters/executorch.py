"""ExecuTorch programs (``.pte``) lowered to the XNNPACK delegate, for phones and embedded CPUs."""

from __future__ import annotations

import torch
from torch import nn

from oarkit.core.deploy.optional import require
from oarkit.core.errors import ConfigError
from oarkit.core.export.context import ExportContext
from oarkit.core.export.formats import ExportFormat, register_format


def lower_to_pte(ctx: ExportContext, module: nn.Module) -> str:
    """Export ``module`` with a bounded batch axis, delegate to XNNPACK and write ``model.pte``."""
    exir = require("executorch.exir", purpose="the 'executorch' export formats")
    xnnpack = require("executorch.backends.xnnpack.partition.xnnpack_partitioner",
                      purpose="the 'executorch' export formats")
    # Out-variants of the q/dq ops, for the parts of an int8 graph the XNNPACK delegate does not take.
    require("executorch.kernels.quantized", purpose="the 'executorch' export formats")
    program = torch.export.export(module, ctx.inputs, dynamic_shapes=ctx.dynamic_shapes(ctx.options["max_batch"]),
                                  strict=False)
    lowered = exir.to_edge_transform_and_lower(program, partitioner=[xnnpack.XnnpackPartitioner()])
    path = ctx.folder / "model.pte"
    path.write_bytes(lowered.to_executorch().buffer)
    return path.name


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
