"""The built-in export formats, registered in the order `--format all` exports them.

| format | artifact | runtime | built from |
|---|---|---|---|
| onnx | model.onnx (one file, dynamic batch) | onnxruntime | torch.onnx.export(dynamo=True) |
| pt2 | model.pt2 | torch | torch.export |
| openvino | model.xml + model.bin (f32 weights) | openvino | the onnx artifact |
| executorch | model.pte (XNNPACK delegate) | executorch | torch.export |
| onnx_int8 | model.onnx (QDQ, u8 activations, s8 weights) | onnxruntime | onnx, onnxruntime static PTQ |
| onnx_int8_dynamic | model.onnx (s8 weights, activations quantized at run time) | onnxruntime | onnx, dynamic |
| openvino_int8 | model.xml + model.bin | openvino | onnx_int8 |
| executorch_int8 | model.pte (XNNPACK int8) | executorch | torchao PT2E PTQ, XNNPACKQuantizer |
| pt2_int8 | model.pt2 (q/dq ops) | torch | torchao PT2E PTQ, X86InductorQuantizer |
"""

from oarkit.core.export.exporters import (  # noqa: F401  (float formats first)
    executorch,
    int8,  # noqa: F401
    onnx,
    openvino,
    pt2,
)
