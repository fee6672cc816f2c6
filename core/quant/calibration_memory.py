"""Bounded memory for onnxruntime's static int8 calibration.

onnxruntime's histogram calibrators (percentile, entropy) keep every intermediate output of every calibration
batch until the reader is exhausted, and only then build their histograms: PP-OCRv6 small's detector on 256
pages of 640 px needed over 23 GB and was killed. :func:`calibration_plan` measures what one sample's
intermediate outputs take and picks a batch size and a number of batches per collection that stay within a
budget; :func:`collect_in_chunks` makes the calibrator build its histograms chunk by chunk (its collector merges
successive collections). A calibration that fits the budget in one collection runs exactly as onnxruntime runs it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: what the intermediate outputs of one calibration collection may take
CALIBRATION_BUDGET_BYTES = 2 * 2**30


@dataclass(frozen=True)
class CalibrationPlan:
    """``batch_size`` samples per calibration batch, ``chunk`` batches per collection (``None``: all at once)."""

    batch_size: int
    chunk: int | None
    sample_bytes: int


def intermediate_bytes(model_path: str | Path, feed: dict[str, np.ndarray]) -> int:
    """The bytes of every float node output of the model at ``model_path`` on ``feed`` (one inference)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(model_path))
    known = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in known:
                model.graph.output.append(onnx.ValueInfoProto(name=name))
                known.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    outputs = session.run(None, feed)
    return sum(int(o.nbytes) for o in outputs if isinstance(o, np.ndarray) and o.dtype.kind == "f")


def equal_batches(samples: dict[str, np.ndarray], batch_size: int) -> list[dict[str, np.ndarray]]:
    """The samples (each input's arrays stacked on axis 0) cut into equal batches of ``batch_size``: histogram
    calibrators stack the batches of one collection, so a short last batch is dropped (unless it is the only one)."""
    total = int(next(iter(samples.values())).shape[0])
    count = max(1, total // batch_size)
    return [{k: v[i * batch_size:(i + 1) * batch_size] for k, v in samples.items()} for i in range(count)]


def calibration_plan(model_path: str | Path, samples: dict[str, np.ndarray], batch_size: int,
                     budget: int | None = None) -> CalibrationPlan:
    """The batch size and batches per collection that keep a calibration over ``samples`` (each input's arrays
    stacked on axis 0), cut into ``batch_size`` batches, within ``budget`` (default
    :data:`CALIBRATION_BUDGET_BYTES`)."""
    budget = CALIBRATION_BUDGET_BYTES if budget is None else int(budget)
    sample = intermediate_bytes(model_path, {k: v[:1] for k, v in samples.items()})
    kept = sum(int(next(iter(b.values())).shape[0]) for b in equal_batches(samples, batch_size))
    if sample * kept <= budget:
        return CalibrationPlan(batch_size, None, sample)
    batch = max(1, min(batch_size, budget // max(sample, 1)))
    return CalibrationPlan(batch, max(1, budget // max(sample * batch, 1)), sample)


class _ListReader:
    def __init__(self, items: list[dict[str, np.ndarray]]) -> None:
        self.items = iter(items)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.items, None)


@contextlib.contextmanager
def collect_in_chunks(chunk: int | None) -> Iterator[None]:
    """While open, onnxruntime's histogram calibrators collect ``chunk`` batches at a time (``None``: unchanged)."""
    if chunk is None:
        yield
        return
    from onnxruntime.quantization.calibrate import HistogramCalibrater, MinMaxCalibrater

    # MinMax's own CalibMaxIntermediateOutputs drops the outputs it clears without their ranges (onnxruntime
    # 1.32), so both kinds are fed chunk by chunk here: each collection merges into the ranges or histograms so far
    originals = {cls: cls.collect_data for cls in (HistogramCalibrater, MinMaxCalibrater)}

    def chunked(original: Any) -> Any:
        def collect_data(self: Any, data_reader: Any) -> None:
            batches = iter(data_reader.get_next, None)
            while part := list(itertools.islice(batches, chunk)):
                original(self, _ListReader(part))

        return collect_data

    for cls, original in originals.items():
        cls.collect_data = chunked(original)
    try:
        yield
    finally:
        for cls, original in originals.items():
            cls.collect_data = original


def describe(plan: CalibrationPlan, samples: int) -> str:
    """One log line's worth on how a calibration was split."""
    if plan.chunk is None:
        return ""
    collections = math.ceil(math.ceil(samples / plan.batch_size) / plan.chunk)
    return (f"; intermediate outputs of {plan.sample_bytes / 2**20:.0f} MB per sample: batches of "
            f"{plan.batch_size}, histograms built over {collections} collections of at most {plan.chunk} batches")
