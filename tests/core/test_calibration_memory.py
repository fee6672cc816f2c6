"""int8 calibration within a memory budget: onnxruntime's histogram calibrators keep every intermediate output
until the end, so a large model over many images is collected chunk by chunk instead; the result is the same
int8 model (minmax: exactly; percentile: the same scales within a histogram bin)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch
from onnx import numpy_helper

from oarkit.core.quant import calibration_memory, quantize_onnx_static


@pytest.fixture(scope="module")
def conv_model(tmp_path_factory):
    path = tmp_path_factory.mktemp("calib") / "model.onnx"
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(8, 8, 3),
                              torch.nn.ReLU()).eval()
    torch.onnx.export(net, (torch.randn(1, 3, 16, 16),), str(path), input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "batch"}}, dynamo=False)
    return path


def _batches(n: int = 6, size: int = 4) -> list[list[np.ndarray]]:
    rng = np.random.default_rng(0)
    return [[rng.normal(size=(size, 3, 16, 16)).astype(np.float32) * (1 + i)] for i in range(n)]


def _scales(path) -> dict[str, float]:
    model = onnx.load(str(path))
    return {t.name: float(numpy_helper.to_array(t).ravel()[0]) for t in model.graph.initializer
            if t.name.endswith("_scale") and numpy_helper.to_array(t).size == 1}


def test_the_plan_splits_only_what_does_not_fit(conv_model):
    samples = {"x": np.concatenate([b[0] for b in _batches()])}  # 6 batches of 4
    whole = calibration_memory.calibration_plan(conv_model, samples, 4)
    assert whole.chunk is None and whole.batch_size == 4 and whole.sample_bytes > 16 * 16 * 8 * 4
    tight = calibration_memory.calibration_plan(conv_model, samples, 4, budget=whole.sample_bytes * 5)
    assert (tight.batch_size, tight.chunk) == (4, 1)  # one batch of 4 per collection
    tiny = calibration_memory.calibration_plan(conv_model, samples, 4, budget=whole.sample_bytes)
    assert (tiny.batch_size, tiny.chunk) == (1, 1)
    assert len(calibration_memory.equal_batches(samples, 1)) == 24


@pytest.mark.parametrize("method", ["minmax", "percentile"])
def test_a_chunked_calibration_gives_the_int8_model_of_one_collection(conv_model, tmp_path, monkeypatch, method):
    whole = quantize_onnx_static(conv_model, tmp_path / "whole.onnx", _batches(), input_names=["x"],
                                 calibration_method=method, float_stem=False)
    sample = calibration_memory.calibration_plan(conv_model, {"x": _batches()[0][0]}, 4).sample_bytes
    monkeypatch.setattr(calibration_memory, "CALIBRATION_BUDGET_BYTES", sample * 5)
    chunked = quantize_onnx_static(conv_model, tmp_path / "chunked.onnx", _batches(), input_names=["x"],
                                   calibration_method=method, float_stem=False)
    a, b = _scales(whole), _scales(chunked)
    assert a.keys() == b.keys() and len(a) >= 3
    for name in a:
        if method == "minmax":
            assert a[name] == b[name], name
        else:  # the first collection's bin width is finer than one collection's: within 1 %
            assert b[name] == pytest.approx(a[name], rel=0.01), name


def test_calibration_batches_of_several_shapes_are_refused_by_name(conv_model, tmp_path):
    from oarkit.core.errors import ConfigError

    rng = np.random.default_rng(0)
    batches = [[rng.normal(size=(2, 3, 16, w)).astype(np.float32)] for w in (16, 24)]
    with pytest.raises(ConfigError, match="needs inputs of one shape.*onnx_int8_dynamic"):
        quantize_onnx_static(conv_model, tmp_path / "x.onnx", batches, input_names=["x"])
