"""int8 variants of the float formats (post-training quantization).

``onnx_int8`` is onnxruntime's static QDQ quantization of the ONNX artifact, calibrated on training images;
``openvino_int8`` converts that QDQ graph to IR (OpenVINO runs it with int8 kernels); ``executorch_int8`` and
``pt2_int8`` use torchao's PT2E flow with the XNNPACK and X86 quantizers. ``onnx_int8_dynamic`` quantizes only
the weights ahead of time (activations per batch at run time, no calibration): the int8 format for transformer
graphs, whose time goes into Linear layers.
"""

from __future__ import annotations

import json
import logging

import torch

from oarkit.core.export.context import ExportContext
from oarkit.core.export.exporters.executorch import lower_to_pte
from oarkit.core.export.exporters.onnx import embed_metadata
from oarkit.core.export.exporters.openvino import convert_onnx_to_ir
from oarkit.core.export.formats import INT8_ATOL_REL, INT8_METRIC_TOLERANCE, ExportFormat, register_format
from oarkit.core.quant import pt2e
from oarkit.core.quant.ptq import (
    DYNAMIC_OP_TYPES,
    int8_dot_products_are_exact,
    quantize_onnx_dynamic,
    quantize_onnx_static,
)

logger = logging.getLogger(__name__)


def export_onnx_int8(ctx: ExportContext) -> str:
    batches = ctx.calibration_batches()
    path = ctx.folder / "model.onnx"
    quantize_onnx_static(ctx.artifacts["onnx"] / "model.onnx", path,
                         ([x.numpy() for x in batch] for batch in batches), input_names=ctx.spec.input_names,
                         per_channel=ctx.options["per_channel"], calibration_method=ctx.options["calibration_method"],
                         percentile=ctx.options["percentile"], float_stem=ctx.options["float_stem"],
                         nodes_to_exclude=list(ctx.options["nodes_to_exclude"]),
                         op_types=ctx.options["op_types"] or None, reduce_range=ctx.options["reduce_range"],
                         float_modules=list(ctx.options["float_modules"]))
    if not ctx.options["reduce_range"] and not int8_dot_products_are_exact():
        logger.warning("this CPU has no VNNI: onnxruntime's int8 kernels saturate with 8-bit weights and the "
                       "artifact drifts from its calibrated graph; onnx_int8.reduce_range=true uses 7-bit weights")
    embed_metadata(str(path), ctx.metadata)
    ctx.quantization = {"method": "ptq", "tool": "onnxruntime.quantize_static", "form": "QDQ",
                        "activations": "uint8", "weights": "int8", "per_channel": ctx.options["per_channel"],
                        "calibration_method": ctx.options["calibration_method"],
                        "percentile": ctx.options["percentile"], "float_stem": ctx.options["float_stem"],
                        "reduce_range": ctx.options["reduce_range"], "op_types": list(ctx.options["op_types"]),
                        "float_modules": list(ctx.options["float_modules"]),
                        "calibration_samples": sum(int(b[0].shape[0]) for b in batches)}
    return path.name


def export_onnx_int8_dynamic(ctx: ExportContext) -> str:
    path = ctx.folder / "model.onnx"
    op_types = list(ctx.options["op_types"])
    quantize_onnx_dynamic(ctx.artifacts["onnx"] / "model.onnx", path, per_channel=ctx.options["per_channel"],
                          op_types=op_types)
    embed_metadata(str(path), ctx.metadata)
    ctx.quantization = {"method": "ptq", "tool": "onnxruntime.quantize_dynamic", "form": "QOperator",
                        "activations": "uint8 (dynamic, per batch)", "weights": "int8",
                        "per_channel": ctx.options["per_channel"], "op_types": op_types}
    return path.name


def export_openvino_int8(ctx: ExportContext) -> str:
    name = convert_onnx_to_ir(ctx, "onnx_int8")
    ctx.quantization = {"method": "ptq", "tool": "onnxruntime.quantize_static (QDQ) -> OpenVINO IR",
                        "activations": "uint8", "weights": "int8"}
    return name


