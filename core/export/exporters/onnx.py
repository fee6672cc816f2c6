"""ONNX through ``torch.onnx.export(..., dynamo=True)``: one self-contained file with a dynamic batch axis."""

from __future__ import annotations

import logging
import warnings

import torch

from oarkit.core.chatter import quiet_loggers
from oarkit.core.deploy.optional import require
from oarkit.core.export.context import ExportContext
from oarkit.core.export.formats import ExportFormat, register_format

logger = logging.getLogger(__name__)


def embed_metadata(path: str, metadata: dict[str, str]) -> None:
    """Write ``metadata`` into the ONNX file's ``metadata_props`` (readable by any ONNX tool), and drop the
    exporter's per-node debug records (Python stack traces with the exporting machine's paths, module scopes):
    they are a tenth of a small model's file and say nothing a deployment needs."""
    onnx = require("onnx", purpose="writing ONNX metadata")
    model = onnx.load(path)
    for node in model.graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
    for info in model.graph.value_info:
        del info.metadata_props[:]
    existing = {p.key: p for p in model.metadata_props}
    for key, value in metadata.items():
        if key in existing:
            existing[key].value = value
        else:
            model.metadata_props.add(key=key, value=value)
    onnx.save(model, path)


def export_onnx(ctx: ExportContext) -> str:
    """Write ``model.onnx``; ``opset`` and ``optimize`` are the format's options."""
    require("onnxscript", purpose="the 'onnx' export format (torch.onnx dynamo exporter)")
    path = ctx.folder / "model.onnx"
    with warnings.catch_warnings(), quiet_loggers("onnxscript", "onnx_ir", "torch.onnx"):
        warnings.simplefilter("ignore")  # the exporter's deprecation chatter about its own internals
        torch.onnx.export(ctx.module, ctx.inputs, str(path), dynamo=True, external_data=False,
                          opset_version=ctx.options["opset"], optimize=ctx.options["optimize"],
                          input_names=list(ctx.spec.input_names), output_names=list(ctx.spec.output_names),
                          dynamic_shapes=ctx.dynamic_shapes(), verbose=False)
    embed_metadata(str(path), ctx.metadata)
    return path.name


register_format(ExportFormat(
    name="onnx", artifact="model.onnx", runtime="onnxruntime", exporter=export_onnx,
    description="ONNX (torch.onnx dynamo exporter), one file, dynamic batch; runs on onnxruntime",
    requires=("onnx", "onnxscript", "onnxruntime"), options={"opset": 18, "optimize": True}, atol_rel=1e-4,
    metric_tolerance=0.1,
))
