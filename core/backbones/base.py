"""The contract every shared backbone keeps: a list of stage features and a description of each.

A backbone's ``forward(x)`` returns a list of feature maps, one per selected stage, shallow to deep. Beside it:

- ``feature_info``: one :class:`FeatureInfo` per returned feature, ``{"channels": C, "stride": S, "name": ...}``.
  ``stride`` is the input-to-feature reduction, an ``int`` when it is the same on both axes, else
  ``(height, width)`` (text recognizers keep width); ``name`` is the Paddle module that produced it
  (``"blocks3"``, ``"stage2"``, ``"bb_3_2"``), so a head ported from Paddle finds its inputs by Paddle's names.
- ``out_channels``: ``[f["channels"] for f in feature_info]`` (PaddleOCR's and PaddleDetection's name);
  ``feat_channels`` is the same list under PaddleSeg's name.
- ``out_indices`` (where offered): which of the stage features to return, 0-based over the full list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import torch
from torch import nn

Stride = int | tuple[int, int]


class FeatureInfo(TypedDict):
    """One returned feature: its channels, its stride from the input and the Paddle module that produced it."""

    channels: int
    stride: Stride
    name: str


class Backbone(nn.Module):
    """Base class of the shared backbones: keeps :attr:`feature_info` and selects the requested stages.

    A subclass builds its modules, calls :meth:`_set_stages` with the description of every stage it can return,
    and ends ``forward`` with ``return self._select(all_stage_features)``.
    """

    feature_info: list[FeatureInfo]
    out_indices: tuple[int, ...]

    def _set_stages(self, stages: Sequence[FeatureInfo], out_indices: Sequence[int] | None = None) -> None:
        """Record the stages and which of them ``forward`` returns (all when ``out_indices`` is None)."""
        if out_indices is None:
            out_indices = range(len(stages))
        out_indices = tuple(out_indices)
        bad = [i for i in out_indices if not 0 <= i < len(stages)]
        if bad or not out_indices or len(set(out_indices)) != len(out_indices):
            names = [s["name"] for s in stages]
            raise ValueError(f"{type(self).__name__}: out_indices={list(out_indices)} must be distinct indices in "
                             f"0..{len(stages) - 1} of its stages {names}")
        self.out_indices = out_indices
        self.feature_info = [FeatureInfo(**stages[i]) for i in out_indices]

    def _select(self, feats: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [feats[i] for i in self.out_indices]

    @property
    def out_channels(self) -> list[int]:
        """Channels of each returned feature."""
        return [f["channels"] for f in self.feature_info]

    @property
    def feat_channels(self) -> list[int]:
        """PaddleSeg's name for :attr:`out_channels`."""
        return self.out_channels

    @property
    def strides(self) -> list[Stride]:
        """Stride of each returned feature."""
        return [f["stride"] for f in self.feature_info]


def stage(channels: int, stride: Stride, name: str) -> FeatureInfo:
    """A :class:`FeatureInfo` entry (a short spelling for the backbones' stage tables)."""
    return FeatureInfo(channels=int(channels), stride=stride, name=name)
