"""Post-training static int8 quantization of ONNX models with onnxruntime (QDQ form)."""

from __future__ import annotations

import contextlib
import fnmatch
import io
import logging
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.chatter import quiet_loggers
from oarkit.core.deploy.optional import require
from oarkit.core.errors import ConfigError
from oarkit.core.quant.calibration_memory import calibration_plan, collect_in_chunks, describe, equal_batches

logger = logging.getLogger(__name__)

CALIBRATION_METHODS = ("minmax", "percentile", "entropy")


def float_stem_nodes(model: Any, *, max_channels: int = 4) -> list[str]:
    """Names of the convolutions that read a graph input with at most ``max_channels`` channels (the stem).

    A stem convolution over an RGB image gains nothing from int8 on onnxruntime: its int8 kernel is slower
    than the fused float one there (3 input channels leave the int8 GEMM nothing to vectorise), and keeping it
    float also keeps the input image unquantized.
    """
    from onnx import numpy_helper

    inputs = {i.name for i in model.graph.input}
    weights = {i.name: i for i in model.graph.initializer}
    names = []
    for node in model.graph.node:
        if node.op_type != "Conv" or node.input[0] not in inputs or node.input[1] not in weights:
            continue
        groups = next((a.i for a in node.attribute if a.name == "group"), 1)
        if numpy_helper.to_array(weights[node.input[1]]).shape[1] * groups <= max_channels:
            names.append(node.name)
    return names


def float_module_nodes(model: Any, patterns: Sequence[str]) -> list[str]:
    """Names of the nodes that read a weight of the modules ``patterns`` name (``model.head.proj_conv``, or a
    glob such as ``*.proj_conv``): the exported graph names each weight by its module path.

    Raises:
        ConfigError: a pattern names no weight of the graph (the message shows some weight names).
    """
    weights = [i.name for i in model.graph.initializer]

    def hit(name: str, pattern: str) -> bool:
        return fnmatch.fnmatchcase(name, pattern) or fnmatch.fnmatchcase(name, pattern + ".*")

    unknown = [p for p in patterns if not any(hit(w, p) for w in weights)]
    if unknown:
        raise ConfigError(f"float_modules {unknown} name no weight of the graph; weights are named by module path, "
                          f"e.g. {weights[:4]}")
    chosen = {w for w in weights if any(hit(w, p) for p in patterns)}
    return [n.name for n in model.graph.node if chosen & set(n.input)]


def _preprocessed(source: Path, folder: Path) -> Path:
    """onnxruntime's quantization pre-processing of ``source``: ONNX shape inference, basic graph optimisation.

    Its symbolic shape inference is left out: quantization does not need it, it fails on attention graphs, and
    when it fails it leaves ``sym_shape_infer_temp.onnx`` and its data files in the working directory.
    """
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = folder / "preprocessed.onnx"
    quant_pre_process(str(source), str(out), skip_symbolic_shape=True)
    return out


def _name_nodes(model: Any) -> None:
    """Give every unnamed node a unique name (onnxruntime's quantizer excludes nodes by name)."""
    taken = {n.name for n in model.graph.node if n.name}
    for i, node in enumerate(model.graph.node):
        if not node.name:
            name = f"{node.op_type}_{i}"
            while name in taken:
                name += "_"
            node.name = name
            taken.add(name)


def int8_dot_products_are_exact() -> bool:
    """Whether onnxruntime's u8s8 kernels compute exact int32 dot products on this CPU (VNNI or AMX).

    On AVX2 without VNNI they use VPMADDUBSW, whose 16-bit pair sums saturate, so an 8-bit-weight int8 artifact
    is not faithful to its QDQ graph there (measured on an AVX2-only EPYC: max_rel 0.23-0.26 on a QAT model,
    0.027 on a random ResNet-18; 0.0 with ``reduce_range``). Unknown CPUs count as exact.
    """
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return True
    return any(f in flags for f in ("avx512_vnni", "avx_vnni", "amx_int8"))


