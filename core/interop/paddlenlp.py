"""Reading PaddleNLP model directories without Paddle.

``model.save_pretrained(dir)`` in PaddleNLP writes the weights as ``model_state.pdparams`` (a ``.pdparams``
pickle; PaddleNLP 3 may write ``model.safetensors`` instead, same names and Paddle layouts) beside the
configuration: ``config.json`` (PaddleNLP >= 2.5, the transformers-style flat dict) or ``model_config.json``
(older releases: ``{"init_class": "ErnieModel", "init_args": [{...}]}``, or the nested form in which the
first argument is itself a config dict).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.errors import DataError
from oarkit.core.interop.pdparams import read_pdparams

WEIGHT_FILES = ("model_state.pdparams", "model.safetensors")
CONFIG_FILES = ("config.json", "model_config.json")


def is_paddlenlp_dir(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a PaddleNLP weights file."""
    path = Path(path)
    return path.is_dir() and any((path / f).is_file() for f in WEIGHT_FILES)


def _flatten_config(raw: dict[str, Any]) -> dict[str, Any]:
    """The flat config of either layout; the old ``init_args`` form keeps ``init_class`` beside its arguments, and
    the outer class and its own arguments (``ErnieForSequenceClassification``, ``num_classes``) win over those of
    the model it wraps (``ErnieModel``)."""
    if "init_args" not in raw:
        return dict(raw)
    config: dict[str, Any] = {}
    for arg in raw["init_args"] or []:
        if isinstance(arg, dict):
            # A nested model (ErnieForSequenceClassification(ErnieModel(...))) keeps its own init_args.
            config.update(_flatten_config(arg) if "init_args" in arg else arg)
    config.update({k: v for k, v in raw.items() if k != "init_args"})
    return config


def read_config(path: str | Path) -> dict[str, Any]:
    """The model configuration of a PaddleNLP directory (``config.json``, else ``model_config.json``).

    Raises:
        DataError: neither file exists or the file is not a JSON object.
    """
    path = Path(path)
    for name in CONFIG_FILES:
        file = path / name
        if file.is_file():
            try:
                raw = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as err:
                raise DataError(f"cannot read {file}: {err}") from err
            if not isinstance(raw, dict):
                raise DataError(f"{file} holds a {type(raw).__name__}, not a JSON object")
            return _flatten_config(raw)
    raise DataError(f"{path} holds neither {' nor '.join(CONFIG_FILES)}; a PaddleNLP model directory has one "
                    "beside its weights")


def read_paddlenlp_dir(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """``(state dict of numpy arrays, config dict)`` of a PaddleNLP model directory.

    Raises:
        DataError: the directory holds no weights or no config, or the weights cannot be read.
    """
    path = Path(path)
    if not path.is_dir():
        raise DataError(f"{path} is not a directory; a PaddleNLP model directory holds "
                        f"{' or '.join(WEIGHT_FILES)} and {' or '.join(CONFIG_FILES)}")
    config = read_config(path)
    if (path / WEIGHT_FILES[0]).is_file():
        return read_pdparams(path / WEIGHT_FILES[0]), config
    if (path / WEIGHT_FILES[1]).is_file():
        from safetensors.numpy import load_file

        try:
            return load_file(str(path / WEIGHT_FILES[1])), config
        except Exception as err:  # safetensors raises its own error types for a corrupt header
            raise DataError(f"cannot read {path / WEIGHT_FILES[1]}: {err}") from err
    raise DataError(f"{path} holds no {' or '.join(WEIGHT_FILES)}")
