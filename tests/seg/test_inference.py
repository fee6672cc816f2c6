"""Whole-image, sliding-window and test-time-augmented inference."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from oarkit.core import create_model
from oarkit.core.errors import ConfigError
from oarkit.seg import InferenceConfig, infer, slide_inference


class Pointwise(nn.Module):
    """A 1x1 convolution: its output at a pixel does not depend on the window, so sliding equals whole."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [self.conv(x)]


def test_slide_equals_whole_when_the_image_fits():
    torch.manual_seed(0)
    model = create_model("seg/pp_liteseg_stdc1", num_classes=3).eval()
    x = torch.randn(2, 3, 64, 96)
    whole = infer(model, x)
    slide = infer(model, x, InferenceConfig(mode="slide", crop_size=[64, 128], stride=[32, 32]))
    assert torch.equal(whole, slide) and whole.shape == (2, 3, 64, 96)


def test_overlapping_windows_average_to_whole_for_a_pointwise_model():
    model = Pointwise().eval()
    x = torch.randn(1, 3, 50, 70)
    whole = infer(model, x)
    slide = slide_inference(model, x, (32, 32), (20, 25))
    assert torch.allclose(whole, slide, atol=1e-5)


def test_flip_and_multi_scale():
    model = Pointwise().eval()
    x = torch.randn(1, 3, 16, 16)
    probs = model(x)[0].softmax(1)
    flipped = infer(model, x, InferenceConfig(flip=True))  # a pointwise model is flip-equivariant
    assert torch.allclose(flipped.exp(), probs, atol=1e-5)
    ms = infer(model, x, InferenceConfig(scales=[0.5, 1.0, 1.5], flip=True))
    assert ms.shape == (1, 4, 16, 16) and torch.allclose(ms.exp().sum(1), torch.ones(1, 16, 16), atol=1e-5)


def test_inference_config_errors():
    with pytest.raises(ConfigError, match="'whole'"):
        InferenceConfig(mode="wholes")
    with pytest.raises(ConfigError, match="crop_size"):
        InferenceConfig(mode="slide")
    assert InferenceConfig(mode="slide", crop_size=[60, 90]).stride == [40, 60]
