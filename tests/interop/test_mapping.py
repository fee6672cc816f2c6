"""The declared Paddle -> torch mapping: renames, BatchNorm statistics, Linear layouts, and its one clear error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from torch import nn

from oarkit.core.errors import WeightsError
from oarkit.core.interop import PaddleMapping, apply_mapping


class Tiny(nn.Module):
    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 4, 3, bias=True)
        self.norm = nn.BatchNorm2d(4)
        self.proj = nn.Linear(4, 4)  # square: only the module type says it needs transposing
        self.head = nn.Linear(4, classes)


def _paddle_state(classes: int = 3, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.normal(size=s).astype(np.float32)  # noqa: E731
    return {"conv.weight": f(4, 3, 3, 3), "bn.weight": f(4), "bn.bias": f(4), "bn._mean": f(4),
            "bn._variance": np.abs(f(4)) + 0.5, "proj.weight": f(4, 4), "proj.bias": f(4),
            "fc.weight": f(4, classes), "fc.bias": f(classes), "aux.weight": f(2)}


MAPPING = PaddleMapping(
    renames=[(r"^conv\.", "stem."), (r"^bn\.", "norm."), lambda n: n.replace("fc.", "head.")],
    drop=(r"^aux\.",),
    zeros=(r"^stem\.bias$",),
    transforms=[(r"^head\.weight$", lambda w: w * 0.8)],
    source="a test family",
)


def test_every_rule_applies():
    model, state = Tiny(), _paddle_state()
    converted = apply_mapping(state, model, MAPPING)
    model.load_state_dict(converted, strict=False)
    np.testing.assert_array_equal(model.norm.running_mean.numpy(), state["bn._mean"])
    np.testing.assert_array_equal(model.norm.running_var.numpy(), state["bn._variance"])
    np.testing.assert_array_equal(model.proj.weight.detach().numpy(), state["proj.weight"].T)
    np.testing.assert_allclose(model.head.weight.detach().numpy(), state["fc.weight"].T * 0.8)
    np.testing.assert_array_equal(model.head.bias.detach().numpy(), state["fc.bias"])  # the bias is not scaled
    assert torch.count_nonzero(model.stem.bias) == 0
    assert "norm.num_batches_tracked" not in converted  # torch's own counter keeps its value


def test_one_error_lists_unmapped_missing_and_mis_shaped_tensors():
    state = _paddle_state()
    state["extra.weight"] = np.zeros(5, np.float32)
    state["bn.weight"] = np.zeros(7, np.float32)
    del state["proj.bias"]
    with pytest.raises(WeightsError) as err:
        apply_mapping(state, Tiny(), MAPPING, source="ckpt.pdparams")
    message = str(err.value)
    assert "ckpt.pdparams does not map onto Tiny (Paddle names from a test family)" in message
    assert "bn.weight [7] -> norm.weight: expected [4]" in message
    assert "proj.bias [4]" in message and "without a Paddle value" in message
    assert "extra.weight [5]" in message and "left unmapped" in message


def test_a_head_of_another_size_is_an_error_unless_asked_for():
    state = _paddle_state(classes=10)
    with pytest.raises(WeightsError, match="only the head differs"):
        apply_mapping(state, Tiny(classes=3), MAPPING, head=("head",))
    model = Tiny(classes=3)
    fresh = model.head.weight.detach().clone()
    converted = apply_mapping(state, model, MAPPING, head=("head",), reset_head=True)
    assert not any(k.startswith("head.") for k in converted)
    model.load_state_dict(converted, strict=False)
    assert torch.equal(model.head.weight, fresh)
    np.testing.assert_array_equal(model.stem.weight.detach().numpy(), state["conv.weight"])


def test_two_paddle_tensors_for_one_target_are_an_error():
    mapping = dataclasses.replace(MAPPING, renames=[*MAPPING.renames, (r"^aux_twin\.", "stem.")])
    state = {**_paddle_state(), "aux_twin.weight": np.zeros((4, 3, 3, 3), np.float32)}
    with pytest.raises(WeightsError, match="both map to stem.weight"):
        apply_mapping(state, Tiny(), mapping)


def test_bfloat16_tensors_stored_as_raw_bits_are_widened():
    state = _paddle_state()
    exact = np.array([1.5, -2.0, 0.15625, 3.0], np.float32)  # values bfloat16 holds exactly
    state["bn.weight"] = (exact.view(np.uint32) >> 16).astype(np.uint16)  # how paddle.save stores bf16
    model = Tiny()
    model.load_state_dict(apply_mapping(state, model, MAPPING), strict=False)
    np.testing.assert_array_equal(model.norm.weight.detach().numpy(), exact)
