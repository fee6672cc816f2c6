"""Reading ``.pdparams`` checkpoints without PaddlePaddle.

``paddle.save(layer.state_dict(), path)`` writes a pickle (protocol 2-4) of a dict mapping structured names
(``conv1.conv.weight``) to numpy arrays. Variants found in the wild and handled here:

- an extra ``StructuredToParameterName@@`` entry mapping each structured name to its static name
  (``conv2d_0.w_0``), written by ``paddle.save`` of a state dict since Paddle 2.0;
- values pickled as ``(static_name, ndarray)`` tuples (Paddle's reducer for live tensors inside other objects);
- tensors larger than 1 GiB split into ``name@@.0``, ``name@@.1``, ... with an ``UnpackBigParamInfor@@`` entry
  giving the original shape (protocols 2 and 3 cannot hold them whole);
- arrays pickled through ``numpy.core.multiarray._reconstruct`` (numpy 1.x) or ``numpy._core...`` (numpy 2.x).

A checkpoint is data: the unpickler admits numpy array reconstruction and plain containers only, so a file
that tries to import anything else (``os.system``, ``builtins.eval``, a class with a ``__reduce__`` payload)
is refused before any of it runs.
"""

from __future__ import annotations

import io
import logging
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.errors import DataError

logger = logging.getLogger(__name__)

NAME_TABLE_KEY = "StructuredToParameterName@@"
BIG_PARAM_KEY = "UnpackBigParamInfor@@"  # sic: Paddle's spelling
_NUMPY_2 = int(np.__version__.split(".")[0]) >= 2

# (module, name) pairs a checkpoint may import. Each one builds data and runs nothing else: numpy's array and
# scalar reconstruction, a dtype, and the containers a state dict is made of.
SAFE_GLOBALS = frozenset({
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"),  # numpy's protocol-5 array path
    ("numpy._core.numeric", "_frombuffer"),
    ("numpy", "ndarray"),
    ("numpy", "dtype"),
    ("collections", "OrderedDict"),
    ("builtins", "tuple"),  # Paddle pickles a live tensor as tuple(((name, array),))
    ("builtins", "list"),
    ("builtins", "dict"),
    ("_codecs", "encode"),  # how protocol 2 stores bytes (an array's raw data) under Python 3; codecs only convert
})


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds numpy arrays and plain containers, and refuses every other global."""

    def __init__(self, file: io.BufferedIOBase, *, source: str = "checkpoint") -> None:
        super().__init__(file, encoding="latin1")  # Python 2 pickles: numpy's byte buffers arrive as str
        self.source = source

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in SAFE_GLOBALS:
            if module.startswith("numpy.core.") and _NUMPY_2:
                module = "numpy._core." + module.removeprefix("numpy.core.")  # numpy 2 warns on the old path
            return super().find_class(module, name)
        raise DataError(f"{self.source}: the global {module}.{name} is refused: a checkpoint is data, loading it "
                        "never runs code. Only numpy arrays and plain containers are read; if this file is a "
                        "genuine Paddle checkpoint, re-save it with paddle.save(layer.state_dict(), path)")

    def persistent_load(self, pid: Any) -> Any:
        raise DataError(f"{self.source}: persistent object {pid!r} is refused: a checkpoint is data, loading it "
                        "never runs code")


def restricted_load(data: bytes | Path | str, *, source: str | None = None) -> Any:
    """Unpickle ``data`` (bytes or a file path) with :class:`RestrictedUnpickler`.

    Raises:
        DataError: the pickle names a refused global, or is not a pickle at all.
    """
    if isinstance(data, (str, Path)):
        source = source or str(data)
        try:
            data = Path(data).read_bytes()
        except OSError as err:
            raise DataError(f"cannot read {data}: {err}") from err
    source = source or "checkpoint"
    try:
        return RestrictedUnpickler(io.BytesIO(data), source=source).load()
    except DataError:
        raise
    except Exception as err:  # a truncated or foreign file: UnpicklingError, EOFError, ValueError, ...
        raise DataError(f"{source} is not a readable Paddle pickle ({type(err).__name__}: {err})") from err


def _as_array(value: Any) -> np.ndarray | None:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        value = value[1]  # (static_name, ndarray)
    if isinstance(value, np.ndarray):
        return value
    return None


def _flatten(obj: Mapping[str, Any], prefix: str, out: dict[str, np.ndarray], source: str) -> None:
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if key in (NAME_TABLE_KEY, BIG_PARAM_KEY):
            continue
        array = _as_array(value)
        if array is not None:
            if array.dtype == object:
                raise DataError(f"{source}: {name} is an array of Python objects, not numbers")
            out[name] = array
        elif isinstance(value, Mapping):
            _flatten(value, f"{name}.", out, source)
        else:  # step counters, learning rates and other scalars that travel with some checkpoints
            logger.debug("%s: skipping %s (%s), not a tensor", source, name, type(value).__name__)


def _join_big_params(state: dict[str, np.ndarray], info: Mapping[str, Any], source: str) -> None:
    for name, spec in info.items():
        try:
            parts = [state.pop(part) for part in spec["slices"]]
        except KeyError as err:
            raise DataError(f"{source}: slice {err} of the split tensor {name!r} is missing") from err
        state[name] = np.concatenate([p.reshape(-1) for p in parts]).reshape(tuple(spec["OriginShape"]))


def read_pdparams(path: str | Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.pdparams`` file, by structured name (``conv1.conv.weight``), in file order.

    Nested dicts are flattened with dotted names; non-tensor entries (step counters) are skipped.

    Raises:
        DataError: the file is missing, not a pickle, holds no dict of tensors, or tries to run code.
    """
    path = Path(path)
    obj = restricted_load(path)
    if not isinstance(obj, Mapping):
        raise DataError(f"{path} holds a {type(obj).__name__}, not a dict of tensors (a Paddle state dict)")
    state: dict[str, np.ndarray] = {}
    _flatten(obj, "", state, str(path))
    if isinstance(obj.get(BIG_PARAM_KEY), Mapping):
        _join_big_params(state, obj[BIG_PARAM_KEY], str(path))
    if not state:
        raise DataError(f"{path} holds no tensors")
    return state


def static_names(path: str | Path) -> dict[str, str]:
    """The ``StructuredToParameterName@@`` table of a ``.pdparams`` file (structured -> static name), or ``{}``."""
    obj = restricted_load(path)
    table = obj.get(NAME_TABLE_KEY) if isinstance(obj, Mapping) else None
    return dict(table) if isinstance(table, Mapping) else {}
