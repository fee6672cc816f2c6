"""ONNX through ``torch.onnx.export(..., dynamo=True)``: one self-contained file with a dynamic batch axis."""

from __future__ import annotations

import logging
import os
import warnings
from typing import Any
from unittest import mock

import torch

from oarkit.core.chatter import quiet_loggers
from oarkit.core.deploy.optional import require
from oarkit.core.export.context import ExportContext
from oarkit.core.export.exporters.rnn import rnn_while_loop_decompositions
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


def _specialised_axes(path: str, dynamic: tuple[dict[int, Any], ...]) -> list[str]:
    """The declared dynamic axes that the ONNX file's inputs hold as fixed sizes (``input 0 axis 0 = 2``)."""
    onnx = require("onnx", purpose="checking the ONNX file's input shapes")
    graph_inputs = onnx.load(path, load_external_data=False).graph.input
    out = []
    for i, (axes, graph_input) in enumerate(zip(dynamic, graph_inputs)):
        dims = graph_input.type.tensor_type.shape.dim
        out += [f"input {i} axis {axis} = {dims[axis].dim_value}" for axis in axes
                if axis < len(dims) and dims[axis].HasField("dim_value")]
    return out


def export_onnx(ctx: ExportContext) -> str:
    """Write ``model.onnx``; ``opset`` and ``optimize`` are the format's options.

    torch.onnx captures the graph with non-strict ``torch.export`` first and, when that specialises a declared
    dynamic axis (``len(tensor)`` of the batch in transformers' RT-DETR and D-FINE), quietly exports the fixed size
    it suggests. Such a file is exported again from a strict ``torch.export`` program, which keeps the axis.
    """
    require("onnxscript", purpose="the 'onnx' export format (torch.onnx dynamo exporter)")
    path = ctx.folder / "model.onnx"
    dynamic = ctx.dynamic_shapes()
    # transformers' traced shape checks (torch._check_tensor_all in RT-DETRv2's and D-FINE's deformable attention)
    # become aten._is_all_true nodes, which the ONNX exporter cannot translate: off while exporting
    checks_off = mock.patch.dict(os.environ, {"TRANSFORMERS_DISABLE_TORCH_CHECK": "1"})
    with warnings.catch_warnings(), quiet_loggers("onnxscript", "onnx_ir", "torch.onnx"), checks_off, \
            rnn_while_loop_decompositions():
        warnings.simplefilter("ignore")  # the exporter's deprecation chatter about its own internals
        names = {"input_names": list(ctx.spec.input_names), "output_names": list(ctx.spec.output_names)}
        torch.onnx.export(ctx.module, ctx.inputs, str(path), dynamo=True, external_data=False,
                          opset_version=ctx.options["opset"], optimize=ctx.options["optimize"],
                          dynamic_shapes=dynamic, verbose=False, **names)
        fixed = _specialised_axes(str(path), dynamic)
        if fixed:
            logger.info("non-strict capture fixed the dynamic axes %s; exporting a strict torch.export program",
                        ", ".join(fixed))
            program = torch.export.export(ctx.module, ctx.inputs, dynamic_shapes=dynamic, strict=True)
            torch.onnx.export(program, ctx.inputs, str(path), dynamo=True, external_data=False,
                              opset_version=ctx.options["opset"], optimize=ctx.options["optimize"], verbose=False,
                              **names)
    embed_metadata(str(path), ctx.metadata)
    return path.name


register_format(ExportFormat(
    name="onnx", artifact="model.onnx", runtime="onnxruntime", exporter=export_onnx,
    description="ONNX (torch.onnx dynamo exporter), one file, dynamic batch; runs on onnxruntime",
    requires=("onnx", "onnxscript", "onnxruntime"), options={"opset": 18, "optimize": True}, atol_rel=1e-4,
    metric_tolerance=0.1,
))
