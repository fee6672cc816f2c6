"""Paddle releases behind ``pretrained=True``: the ``.pdparams`` converted once into the cache, then loaded.

``create_model(name, pretrained=True)`` on a card whose weights are a Paddle release (``format="pdparams"``):

1. the ``.pdparams`` comes from the cache, else it is downloaded (offline: an error naming the URL and the exact
   file to place), and its sha256 is checked (the registered digest, else the one recorded at first download);
2. it is converted once through the card's :class:`~oarkit.core.interop.PaddleMapping` onto the model as
   registered, into ``<file>.<model>.safetensors`` beside it; ``<file>.<model>.json`` records the source's sha256
   and the oarkit version that converted it, and a changed source or another oarkit version converts again;
3. the converted tensors load like any checkpoint (``num_classes`` other than the release's: a fresh head).

``pretrained="x.pdparams"`` (or a PaddleNLP model directory, or an inference model) converts the local
checkpoint onto the model in memory, every time: a user's own checkpoint may change between calls.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from oarkit.core.errors import WeightsError
from oarkit.core.interop.inference_model import PARAMS_SUFFIX
from oarkit.core.interop.mapping import PaddleMapping, apply_mapping

if TYPE_CHECKING:
    from oarkit.core.registry import ModelCard

logger = logging.getLogger(__name__)


def is_paddle_checkpoint(path: str | Path) -> bool:
    """Whether a local ``pretrained=`` path is a Paddle checkpoint: a ``.pdparams`` file, an inference model's
    ``.pdiparams``, or a PaddleNLP model directory (``model_state.pdparams`` beside its config)."""
    from oarkit.core.interop.paddlenlp import is_paddlenlp_dir

    path = Path(path)
    if path.suffix == ".pdparams" or path.name.endswith(PARAMS_SUFFIX):
        return True
    return path.is_dir() and not (path / "model.safetensors").exists() and is_paddlenlp_dir(path)


def paddle_mapping(card: ModelCard, location: str) -> PaddleMapping:
    """The card's Paddle mapping.

    Raises:
        WeightsError: the card declares none, so its Paddle checkpoint at ``location`` cannot be converted.
    """
    if isinstance(card.paddle_mapping, PaddleMapping):
        return card.paddle_mapping
    raise WeightsError(f"{card.name}: {location} is a Paddle checkpoint (.pdparams), but {card.name} declares no "
                       "Paddle mapping yet, so it cannot be converted. Use pretrained=False, or a converted "
                       ".safetensors file as pretrained='path'.")


def _fresh(card: ModelCard) -> nn.Module:
    """The model as registered: the layout of its released weights."""
    return card.factory(num_classes=card.num_classes)


def convert_state(state: dict, model: nn.Module, card: ModelCard, source: str) -> dict[str, torch.Tensor]:
    """Paddle tensors in ``model``'s names and layouts; a head of another size than ``model``'s is left out (it
    keeps its fresh initialisation). Every other disagreement is a :class:`WeightsError` naming the tensors."""
    return apply_mapping(state, model, paddle_mapping(card, source), head=card.classifier, reset_head=True,
                         source=source)


def _marker(converted: Path) -> Path:
    return converted.with_suffix(".json")


def _marker_text(digest: str) -> str:
    return json.dumps({"source_sha256": digest, "oarkit": importlib.metadata.version("oarkit")}, sort_keys=True)


def _atomic_save(state: dict[str, torch.Tensor], path: Path, marker_text: str) -> None:
    """Write the converted tensors, then their marker (a crash between the two only costs a second conversion)."""
    from safetensors.torch import save_file

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        save_file({k: v.contiguous() for k, v in state.items()}, str(tmp), metadata={"format": "pt"})
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    marker = _marker(path)
    marker_tmp = marker.with_name(f".{marker.name}.{os.getpid()}.tmp")
    marker_tmp.write_text(marker_text + "\n")
    os.replace(marker_tmp, marker)


def released_state(card: ModelCard, model: nn.Module) -> tuple[dict[str, torch.Tensor], Path]:
    """The card's Paddle release in oarkit's names: converted from the cached ``.pdparams`` once, then reused.

    Args:
        card: a card whose weights have ``format="pdparams"``.
        model: the module being loaded; when it has the registered layout it is the conversion target (no second
            model is built).

    Returns:
        ``(tensors, path of the converted file)``; the tensors are a complete state dict of the model as
        registered.

    Raises:
        WeightsError: no mapping, offline without the file, a wrong digest, or a checkpoint that does not map.
    """
    from safetensors.torch import load_file

    from oarkit.core.hub import resolve_weights_digest
    from oarkit.core.interop.pdparams import read_pdparams

    paddle_mapping(card, card.weights.location)  # before any download: a model without a mapping cannot use it
    source, digest = resolve_weights_digest(card)
    converted = source.with_name(f"{source.name}.{card.name.replace('/', '--')}.safetensors")
    marker = _marker_text(digest)
    if converted.exists() and _marker(converted).exists() and _marker(converted).read_text().strip() == marker:
        return load_file(str(converted)), converted
    logger.info("converting the Paddle release of %s (%s) into %s", card.name, source, converted)
    state = read_pdparams(source)
    try:
        tensors = apply_mapping(state, model, paddle_mapping(card, str(source)), head=card.classifier,
                                source=str(source))
    except WeightsError:  # another head (or layout) than the release's: convert onto the model as registered
        tensors = apply_mapping(state, _fresh(card), paddle_mapping(card, str(source)), head=card.classifier,
                                source=str(source))
    _atomic_save(tensors, converted, marker)
    return tensors, converted


def local_state(path: str | Path, model: nn.Module, card: ModelCard) -> dict[str, torch.Tensor]:
    """A local Paddle checkpoint (``.pdparams``, PaddleNLP directory, inference model) in ``model``'s names."""
    from oarkit.core.interop.convert import read_paddle_checkpoint

    paddle_mapping(card, str(path))
    if not Path(path).exists():
        raise WeightsError(f"weights file {path} does not exist")
    state, _, _ = read_paddle_checkpoint(path)
    return convert_state(state, model, card, str(path))
