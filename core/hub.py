"""Pretrained weights and model directories: the local cache, download when online, sha256 verification, Paddle
releases converted on first use (:mod:`oarkit.core.interop.pretrained`), loading onto a module, and
:func:`load_model`, which rebuilds any self-describing model directory."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from oarkit.core.errors import WeightsError, WeightsUnavailableError

if TYPE_CHECKING:
    from oarkit.core.registry import ModelCard, PretrainedWeights

logger = logging.getLogger(__name__)

# torchvision's convention: "resnet18-f37072fd.pth" carries the first hex digits of the file's sha256.
_HASH_PREFIX = re.compile(r"-([a-f0-9]{8,})\.")


def cache_dir() -> Path:
    """Where downloaded weights are kept: ``$OARKIT_HOME/weights`` (default ``~/.cache/oarkit/weights``)."""
    root = os.environ.get("OARKIT_HOME") or Path.home() / ".cache" / "oarkit"
    return Path(root) / "weights"


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cached_path(weights: PretrainedWeights, model_name: str) -> Path:
    """The cache location of ``weights`` (whether or not it is there yet)."""
    if weights.file_name and not weights.url:
        name = f"{weights.hub_id.replace('/', '--')}--{weights.file_name}"
    elif not weights.file_name and weights.format == "pdparams":
        # Paddle releases name their files by folder (PaddleSeg: .../<config>/model.pdparams): keep the folder.
        name = "--".join(weights.url.rstrip("/").rsplit("/", 2)[-2:])
    else:
        name = weights.file_name or weights.url.rsplit("/", 1)[-1]
    if not name:
        raise WeightsError(f"{model_name}: its registered weights name neither a url nor a hub file")
    return cache_dir() / name


def verify(path: Path, weights: PretrainedWeights, model_name: str) -> str:
    """Check ``path`` against the registered sha256 (or its recorded first-download digest).

    Returns:
        The file's sha256.

    Raises:
        WeightsError: the digest differs; the file is refused and left for the user to inspect.
    """
    actual = sha256_of(path)
    expected, origin = weights.sha256, "registered sha256"
    record = path.with_name(path.name + ".sha256")
    if not expected:
        prefix = _HASH_PREFIX.search(path.name)
        if prefix:
            expected, origin = prefix.group(1), "hash prefix in its file name"
        elif record.exists():
            expected, origin = record.read_text().strip(), f"digest recorded at first download ({record})"
    if expected and not actual.startswith(expected):
        raise WeightsError(f"{model_name}: {path} has sha256 {actual}, which does not match the {origin} "
                           f"{expected}. The file is corrupt or not the registered one; delete it and retry.")
    if not weights.sha256 and not record.exists():
        record.write_text(actual + "\n")
    return actual


def is_offline() -> bool:
    """Whether downloads are off (``HF_HUB_OFFLINE=1``, as on machines without a network)."""
    return os.environ.get("HF_HUB_OFFLINE") == "1"


def download(weights: PretrainedWeights, target: Path, model_name: str) -> None:
    """Fetch ``weights`` (a URL, ``file:`` included, or a Hugging Face hub file) to ``target``, atomically: a failed
    or interrupted download leaves no file. Kits use it for other release data too (PaddleOCR's dictionaries).

    Raises:
        WeightsError: offline (``HF_HUB_OFFLINE=1``) with a network URL, or the download failed; the message names
            the source and ``target``.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    hint = (f"Download it by hand from {weights.location} to {target}, "
            "or pass pretrained='path/to/file' to load a local copy.")
    offline = is_offline()
    if offline and weights.url and not weights.url.startswith("file:"):
        raise WeightsUnavailableError(f"{model_name}: weights are not cached at {target} and HF_HUB_OFFLINE=1 "
                                      f"(offline). {hint}")
    try:
        if weights.url:
            fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
            os.close(fd)
            try:
                torch.hub.download_url_to_file(weights.url, tmp, progress=True)
                os.replace(tmp, target)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
        else:
            from huggingface_hub import hf_hub_download

            # Offline, the Hugging Face cache may still hold the file; local_files_only never touches the network.
            shutil.copyfile(hf_hub_download(weights.hub_id, weights.file_name, local_files_only=offline), target)
    except Exception as err:  # network, HTTP and hub errors all end up here
        if offline and not weights.url:
            raise WeightsUnavailableError(f"{model_name}: weights are not cached at {target} nor in the Hugging Face "
                                          f"cache, and HF_HUB_OFFLINE=1. {hint}") from err
        raise WeightsUnavailableError(f"{model_name}: could not download its weights ({type(err).__name__}: "
                                      f"{err}). {hint}") from err


def resolve_weights_digest(card: ModelCard) -> tuple[Path, str]:
    """A verified local file of the card's registered weights (downloaded when it is not cached) and its sha256."""
    if card.weights is None:
        raise WeightsError(f"{card.name} has no registered weights; use pretrained=False or a local file path")
    path = cached_path(card.weights, card.name)
    if not path.exists():
        url = card.weights.url
        if not (is_offline() and url and not url.startswith("file:")):  # offline, download() says why it can't
            logger.info("downloading %s weights from %s", card.name, card.weights.location)
        download(card.weights, path, card.name)
    return path, verify(path, card.weights, card.name)


def resolve_weights(card: ModelCard) -> Path:
    """A verified local file of the card's registered weights, downloading it when it is not cached."""
    return resolve_weights_digest(card)[0]


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Tensors of a checkpoint: ``.safetensors``, a torch file (``.pth``/``.pt``/``.bin``) or a run directory."""
    path = Path(path)
    if path.is_dir():
        path = path / "model.safetensors"
    if not path.exists():
        raise WeightsError(f"weights file {path} does not exist")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise WeightsError(f"cannot read weights from {path}: {err}") from err
    for key in ("state_dict", "model", "model_state_dict"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            state = state[key]
    if not isinstance(state, dict):
        raise WeightsError(f"{path} holds a {type(state).__name__}, not a state dict of tensors")
    return {k.removeprefix("module."): v for k, v in state.items() if isinstance(v, torch.Tensor)}


def in_head(name: str, head: Sequence[str]) -> bool:
    """Whether the state-dict ``name`` lies under one of the ``head`` module prefixes (a card's ``classifier``)."""
    return any(name == h or name.startswith(h + ".") for h in head)


def load_state_dict(model: nn.Module, state: dict[str, Any], *, head: tuple[str, ...] = (),
                    source: str = "checkpoint") -> list[str]:
    """Load ``state`` onto ``model``; head tensors whose shape differs are left at their fresh initialisation.

    Returns:
        The names of the head tensors that were re-initialised.

    Raises:
        WeightsError: a tensor outside the head is missing, unexpected or of another shape.
    """
    own = model.state_dict()
    # A head of another size, or none at all (a backbone-only checkpoint), keeps its fresh initialisation.
    reset = [k for k in own if in_head(k, head) and (k not in state or state[k].shape != own[k].shape)]
    state = {k: v for k, v in state.items() if k not in reset}
    bad_shape = [f"{k}: {tuple(v.shape)} vs {tuple(own[k].shape)}" for k, v in state.items()
                 if k in own and v.shape != own[k].shape]
    # Checkpoints older than PyTorch 0.4.1 (torchvision's first releases) have no BatchNorm step counters.
    missing = [k for k in own if k not in state and k not in reset and not k.endswith(".num_batches_tracked")]
    unexpected = [k for k in state if k not in own]
    if bad_shape or missing or unexpected:
        parts = [f"{label} ({len(keys)}): {', '.join(keys[:5])}{' ...' if len(keys) > 5 else ''}"
                 for label, keys in (("shape mismatch", bad_shape), ("missing", missing),
                                     ("unexpected", unexpected)) if keys]
        raise WeightsError(f"{source} does not fit {type(model).__name__}: " + "; ".join(parts))
    # Names and shapes now match this model, so its own format versions apply: modules that convert older formats
    # while loading (torchvision's MNASNet refuses a state dict without versions) see the current one.
    loadable = OrderedDict(state)
    loadable._metadata = getattr(own, "_metadata", None)
    model.load_state_dict(loadable, strict=False)
    if reset:
        names = ", ".join(reset[:5]) + (f" ... ({len(reset)} tensors)" if len(reset) > 5 else "")
        logger.info("re-initialised the head (%s): absent from %s or of another size there", names, source)
    return reset


def load_pretrained(model: nn.Module, card: ModelCard, pretrained: bool | str | Path) -> list[str]:
    """Load the card's registered weights (``pretrained=True``) or a local file onto ``model``.

    A Paddle release (a card's ``pdparams`` weights) is converted once into the cache through the card's Paddle
    mapping; a local Paddle checkpoint (``.pdparams``, PaddleNLP directory, inference model) is converted in memory.

    Returns:
        The names of the head tensors that were re-initialised.
    """
    from oarkit.core.interop import pretrained as paddle

    loader = getattr(card, "pretrained_loader", None)
    if pretrained is True and loader is not None:  # weights the card's own loader resolves
        state, source = loader(model, card)
        return load_state_dict(model, state, head=card.classifier, source=source)
    if pretrained is True and card.weights is not None and card.weights.format == "pdparams":
        state, converted = paddle.released_state(card, model)
        return load_state_dict(model, state, head=card.classifier, source=f"{converted} (converted)")
    if pretrained is not True and paddle.is_paddle_checkpoint(pretrained):
        state = paddle.local_state(pretrained, model, card)
        return load_state_dict(model, state, head=card.classifier, source=f"{pretrained} (converted)")
    path = resolve_weights(card) if pretrained is True else Path(pretrained)
    state = read_state_dict(path)
    if card.state_dict_filter is not None:
        state = card.state_dict_filter(state, model)
    return load_state_dict(model, state, head=card.classifier, source=str(path))


def load_model(path: str | Path) -> nn.Module:
    """Rebuild the model of a self-describing model directory, with its own architecture and weights.

    The directory's meta.json names its task id, whose kit (found through :mod:`oarkit.core.kits`) registers the
    model it names; the module is built with the recorded keyword arguments (an ERNIE saved with 4 layers comes
    back with 4) and its ``model.safetensors`` loaded.

    Args:
        path: a run directory (its ``best/``, else ``last/``), a run's ``best/`` or ``last/``, or a folder written
            by ``oarkit convert paddle``.

    Returns:
        The module in eval mode (``oarkit_name`` and ``oarkit_kwargs`` say how it was built).

    Raises:
        DataError: ``path`` does not exist, is an export folder, or is no model directory.
        OarkitError: its task id is unknown or no installed kit registers it.
        WeightsError: meta.json names no registry model, or the weights do not fit it.
    """
    from oarkit.core.engine.checkpoint import META_FILE, find_model_dir, load_model_dir, read_meta
    from oarkit.core.errors import DataError, UnknownNameError
    from oarkit.core.kits import source_entry

    path = Path(path)
    if not path.exists():
        raise DataError(f"{path} does not exist; pass a run directory, its best/ or last/ folder, or a folder "
                        "written by `oarkit convert paddle`")
    if (path / "deploy.yaml").is_file():
        raise DataError(f"{path} is an export folder (it holds deploy.yaml), not a model directory: load it with "
                        "oarkit.core.deploy.DeployedModel.load or a kit's predictor")
    folder = find_model_dir(path)
    source_entry(folder)  # the task id is known and its kit installed (which registers the kit's models)
    try:
        model, _ = load_model_dir(folder)
    except UnknownNameError as err:
        name = (read_meta(folder).get("model") or {}).get("name")
        raise WeightsError(f"{folder / META_FILE} names the model {name!r}, which no installed kit registers: "
                           f"{err}") from err
    return model
