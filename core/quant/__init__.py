"""int8 quantization: post-training (onnxruntime static QDQ, torchao PT2E) and quantization-aware training.

- :func:`quantize_onnx_static` turns a float ONNX model into QDQ int8 (uint8 activations, int8 per-channel
  weights: the fast combination for onnxruntime on x86), calibrated on real inputs;
  :func:`quantize_onnx_dynamic` quantizes the weights only (activations at run time), for transformers.
- :mod:`.pt2e` wraps torchao's PT2E flow (export, prepare, calibrate or train, convert) for the X86 inductor
  and XNNPACK quantizers.
- :class:`QuantizationAwareTraining` is the ``quant=qat`` config group: it wraps a kit's task so that the
  normal Trainer fine-tunes a PT2E fake-quantized model, then converts and exports int8 artifacts.
"""

from oarkit.core.quant.ptq import quantize_onnx_dynamic, quantize_onnx_static
from oarkit.core.quant.qat import QATExport, QATTask, QuantizationAwareTraining

__all__ = ["QATExport", "QATTask", "QuantizationAwareTraining", "quantize_onnx_dynamic", "quantize_onnx_static"]