def _pt2e_ptq(ctx: ExportContext, backend: str, max_batch: int | None = None) -> torch.fx.GraphModule:
    batches = ctx.calibration_batches()
    prepared = pt2e.prepare_ptq(ctx.module, ctx.inputs, ctx.dynamic_shapes(max_batch), backend=backend)
    pt2e.calibrate(prepared, batches)
    ctx.quantization = {"method": "ptq", "tool": f"torchao PT2E ({backend} quantizer)",
                        "activations": "uint8" if backend == "x86" else "int8", "weights": "int8",
                        "per_channel": True, "calibration_samples": sum(int(b[0].shape[0]) for b in batches)}
    return pt2e.convert(prepared)


def export_executorch_int8(ctx: ExportContext) -> str:
    return lower_to_pte(ctx, _pt2e_ptq(ctx, "xnnpack", ctx.options["max_batch"]))


def export_pt2_int8(ctx: ExportContext) -> str:
    converted = _pt2e_ptq(ctx, "x86")
    program = torch.export.export(converted, ctx.inputs, dynamic_shapes=ctx.dynamic_shapes(), strict=False)
    path = ctx.folder / "model.pt2"
    torch.export.save(program, str(path), extra_files={"oarkit/metadata.json": json.dumps(ctx.metadata)})
    return path.name


_PTQ_OPTIONS = {"per_channel": True, "calibration_method": "percentile", "percentile": 99.99, "float_stem": True,
                "nodes_to_exclude": [], "op_types": [],
                "reduce_range": False, "float_modules": []}

register_format(ExportFormat(
    name="onnx_int8", artifact="model.onnx", runtime="onnxruntime", exporter=export_onnx_int8,
    description="ONNX int8 (onnxruntime static QDQ: uint8 activations, int8 per-channel weights)",
    requires=("onnx", "onnxruntime"), options=dict(_PTQ_OPTIONS), after="onnx", quantized=True,
    atol_rel=INT8_ATOL_REL, metric_tolerance=INT8_METRIC_TOLERANCE,
))
register_format(ExportFormat(
    name="onnx_int8_dynamic", artifact="model.onnx", runtime="onnxruntime", exporter=export_onnx_int8_dynamic,
    description="ONNX int8 weights, activations quantized at run time (onnxruntime dynamic; for transformers)",
    requires=("onnx", "onnxruntime"), options={"per_channel": True, "op_types": list(DYNAMIC_OP_TYPES)},
    after="onnx", quantized=True, atol_rel=INT8_ATOL_REL, metric_tolerance=INT8_METRIC_TOLERANCE,
))
register_format(ExportFormat(
    name="openvino_int8", artifact="model.xml", runtime="openvino", exporter=export_openvino_int8,
    description="OpenVINO IR of the QDQ int8 ONNX model (int8 kernels)",
    requires=("openvino",), options={"compress_to_fp16": False}, after="onnx_int8", quantized=True,
    atol_rel=INT8_ATOL_REL, metric_tolerance=INT8_METRIC_TOLERANCE, runtime_options={"inference_precision": "f32"},
))
register_format(ExportFormat(
    name="executorch_int8", artifact="model.pte", runtime="executorch", exporter=export_executorch_int8,
    description="ExecuTorch int8 (torchao PT2E with XNNPACKQuantizer, XNNPACK delegate)",
    requires=("executorch", "torchao"), options={"max_batch": 32}, quantized=True, atol_rel=INT8_ATOL_REL,
    metric_tolerance=INT8_METRIC_TOLERANCE,
))
register_format(ExportFormat(
    name="pt2_int8", artifact="model.pt2", runtime="torch", exporter=export_pt2_int8,
    description="torch.export int8 program (torchao PT2E, X86InductorQuantizer); fast under torch.compile",
    requires=("torchao",), quantized=True, atol_rel=INT8_ATOL_REL, metric_tolerance=INT8_METRIC_TOLERANCE,
))
