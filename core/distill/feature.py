"""Feature imitation (``distill=feature``): the student's features at named layers regress the teacher's.

Each pair ``[student_layer, teacher_layer]`` is matched by mean squared error after an adapter maps the
student's features to the teacher's shape: a 1x1 convolution for ``[B, C, H, W]`` maps (bilinear resizing where
the sides differ), a linear layer for ``[B, N, C]`` or ``[B, C]`` features, nothing where the shapes agree
(FitNets, Romero et al. 2015; the plain-MSE form of PaddleDetection's feature distillation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from oarkit.core.errors import ConfigError


def feature_tensor(output: Any, layer: str) -> torch.Tensor:
    """The feature tensor of a layer's output (the first tensor of a tuple or list, ``last_hidden_state`` of a
    transformers output)."""
    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "last_hidden_state"):
        return output.last_hidden_state
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    raise ConfigError(f"distill.pairs: layer {layer!r} returned {type(output).__name__}, not a tensor; name a layer "
                      "whose output is a feature tensor")


def parse_pairs(pairs: Any) -> list[tuple[str, str]]:
    """``[[student_layer, teacher_layer], ...]`` as tuples, or a :class:`ConfigError` saying the expected form."""
    out = []
    for pair in pairs or []:
        if isinstance(pair, str) or len(pair) != 2 or not all(isinstance(x, str) and x for x in pair):
            raise ConfigError(f"distill.pairs: {pair!r} is not a [student_layer, teacher_layer] pair of module names "
                              "(e.g. distill.pairs='[[backbone.blocks.3,backbone.blocks.5]]')")
        out.append((str(pair[0]), str(pair[1])))
    return out


def _adapter(student: torch.Tensor, teacher: torch.Tensor, pair: tuple[str, str]) -> nn.Module:
    if student.ndim != teacher.ndim or student.ndim not in (2, 3, 4):
        raise ConfigError(f"distill.pairs {list(pair)}: the student's features have shape {list(student.shape)} and "
                          f"the teacher's {list(teacher.shape)}; pair layers whose outputs are both [B, C, H, W], "
                          "[B, N, C] or [B, C]")
    if student.ndim == 4:
        cs, ct = student.shape[1], teacher.shape[1]
        return nn.Identity() if cs == ct else nn.Conv2d(cs, ct, 1)
    if student.ndim == 3 and student.shape[1] != teacher.shape[1]:
        raise ConfigError(f"distill.pairs {list(pair)}: {student.shape[1]} student tokens against "
                          f"{teacher.shape[1]} teacher tokens; pair layers with as many tokens")
    cs, ct = student.shape[-1], teacher.shape[-1]
    return nn.Identity() if cs == ct else nn.Linear(cs, ct)


class FeatureImitation(nn.Module):
    """The adapters of the pairs and their loss; :meth:`build` sizes the adapters from one forward's features."""

    def __init__(self, pairs: Sequence[tuple[str, str]]) -> None:
        super().__init__()
        self.pairs = list(pairs)
        self.adapters = nn.ModuleList()

    def build(self, student: dict[str, Any], teacher: dict[str, Any]) -> None:
        """Create one adapter per pair from the features of a forward (``layer name -> output``)."""
        self.adapters = nn.ModuleList(
            _adapter(feature_tensor(student[s], s), feature_tensor(teacher[t], t), (s, t)) for s, t in self.pairs)

    def forward(self, student: dict[str, Any], teacher: dict[str, Any]) -> torch.Tensor:
        """The mean over pairs of the MSE between the adapted student features and the teacher's."""
        terms = []
        for (s, t), adapter in zip(self.pairs, self.adapters, strict=True):
            if s not in student or t not in teacher:
                missing = s if s not in student else t
                raise ConfigError(f"distill.pairs: layer {missing!r} did not run in this forward; pair layers the "
                                  "model calls on every step")
            mapped = adapter(feature_tensor(student[s], s).float())
            target = feature_tensor(teacher[t], t).float().detach()
            if mapped.ndim == 4 and mapped.shape[-2:] != target.shape[-2:]:
                mapped = F.interpolate(mapped, size=target.shape[-2:], mode="bilinear", align_corners=False)
            terms.append(F.mse_loss(mapped, target))
        return torch.stack(terms).mean()