def quantize_onnx_static(fp32_path: str | Path, int8_path: str | Path, batches: Iterable[Sequence[np.ndarray]],
                         *, input_names: Sequence[str], per_channel: bool = True,
                         calibration_method: str = "percentile", percentile: float = 99.99,
                         float_stem: bool = True, nodes_to_exclude: Sequence[str] = (),
                         op_types: Sequence[str] | None = None, reduce_range: bool = False,
                         float_modules: Sequence[str] = (), preprocess: bool = True) -> Path:
    """Quantize a float ONNX model to QDQ int8: uint8 activations, int8 weights (per channel by default).

    Signed activations and dynamic quantization run slower than fp32 for CNNs on x86 onnxruntime; uint8
    activations with int8 weights use its fast VNNI kernels.

    Args:
        fp32_path: the float model.
        int8_path: where the quantized model is written.
        batches: calibration inputs, one sequence of arrays (in ``input_names`` order) per batch.
        input_names: the graph's input names.
        per_channel: one weight scale per output channel (more accurate, same speed).
        calibration_method: ``percentile`` (ranges cover ``percentile`` % of the calibration activations;
            the default, most accurate on the digits demo), ``minmax`` or ``entropy``.
        percentile: the share of activations the ``percentile`` ranges keep (99.99 clips rare outliers).
        float_stem: keep the first convolution over an image input in float (see :func:`float_stem_nodes`):
            faster on onnxruntime and one quantization step fewer.
        nodes_to_exclude: more node names to keep in float (names after onnxruntime's pre-processing, which
            names unnamed nodes ``<OpType>_<index>``).
        op_types: quantize only these operator types (``["Conv"]``: a detector's decoding and NMS stay float);
            ``None``: every type onnxruntime quantizes.
        reduce_range: 7-bit weights. On CPUs without VNNI (see :func:`int8_dot_products_are_exact`) onnxruntime's
            u8s8 kernels saturate 16-bit pair sums with 8-bit weights; 7-bit ones cannot saturate, so the
            artifact computes exactly what its QDQ graph says, at a coarser weight grid.
        float_modules: modules whose layers stay float, by module path or glob (:func:`float_module_nodes`; a
            detector's fixed DFL projection, which decodes box distances).
        preprocess: run onnxruntime's shape inference and graph optimisation first (recommended).

    Returns:
        ``int8_path``.
    """
    import onnx

    quantization = require("onnxruntime.quantization", purpose="int8 post-training quantization of ONNX models")
    if calibration_method not in CALIBRATION_METHODS:
        raise ConfigError(f"calibration_method={calibration_method!r}; choose one of {list(CALIBRATION_METHODS)}")
    batches = [[np.ascontiguousarray(a, dtype=np.float32) for a in batch] for batch in batches]
    if not batches:
        raise ConfigError("int8 calibration got no batches; give it some training images")
    shapes = sorted({tuple(tuple(a.shape[1:]) for a in batch) for batch in batches})
    if len(shapes) > 1:
        raise ConfigError(f"static int8 calibration needs inputs of one shape, but the calibration batches have "
                          f"{len(shapes)} ({shapes[0]}, {shapes[1]}, ...): a model of variable-length inputs (a text "
                          "encoder) is quantized with onnx_int8_dynamic, which needs no calibration")
    # Histogram calibrators stack batches: everything is cut into equal batches (calibration_memory.equal_batches)
    size = int(batches[0][0].shape[0])
    stacked = dict(zip(input_names, (np.concatenate([b[k] for b in batches]) for k in range(len(batches[0])))))

    class Reader(quantization.CalibrationDataReader):
        def __init__(self) -> None:
            self.items = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self.items, None)

    method = {"minmax": quantization.CalibrationMethod.MinMax,
              "percentile": quantization.CalibrationMethod.Percentile,
              "entropy": quantization.CalibrationMethod.Entropy}[calibration_method]
    int8_path = Path(int8_path)
    with tempfile.TemporaryDirectory(prefix="oarkit-ptq-") as tmp, quiet_loggers("onnxruntime"):
        source = _preprocessed(Path(fp32_path), Path(tmp)) if preprocess else Path(fp32_path)
        model = onnx.load(str(source))
        _name_nodes(model)
        excluded = [*(float_stem_nodes(model) if float_stem else []), *nodes_to_exclude,
                    *float_module_nodes(model, float_modules)]
        unknown = sorted(set(nodes_to_exclude) - {n.name for n in model.graph.node})
        if unknown:
            raise ConfigError(f"nodes_to_exclude names {unknown}, which the graph does not have; node names are "
                              f"e.g. {[n.name for n in model.graph.node][:5]}")
        named = Path(tmp) / "named.onnx"
        onnx.save(model, str(named))
        plan = calibration_plan(named, stacked, size)
        feeds = equal_batches(stacked, plan.batch_size)
        samples = sum(int(next(iter(f.values())).shape[0]) for f in feeds)

        def run(calibrate_method: Any) -> None:
            # onnxruntime's histogram calibrators print their progress; the exporter reports the outcome
            with contextlib.redirect_stdout(io.StringIO()), collect_in_chunks(plan.chunk):
                quantization.quantize_static(
                    str(named), str(int8_path), Reader(), quant_format=quantization.QuantFormat.QDQ,
                    activation_type=quantization.QuantType.QUInt8, weight_type=quantization.QuantType.QInt8,
                    per_channel=per_channel, calibrate_method=calibrate_method, nodes_to_exclude=excluded,
                    op_types_to_quantize=list(op_types) if op_types else None, reduce_range=reduce_range,
                    extra_options={"WeightSymmetric": True, "CalibPercentile": float(percentile)},
                    calibration_providers=["CPUExecutionProvider"],
                )

        try:
            run(method)
        except ValueError as err:  # histograms of a constant tensor ("too many bins for data range")
            if calibration_method == "minmax":
                raise
            logger.warning("%s calibration failed (%s); falling back to minmax ranges", calibration_method, err)
            run(quantization.CalibrationMethod.MinMax)
    logger.info("int8 QDQ model (u8 activations, s8 weights, %s calibration over %d batches)%s%s",
                calibration_method, len(feeds), f"; kept float: {', '.join(excluded)}" if excluded else "",
                describe(plan, samples))
    return int8_path


