"""OpenVINO IR (``model.xml`` + ``model.bin``), converted from the ONNX artifact."""

from __future__ import annotations

from oarkit.core.deploy.optional import require
from oarkit.core.export.context import ExportContext
from oarkit.core.export.formats import ExportFormat, register_format


def convert_onnx_to_ir(ctx: ExportContext, onnx_format: str) -> str:
    """Convert the ``onnx_format`` artifact of this export to IR; the deploy metadata goes into ``rt_info``."""
    ov = require("openvino", purpose="the OpenVINO export formats")
    model = ov.convert_model(str(ctx.artifacts[onnx_format] / "model.onnx"))
    for key, value in ctx.metadata.items():
        model.set_rt_info(value, ["oarkit", key])
    path = ctx.folder / "model.xml"
    # f32 weights: compressing to f16 would change the numbers verification compares.
    ov.save_model(model, str(path), compress_to_fp16=ctx.options["compress_to_fp16"])
    return path.name


def export_openvino(ctx: ExportContext) -> str:
    return convert_onnx_to_ir(ctx, "onnx")


register_format(ExportFormat(
    name="openvino", artifact="model.xml", runtime="openvino", exporter=export_openvino,
    description="OpenVINO IR from the ONNX artifact; verified at f32 inference precision",
    requires=("openvino",), options={"compress_to_fp16": False}, after="onnx", atol_rel=1e-4,
    metric_tolerance=0.1, runtime_options={"inference_precision": "f32"},
))
