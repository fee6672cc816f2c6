"""Reading .pdparams without Paddle: the layouts Paddle writes, and refusing pickles that would run code."""

from __future__ import annotations

import os
import pickle
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from oarkit.core.errors import DataError
from oarkit.core.interop.paddlenlp import read_paddlenlp_dir
from oarkit.core.interop.pdparams import read_pdparams, restricted_load, static_names


def _state(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"conv1.conv.weight": rng.normal(size=(4, 3, 3, 3)).astype(np.float32),
            "conv1.bn._mean": rng.normal(size=4).astype(np.float32),
            "fc.weight": rng.normal(size=(8, 5)).astype(np.float32),
            "step": np.array(3, dtype=np.int64)}


@pytest.mark.parametrize("protocol", [2, 3, 4])
def test_reads_a_state_dict_with_its_name_table(tmp_path: Path, protocol: int):
    state = _state()
    saved = {**state, "StructuredToParameterName@@": {"conv1.conv.weight": "conv2d_0.w_0"}}
    path = tmp_path / "model.pdparams"
    path.write_bytes(pickle.dumps(saved, protocol=protocol))
    read = read_pdparams(path)
    assert list(read) == list(state)  # the name table is not a tensor; file order is kept
    for name, value in state.items():
        np.testing.assert_array_equal(read[name], value)
        assert read[name].dtype == value.dtype
    assert static_names(path) == {"conv1.conv.weight": "conv2d_0.w_0"}


def test_reads_tuples_ordered_dicts_nesting_and_split_tensors(tmp_path: Path):
    big = np.arange(10, dtype=np.float32).reshape(2, 5)
    saved = OrderedDict([
        ("a.weight", ("linear_0.w_0", np.ones((2, 2), np.float32))),  # Paddle's reducer for a live tensor
        ("model", {"b.bias": np.zeros(3, np.float32)}),
        ("big@@.0", big.reshape(-1)[:6]), ("big@@.1", big.reshape(-1)[6:]),
        ("UnpackBigParamInfor@@", {"big": {"OriginShape": (2, 5), "slices": ["big@@.0", "big@@.1"]}}),
        ("epoch", 7),
    ])
    path = tmp_path / "x.pdparams"
    path.write_bytes(pickle.dumps(saved, protocol=2))
    read = read_pdparams(path)
    assert set(read) == {"a.weight", "model.b.bias", "big"}
    np.testing.assert_array_equal(read["big"], big)
    np.testing.assert_array_equal(read["a.weight"], np.ones((2, 2)))


def test_reads_numpy_1_pickles(tmp_path: Path):
    # numpy 1.x writes numpy.core.multiarray._reconstruct; protocol 2 names globals as plain text lines.
    data = pickle.dumps({"w": np.arange(6, dtype=np.float32).reshape(2, 3)}, protocol=2)
    data = data.replace(b"numpy._core.multiarray\n", b"numpy.core.multiarray\n")
    assert b"numpy.core.multiarray\n_reconstruct" in data
    path = tmp_path / "old.pdparams"
    path.write_bytes(data)
    np.testing.assert_array_equal(read_pdparams(path)["w"], np.arange(6).reshape(2, 3))


class _Payload:
    """What a malicious checkpoint carries: unpickling it would call os.system."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


class _Eval:
    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return eval, (self.code,)


@pytest.mark.parametrize("protocol", [2, 4])
@pytest.mark.parametrize("kind", ["os.system", "builtins.eval", "nested in a state dict"])
def test_a_pickle_that_runs_code_is_refused_and_nothing_runs(tmp_path: Path, protocol: int, kind: str):
    sentinel = tmp_path / "pwned"
    if kind == "os.system":
        payload = _Payload(f"touch {sentinel}")
    elif kind == "builtins.eval":
        payload = _Eval(f"open({str(sentinel)!r}, 'w').write('x')")
    else:
        payload = {"conv.weight": np.zeros(2, np.float32), "evil": _Payload(f"touch {sentinel}")}
    path = tmp_path / "evil.pdparams"
    path.write_bytes(pickle.dumps(payload, protocol=protocol))
    with pytest.raises(DataError, match=r"refused: a checkpoint is data, loading it never runs code") as err:
        read_pdparams(path)
    assert "system" in str(err.value) or "eval" in str(err.value)  # the refused global is named
    assert not sentinel.exists()


def test_not_a_pickle_and_not_a_dict_are_clear_errors(tmp_path: Path):
    (tmp_path / "junk.pdparams").write_bytes(b"\x00\x01 not a pickle")
    with pytest.raises(DataError, match="not a readable Paddle pickle"):
        read_pdparams(tmp_path / "junk.pdparams")
    (tmp_path / "list.pdparams").write_bytes(pickle.dumps([np.zeros(1)]))
    with pytest.raises(DataError, match="not a dict of tensors"):
        read_pdparams(tmp_path / "list.pdparams")
    with pytest.raises(DataError, match="cannot read"):
        restricted_load(tmp_path / "missing.pdparams")


def test_object_arrays_are_refused(tmp_path: Path):
    path = tmp_path / "obj.pdparams"
    path.write_bytes(pickle.dumps({"w": np.array([1, "a"], dtype=object)}, protocol=2))
    with pytest.raises(DataError, match="Python objects"):
        read_pdparams(path)


@pytest.mark.parametrize("layout", ["config.json", "model_config.json"])
def test_paddlenlp_directory(tmp_path: Path, layout: str):
    import json

    state = {"ernie.embeddings.word_embeddings.weight": np.ones((10, 4), np.float32)}
    (tmp_path / "model_state.pdparams").write_bytes(pickle.dumps(state, protocol=2))
    config = {"hidden_size": 4, "num_hidden_layers": 2}
    if layout == "model_config.json":  # PaddleNLP < 2.5: the constructor's arguments
        config = {"init_class": "ErnieModel", "init_args": [config]}
    (tmp_path / layout).write_text(json.dumps(config))
    read_state, read_config = read_paddlenlp_dir(tmp_path)
    assert list(read_state) == list(state)
    assert read_config["hidden_size"] == 4 and read_config["num_hidden_layers"] == 2
    (tmp_path / layout).unlink()
    with pytest.raises(DataError, match="config.json nor model_config.json"):
        read_paddlenlp_dir(tmp_path)
