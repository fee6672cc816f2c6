"""The input spec of a model card: what one modality's inputs look like to the registered weights.

A card carries one of these (or none): an image model's channels, size, normalisation and eval crop; a text
model's longest sequence and its tokenizer; a detector's size, stride multiple and normalisation. Nothing here
has another modality's defaults: a text card has no mean, a detector no crop.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class ImageInput:
    """The inputs of an image model (classifier, segmenter, recogniser).

    Attributes:
        size: height and width the weights were trained or evaluated at.
        channels: input channels.
        mean, std: normalisation of the inputs, in [0, 1] pixel units.
        crop_pct: centre-crop fraction of the eval transform (1.0: no crop).
        interpolation: resize interpolation of the eval transform.
    """

    modality: ClassVar[str] = "image"

    size: tuple[int, int]
    channels: int = 3
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    crop_pct: float = 1.0
    interpolation: str = "bilinear"

    @property
    def input_size(self) -> tuple[int, int, int]:
        """``(channels, height, width)``."""
        return (self.channels, *self.size)


@dataclass(frozen=True)
class TextInput:
    """The inputs of a text model.

    Attributes:
        max_length: the longest token sequence the model embeds (its position table).
        tokenizer: where the weights' tokenizer lives (a Hugging Face hub id or a folder); empty when it is not
            published beside the weights (a run trains or names its own).
    """

    modality: ClassVar[str] = "text"

    max_length: int
    tokenizer: str = ""


@dataclass(frozen=True)
class DetectorInput:
    """The inputs of a detector (boxes or text regions): images resized to ``size`` whose sides must be multiples
    of ``stride_multiple``.

    Attributes:
        size: height and width the weights were evaluated at.
        stride_multiple: the multiple each side must be (32 for DB text detection and PP-YOLOE).
        mean, std: normalisation of the inputs, in [0, 1] pixel units.
    """

    modality: ClassVar[str] = "detector"

    size: tuple[int, int]
    stride_multiple: int = 32
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD


InputSpec = ImageInput | TextInput | DetectorInput


def input_spec_dict(spec: InputSpec | None) -> dict[str, Any] | None:
    """A JSON-friendly view of an input spec, with its ``modality``."""
    if spec is None:
        return None
    return {"modality": spec.modality, **dataclasses.asdict(spec)}
