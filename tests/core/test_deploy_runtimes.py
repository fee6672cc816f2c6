"""Runtime options reach the engines."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from oarkit.core.deploy.runtimes import OnnxRuntime


def _identity_model(path: Path) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "identity", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9), path)
    return path


@pytest.mark.parametrize(("spinning", "entry"), [(False, "0"), (True, "1")])
def test_onnxruntime_spinning_option_reaches_the_session(tmp_path: Path, spinning: bool, entry: str):
    # Idle pool threads spin by default; spinning=False lets them sleep (they cost on shared CPUs).
    manifest = SimpleNamespace(runtime_options={})
    runtime = OnnxRuntime(_identity_model(tmp_path / "m.onnx"), manifest, threads=2, spinning=spinning)
    options = runtime.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == entry
    assert options.intra_op_num_threads == 2
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    np.testing.assert_array_equal(runtime.run([x])[0], x)
