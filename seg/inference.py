"""Inference over whole images or sliding windows, with multi-scale and flip test-time augmentation.

As PaddleSeg's ``paddleseg/core/infer.py``: a sliding window covers the image with crops at a stride, the last
row and column shifted back inside the image, and the overlapping logits averaged. With several scales or flips
the softmax probabilities are averaged at the input resolution; the result is then returned as their log, so
every path returns logits whose argmax is the prediction and whose softmax is the (averaged) probability.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from oarkit.core.errors import ConfigError, did_you_mean

MODES = ("whole", "slide")
Forward = Callable[[torch.Tensor], Any]


def main_logits(outputs: Any, size: Sequence[int] | None = None) -> torch.Tensor:
    """The main logits of a model's raw outputs (a list whose first item they are, a tensor, or ``.logits``),
    resized bilinearly to ``size`` when they have another size."""
    if isinstance(outputs, (list, tuple)):
        outputs = outputs[0]
    if isinstance(outputs, dict):
        outputs = outputs["out"]
    logits = getattr(outputs, "logits", outputs)
    if size is not None and tuple(logits.shape[-2:]) != tuple(size):
        logits = F.interpolate(logits, size=tuple(size), mode="bilinear", align_corners=False)
    return logits


@dataclass
class InferenceConfig:
    """How validation and prediction run the model (written into meta.json and deploy.yaml).

    Attributes:
        mode: ``"whole"`` (one forward pass per image) or ``"slide"`` (windows of ``crop_size`` at ``stride``).
        crop_size: the window ``[height, width]`` of sliding inference.
        stride: the window step ``[height, width]``; default two thirds of the window.
        scales: image scales whose probabilities are averaged (``[1.0]``: none).
        flip: also average the horizontally flipped image.
    """

    mode: str = "whole"
    crop_size: list[int] | None = None
    stride: list[int] | None = None
    scales: list[float] = field(default_factory=lambda: [1.0])
    flip: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"inference mode {self.mode!r} is not one of {MODES}.{did_you_mean(self.mode, MODES)}")
        if self.mode == "slide" and not self.crop_size:
            raise ConfigError("sliding-window inference needs a crop_size [height, width]")
        if not self.scales or min(self.scales) <= 0:
            raise ConfigError(f"inference scales {self.scales} must be positive, e.g. [0.75, 1.0, 1.25]")
        self.crop_size = _pair(self.crop_size)
        self.stride = _pair(self.stride) or ([max(1, c * 2 // 3) for c in self.crop_size] if self.crop_size else None)
        self.scales = [float(s) for s in self.scales]

    @property
    def augmented(self) -> bool:
        return self.flip or self.scales != [1.0]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pair(value: int | Sequence[int] | None) -> list[int] | None:
    if value is None:
        return None
    values = [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]
    if len(values) != 2 or min(values) <= 0:
        raise ConfigError(f"{value!r} must be a positive int or [height, width]")
    return values


def fixed_input_size(forward: Forward) -> tuple[int, int] | None:
    """The (height, width) an exported model was traced at, when its graph fixes it (a ``DeployedModel``)."""
    manifest = getattr(forward, "manifest", None)
    shape = list(manifest.inputs[0].shape) if manifest is not None and manifest.inputs else []
    return (shape[2], shape[3]) if len(shape) == 4 and all(isinstance(s, int) for s in shape[2:]) else None


def run_model(forward: Forward, images: torch.Tensor) -> torch.Tensor:
    """Main logits of ``forward(images)`` at the images' size; a fixed-size export sees them resized to its size."""
    size = fixed_input_size(forward)
    if size is not None and tuple(images.shape[2:]) != size:
        return main_logits(forward(F.interpolate(images, size=size, mode="bilinear", align_corners=False)),
                           images.shape[2:])
    return main_logits(forward(images), images.shape[2:])


def slide_inference(forward: Forward, images: torch.Tensor, crop_size: Sequence[int],
                    stride: Sequence[int]) -> torch.Tensor:
    """Logits of ``images`` from overlapping ``crop_size`` windows at ``stride``, averaged where they overlap.

    An image no larger than the window is one window: the result equals whole-image inference.
    """
    n, _, h, w = images.shape
    crop_h, crop_w = min(crop_size[0], h), min(crop_size[1], w)
    stride_h, stride_w = stride
    rows = max(math.ceil((h - crop_h) / stride_h), 0) + 1
    cols = max(math.ceil((w - crop_w) / stride_w), 0) + 1
    total: torch.Tensor | None = None
    count = images.new_zeros((1, 1, h, w))
    for r in range(rows):
        for c in range(cols):
            y2, x2 = min(r * stride_h + crop_h, h), min(c * stride_w + crop_w, w)
            y1, x1 = max(y2 - crop_h, 0), max(x2 - crop_w, 0)
            logits = run_model(forward, images[:, :, y1:y2, x1:x2]).float()
            if total is None:
                total = logits.new_zeros((n, logits.shape[1], h, w))
            total[:, :, y1:y2, x1:x2] += logits
            count[:, :, y1:y2, x1:x2] += 1
    return total / count


def _single(forward: Forward, images: torch.Tensor, config: InferenceConfig) -> torch.Tensor:
    if config.mode == "slide":
        return slide_inference(forward, images, config.crop_size, config.stride)
    return run_model(forward, images).float()


@torch.no_grad()
def infer(forward: Forward, images: torch.Tensor, config: InferenceConfig | None = None) -> torch.Tensor:
    """Logits (N, C, H, W) of ``images`` at their own resolution, under ``config`` (default: whole image).

    Args:
        forward: the model (or any callable from images to raw outputs, e.g. an ONNX Runtime session wrapper).
        images: normalised images (N, 3, H, W).
        config: the inference mode and test-time augmentation.
    """
    config = config or InferenceConfig()
    if not config.augmented:
        return _single(forward, images, config)
    size = images.shape[2:]
    probs: torch.Tensor | None = None
    for scale in config.scales:
        scaled = images if scale == 1.0 else F.interpolate(
            images, size=(max(1, round(size[0] * scale)), max(1, round(size[1] * scale))), mode="bilinear",
            align_corners=False)
        views = [scaled, scaled.flip(-1)] if config.flip else [scaled]
        for i, view in enumerate(views):
            logits = _single(forward, view, config)
            if i == 1:
                logits = logits.flip(-1)
            p = F.interpolate(logits, size=size, mode="bilinear", align_corners=False).softmax(dim=1)
            probs = p if probs is None else probs + p
    return (probs / (len(config.scales) * (2 if config.flip else 1))).clamp(min=1e-12).log()
