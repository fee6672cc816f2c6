"""Reading Paddle inference models without Paddle, on files written byte by byte as Paddle writes them.

(Files written by Paddle itself are read in test_paddle_parity_clas.py.)
"""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from oarkit.core.errors import DataError
from oarkit.core.interop.inference_model import decode_tensor_desc, read_inference_model, read_tensor_stream

FP32, INT64 = 5, 3
DENSE_TENSOR, FEED_MINIBATCH = 7, 9


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, value: int | bytes) -> bytes:
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _tensor_desc(data_type: int, dims: tuple[int, ...], packed: bool = False) -> bytes:
    if packed:
        return _field(1, data_type) + _field(2, b"".join(_varint(d) for d in dims))
    return _field(1, data_type) + b"".join(_field(2, d) for d in dims)


def _tensor(array: np.ndarray, data_type: int, lod: list[list[int]] | None = None) -> bytes:
    desc = _tensor_desc(data_type, array.shape)
    lod = lod or []
    out = struct.pack("<IQ", 0, len(lod))
    for level in lod:
        out += struct.pack("<Q", 8 * len(level)) + struct.pack(f"<{len(level)}Q", *level)
    return out + struct.pack("<Ii", 0, len(desc)) + desc + array.astype(array.dtype.newbyteorder("<")).tobytes()


def _var(name: str, var_type: int, data_type: int, dims: tuple[int, ...], persistable: bool) -> bytes:
    dense = _field(1, _tensor_desc(data_type, dims))
    return _field(1, name.encode()) + _field(2, _field(1, var_type) + _field(3, dense)) + _field(3, int(persistable))


def _program(variables: list[bytes]) -> bytes:
    block = _field(1, 0) + _field(2, 0) + b"".join(_field(3, v) for v in variables)
    return _field(1, block)


PARAMS = {  # static name -> (structured name, array, data type)
    "conv2d_0.w_0": ("backbone.conv.weight", np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2), FP32),
    "batch_norm_0.w_1": ("backbone.bn._mean", np.array([0.5, -1.5], np.float32), FP32),
    "linear_0.w_0": ("head.fc.weight", np.ones((2, 4), np.float32), FP32),
    "embedding_0.idx": ("head.ids", np.array([3, -2], np.int64), INT64),
}


def _write_model(folder: Path, *, program: str = "pdmodel", info: bool = True, lod: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    stream = b"".join(_tensor(PARAMS[k][1], PARAMS[k][2], [[0, 1, 2]] if lod and i == 0 else None)
                      for i, k in enumerate(sorted(PARAMS)))
    (folder / "inference.pdiparams").write_bytes(stream)
    if program == "pdmodel":
        declared = [_var(k, DENSE_TENSOR, dt, a.shape, True) for k, (_, a, dt) in PARAMS.items()]  # unsorted
        declared += [_var("feed", FEED_MINIBATCH, FP32, (), True), _var("x", DENSE_TENSOR, FP32, (-1, 3), False)]
        (folder / "inference.pdmodel").write_bytes(_program(declared))
    elif program == "json":
        kinds = {FP32: "0.t_f32", INT64: "0.t_i64"}
        ops = [{"#": "p", "A": [0, 1, 1, k], "O": {"%": i, "TT": {"#": "0.t_dtensor",
                                                                    "D": [{"#": kinds[dt]}, list(a.shape), "NCHW"]}}}
               for i, (k, (_, a, dt)) in enumerate(PARAMS.items())]
        ops.append({"#": "1.data", "A": [], "O": []})
        (folder / "inference.json").write_text(json.dumps({"program": {"regions": [{"blocks": [{"ops": ops}]}]}}))
    if info:
        names = {k: {"structured_name": s, "stop_gradient": False, "trainable": True}
                 for k, (s, _, _) in PARAMS.items()}
        names["batch_norm_9.w_0"] = {"structured_name": "head.pruned.weight"}  # a training-only branch
        (folder / "inference.pdiparams.info").write_bytes(pickle.dumps(names, protocol=2))
    return folder


@pytest.mark.parametrize("program", ["pdmodel", "json"])
def test_reads_tensors_by_structured_name(tmp_path: Path, program: str):
    folder = _write_model(tmp_path / "model", program=program, lod=True)
    for given in (folder, folder / "inference", folder / "inference.pdiparams"):
        model = read_inference_model(given)
        state = model.state_dict()
        assert list(model.params) == sorted(PARAMS)
        for structured, array, _ in PARAMS.values():
            np.testing.assert_array_equal(state[structured], array)
            assert state[structured].dtype == array.dtype


def test_without_info_the_static_names_remain(tmp_path: Path):
    state = read_inference_model(_write_model(tmp_path / "m", info=False)).state_dict()
    assert sorted(state) == sorted(PARAMS)


def test_packed_dims_and_negative_values_decode():
    assert decode_tensor_desc(_tensor_desc(FP32, (3, 1, 5), packed=True)) == (FP32, (3, 1, 5))
    assert decode_tensor_desc(_tensor_desc(FP32, (-1, 7))) == (FP32, (-1, 7))


def test_bfloat16_tensors_are_read_as_float32():
    exact = np.array([[1.5, -2.0], [0.15625, 3.0]], np.float32)
    bits = (exact.view(np.uint32) >> 16).astype(np.uint16)
    desc = _tensor_desc(22, bits.shape)
    data = struct.pack("<IQ", 0, 0) + struct.pack("<Ii", 0, len(desc)) + desc + bits.tobytes()
    (read,) = read_tensor_stream(data)
    assert read.dtype == np.float32
    np.testing.assert_array_equal(read, exact)


def test_truncated_or_overlong_streams_are_errors():
    data = _tensor(np.ones((2, 3), np.float32), FP32)
    assert len(read_tensor_stream(data + data)) == 2
    with pytest.raises(DataError, match="truncated parameter file"):
        read_tensor_stream(data[:-1])
    with pytest.raises(DataError, match="truncated parameter file"):
        read_tensor_stream(data + b"\x00\x00")  # two stray bytes are not a tensor header
    with pytest.raises(DataError, match="version 7"):
        read_tensor_stream(struct.pack("<IQ", 7, 0) + data[12:])


def test_a_program_of_another_model_is_refused(tmp_path: Path):
    folder = _write_model(tmp_path / "m")
    other = [_var(k, DENSE_TENSOR, dt, (9, *a.shape[1:]), True) for k, (_, a, dt) in PARAMS.items()]
    (folder / "inference.pdmodel").write_bytes(_program(other))
    with pytest.raises(DataError, match="do not belong together"):
        read_inference_model(folder)
    (folder / "inference.pdmodel").write_bytes(_program(other[:2]))
    with pytest.raises(DataError, match="holds 4 tensors but .* declares 2"):
        read_inference_model(folder)


def test_a_malicious_info_file_is_refused(tmp_path: Path):
    import os

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'pwned'}",)

    folder = _write_model(tmp_path / "m")
    (folder / "inference.pdiparams.info").write_bytes(pickle.dumps({"conv2d_0.w_0": Payload()}, protocol=2))
    with pytest.raises(DataError, match="refused"):
        read_inference_model(folder)
    assert not (tmp_path / "pwned").exists()


def test_missing_files_are_named(tmp_path: Path):
    with pytest.raises(DataError, match="no Paddle parameter file"):
        read_inference_model(tmp_path / "nothing")
    folder = _write_model(tmp_path / "m", program="none", info=False)
    with pytest.raises(DataError, match="cannot be named"):
        read_inference_model(folder)
