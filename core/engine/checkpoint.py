"""Run directories: self-describing model folders written atomically, and the resumable training state.

A model directory holds ``config.yaml`` (resolved), ``model.safetensors`` and ``meta.json``; the ``last/``
directory of a run also holds ``trainer_state.pt`` (optimizer, scheduler, scaler, EMA, RNG, step, history).

A directory is written whole into a hidden sibling and swapped in by two renames. A crash or a kill at any
moment leaves either the previous or the new directory complete; :func:`resolve_dir` finds whichever exists.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from torch import nn

from oarkit.core.errors import DataError, WeightsError

MODEL_FILE = "model.safetensors"
META_FILE = "meta.json"
CONFIG_FILE = "config.yaml"
STATE_FILE = "trainer_state.pt"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _old(path: Path) -> Path:
    return path.with_name(f".{path.name}.old")


def resolve_dir(path: str | Path) -> Path:
    """The complete model directory at ``path``, or the previous one when a swap was interrupted."""
    path = Path(path)
    if (path / MODEL_FILE).exists():
        return path
    if (_old(path) / MODEL_FILE).exists():
        return _old(path)
    raise WeightsError(f"{path} is not a model directory (no {MODEL_FILE}); pass a run's best/ or last/ folder")


def find_model_dir(path: str | Path, *, exports: bool = False) -> Path:
    """The model directory a path names: a run directory's ``best/`` (else ``last/``), or ``path`` itself.

    Args:
        path: a run directory, a model directory, or (with ``exports``) an export folder.
        exports: accept an export folder (one holding a ``deploy.yaml``) and return it as it is.

    Raises:
        DataError: ``path`` is none of these; the message says what each one holds.
    """
    path = Path(path)
    if exports and (path / "deploy.yaml").is_file():
        return path
    for candidate in (path, path / "best", path / "last"):
        if (candidate / META_FILE).exists() or (_old(candidate) / META_FILE).exists():
            return candidate
    export = ", an export folder (with deploy.yaml)" if exports else ""
    raise DataError(f"{path} is neither a run directory (with best/ or last/){export} nor a model directory "
                    f"(with {MODEL_FILE} and {META_FILE})")


def contiguous_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """A state dict safetensors accepts: contiguous, detached, on the CPU, shared storage cloned apart."""
    return {k: v.detach().cpu().contiguous().clone() for k, v in module.state_dict().items()}


def write_model_dir(path: str | Path, *, weights: dict[str, torch.Tensor], meta: dict[str, Any],
                    config_yaml: str, train_state: dict[str, Any] | None = None) -> Path:
    """Write a model directory atomically (see the module docstring)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    if tmp.exists():  # left by a run killed mid-write
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    save_file(weights, str(tmp / MODEL_FILE), metadata={"format": "pt"})
    (tmp / META_FILE).write_text(json.dumps(meta, indent=2, default=str) + "\n")
    (tmp / CONFIG_FILE).write_text(config_yaml)
    if train_state is not None:
        torch.save(train_state, tmp / STATE_FILE)
    for f in tmp.iterdir():
        with open(f, "rb") as fh:
            os.fsync(fh.fileno())
    _fsync_dir(tmp)
    old = _old(path)
    if old.exists():
        shutil.rmtree(old)
    if path.exists():
        os.rename(path, old)
    os.rename(tmp, path)
    _fsync_dir(path.parent)
    if old.exists():
        shutil.rmtree(old)
    return path


def read_meta(path: str | Path) -> dict[str, Any]:
    path = resolve_dir(path)
    try:
        return json.loads((path / META_FILE).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise WeightsError(f"cannot read {path / META_FILE}: {err}") from err


def read_train_state(path: str | Path) -> dict[str, Any]:
    """The resumable state saved in a run's ``last/`` directory."""
    path = resolve_dir(path)
    if not (path / STATE_FILE).exists():
        raise WeightsError(f"{path} holds no {STATE_FILE}: only a run's last/ directory can be resumed")
    return torch.load(path / STATE_FILE, map_location="cpu", weights_only=True)


def load_model_dir(path: str | Path) -> tuple[nn.Module, dict[str, Any]]:
    """Rebuild the model a run directory describes and load its weights; returns ``(model, meta)``."""
    from oarkit.core.hub import load_state_dict, read_state_dict
    from oarkit.core.registry import create_model

    path = resolve_dir(path)
    meta = read_meta(path)
    spec = meta.get("model") or {}
    if not spec.get("name"):
        raise WeightsError(f"{path / META_FILE} names no registry model, so oarkit cannot rebuild it; "
                           "load model.safetensors onto your own module instead")
    model = create_model(spec["name"], **spec.get("kwargs", {}))
    restore_pruned(model, meta, source=str(path / META_FILE))
    load_state_dict(model, read_state_dict(path / MODEL_FILE), source=str(path))
    return model.eval(), meta


def restore_pruned(model: nn.Module, meta: dict[str, Any], *, source: str = META_FILE) -> nn.Module:
    """Give a freshly built model the channel counts a pruned run's meta.json records (``prune=``), in place, so
    that its checkpoint loads; a run that was not pruned leaves the model as it is."""
    changes = (meta.get("prune") or {}).get("modules")
    if changes:
        from oarkit.core.prune.shapes import apply_pruned_shapes

        apply_pruned_shapes(model, changes, source=source)
    return model


def checkpoint_folder(path: str | Path, key: str) -> Path:
    """The model directory a ``<group>.checkpoint`` setting names: a model directory, or a run's ``best/`` (else
    ``last/``).

    Raises:
        WeightsError: nothing there holds a model; the message names the setting ``key``.
    """
    path = Path(path)
    for candidate in (path, path / "best", path / "last"):
        if (candidate / MODEL_FILE).exists() or _old(candidate).exists():
            return resolve_dir(candidate)
    raise WeightsError(f"{key}={str(path)!r} is not a run or model directory (no {MODEL_FILE} in it, best/ or "
                       "last/); train a model first and pass its run directory")
