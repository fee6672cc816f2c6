"""Two Paddle names for one target: equal tensors are aliases (Paddle's nn.LSTM saves each weight twice) and map once;
different tensors are an inconsistent checkpoint and are refused, naming both Paddle names and the target."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from torch import nn

from oarkit.core.errors import WeightsError
from oarkit.core.interop import PaddleMapping, apply_mapping
from oarkit.ocr.models.sequence import LSTM_RENAMES


class Encoder(nn.Module):
    """The CRNN neck's layout (``neck.encoder.lstm`` in a recognizer): a two-layer bidirectional LSTM."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(6, 4, num_layers=2, bidirectional=True, batch_first=True)


class Neck(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()


def _paddle_lstm_state(seed: int = 0) -> dict[str, np.ndarray]:
    """What a Paddle ``encoder.lstm = nn.LSTM(6, 4, num_layers=2, direction="bidirect")`` saves: every tensor under
    its cell name (``encoder.lstm.0.cell_fw.weight_ih``) and its flat name (``encoder.lstm.weight_ih_l0``), as
    separate equal arrays (``paddle.save`` writes one array per name)."""
    rng = np.random.default_rng(seed)
    state = {}
    for layer in range(2):
        inputs = 6 if layer == 0 else 8
        for direction, suffix in (("fw", ""), ("bw", "_reverse")):
            for kind, shape in (("weight_ih", (16, inputs)), ("weight_hh", (16, 4)), ("bias_ih", (16,)),
                                ("bias_hh", (16,))):
                value = rng.normal(size=shape).astype(np.float32)
                state[f"encoder.lstm.{layer}.cell_{direction}.{kind}"] = value
                state[f"encoder.lstm.{kind}_l{layer}{suffix}"] = value.copy()
    return state


MAPPING = PaddleMapping(renames=LSTM_RENAMES, source="a test LSTM")


def test_equal_aliases_map_once_onto_the_lstm():
    state = _paddle_lstm_state()
    model = Neck()
    converted = apply_mapping(state, model, MAPPING)
    model.load_state_dict(converted)  # strict: every torch tensor has its value
    assert len(converted) == len(state) // 2
    lstm = model.encoder.lstm
    np.testing.assert_array_equal(lstm.weight_ih_l1_reverse.detach().numpy(), state["encoder.lstm.1.cell_bw.weight_ih"])
    np.testing.assert_array_equal(lstm.bias_hh_l0.detach().numpy(), state["encoder.lstm.bias_hh_l0"])


def test_aliases_with_different_values_are_an_inconsistent_checkpoint():
    state = _paddle_lstm_state()
    state["encoder.lstm.weight_hh_l1"] = state["encoder.lstm.weight_hh_l1"] + 1e-3
    with pytest.raises(WeightsError) as error:
        apply_mapping(state, Neck(), MAPPING)
    message = str(error.value)
    assert re.search(r"encoder\.lstm\.weight_hh_l1 and encoder\.lstm\.1\.cell_fw\.weight_hh both map to "
                     r"encoder\.lstm\.weight_hh_l1 but hold "
                     r"different values \(float32 \[16, 4\], max \|difference\| 0\.001\)", message), message
    assert "the checkpoint is inconsistent" in message
    assert message.count("both map to") == 1  # the equal aliases are not listed


@pytest.mark.parametrize("change", ["dtype", "shape"])
def test_aliases_of_another_dtype_or_shape_are_refused(change: str):
    state = _paddle_lstm_state()
    first = state["encoder.lstm.0.cell_fw.bias_ih"]
    twin = first.astype(np.float64) if change == "dtype" else np.concatenate([first, first[:1]])
    state["encoder.lstm.bias_ih_l0"] = twin
    expected = "float64 [16] vs float32 [16]" if change == "dtype" else "float32 [17] vs float32 [16]"
    message = f"both map to encoder.lstm.bias_ih_l0 but hold different values ({expected})"
    with pytest.raises(WeightsError, match=re.escape(message)):
        apply_mapping(state, Neck(), MAPPING)


def test_aliases_holding_nan_are_still_equal():
    state = _paddle_lstm_state()
    for name in ("encoder.lstm.0.cell_bw.bias_hh", "encoder.lstm.bias_hh_l0_reverse"):
        state[name][3] = np.nan
    converted = apply_mapping(state, Neck(), MAPPING)
    assert torch.isnan(converted["encoder.lstm.bias_hh_l0_reverse"][3])