#: the ops dynamic quantization rewrites by default: the Linear layers of transformer graphs (MatMul with a
#: constant weight; ``Gemm`` is left in float, onnxruntime has no dynamic int8 Gemm) and embedding lookups
DYNAMIC_OP_TYPES = ("MatMul", "Gather")


def quantize_onnx_dynamic(fp32_path: str | Path, int8_path: str | Path, *, per_channel: bool = True,
                          op_types: Sequence[str] = DYNAMIC_OP_TYPES, preprocess: bool = True) -> Path:
    """Quantize a float ONNX model's weights to int8; activations are quantized at run time, per batch.

    No calibration is needed: each ``MatMul`` becomes ``DynamicQuantizeLinear`` + ``MatMulInteger`` (fused by
    onnxruntime into ``DynamicQuantizeMatMul``), which suits Linear-heavy transformer graphs. For convolutional
    networks use :func:`quantize_onnx_static`: dynamic int8 convolutions are slower than fp32 on x86.

    Args:
        fp32_path: the float model.
        int8_path: where the quantized model is written.
        per_channel: one weight scale per output column (more accurate, same speed).
        op_types: the op types to quantize (``MatMul`` weights, ``Gather`` embedding tables, ...).
        preprocess: run onnxruntime's shape inference and graph optimisation first (recommended).

    Returns:
        ``int8_path``.
    """
    quantization = require("onnxruntime.quantization", purpose="int8 dynamic quantization of ONNX models")
    unknown = sorted(set(op_types) - set(quantization.registry.IntegerOpsRegistry))
    if unknown:
        raise ConfigError(f"op_types={list(op_types)}: onnxruntime cannot quantize {unknown} dynamically; choose from "
                          f"{sorted(quantization.registry.IntegerOpsRegistry)}")
    int8_path = Path(int8_path)
    with tempfile.TemporaryDirectory(prefix="oarkit-dq-") as tmp, quiet_loggers("onnxruntime"):
        source = _preprocessed(Path(fp32_path), Path(tmp)) if preprocess else Path(fp32_path)
        quantization.quantize_dynamic(str(source), str(int8_path), op_types_to_quantize=list(op_types),
                                      per_channel=per_channel, weight_type=quantization.QuantType.QInt8,
                                      extra_options={"MatMulConstBOnly": True})
    logger.info("dynamic int8 model (s8 weights of %s) written to %s", "/".join(op_types), int8_path)
    return int8_path
