"""Served models: a MODEL argument loaded into its kit's predictor, named, warmed up and described.

The server knows a model only through its task id's :class:`~oarkit.core.kits.TaskEntry` (as ``oarkit predict``
does): the entry builds the predictor, and its ``input_suffixes`` say whether the model takes images (decoded
from the request's files) or texts. Per-request ``params`` are the predictor's own settings: a keyword of its
constructor (or ``configure``) kept as an attribute of the same name (``topk``, ``threshold``), or one with a
``set_<name>`` method (``schema``); a request with params runs on a shallow copy of the predictor that shares
its model.
"""

from __future__ import annotations

import collections
import copy
import inspect
import json
import logging
import re
import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from oarkit.core.errors import ConfigError, OarkitError
from oarkit.core.serve.errors import RequestError

logger = logging.getLogger(__name__)

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
#: constructor keywords that are never request params (they name files, devices or how the model was built)
NOT_PARAMS = frozenset({"source", "device", "pretrained", "tokenizer", "labels", "preprocessing", "batch_size",
                        "runtime_options", "dictionary", "det", "rec", "cls", "version"})
#: predictor variants (one per distinct params) kept per model
MAX_VARIANTS = 32


def served_name(source: str, name: str | None = None) -> str:
    """A served model's name: ``name`` (``--name``), else its folder's basename, else the registry or pipeline
    name with ``/`` replaced by ``_``.

    Raises:
        ConfigError: the name is not URL-safe (letters, digits, ``.``, ``_``, ``-``).
    """
    path = Path(source)
    chosen = name or (path.resolve().name if path.exists() else str(source).replace("/", "_"))
    if not NAME_PATTERN.match(chosen):
        raise ConfigError(f"the served name {chosen!r} (of {source}) is not URL-safe; give --name with letters, "
                          "digits, '.', '_' and '-' only")
    return chosen


def source_format(source: str) -> str:
    """How the model runs: the export format of an export folder, ``pipeline`` for a pipeline folder, else
    ``pytorch``."""
    from oarkit.core.deploy.manifest import is_export_dir, read_manifest
    from oarkit.core.deploy.pipeline import is_pipeline_dir

    if is_pipeline_dir(source):
        return "pipeline"
    if is_export_dir(source):
        return read_manifest(source).format
    return "pytorch"


def _param_names(predictor: Any) -> list[str]:
    """The settings a request may change on this predictor (see the module docstring)."""
    names: list[str] = []
    for method in (type(predictor).__init__, getattr(type(predictor), "configure", None)):
        if method is None:
            continue
        for param in inspect.signature(method).parameters.values():
            if param.kind is not param.KEYWORD_ONLY or param.name in NOT_PARAMS or param.name in names:
                continue
            value = getattr(predictor, param.name, None)
            if callable(getattr(predictor, f"set_{param.name}", None)) or \
                    isinstance(value, (bool, int, float, str)):
                names.append(param.name)
    return names


def _coerce(name: str, value: Any, current: Any) -> Any:
    """A JSON param value as the type the predictor holds (an int for ``topk``, a float for ``threshold``)."""
    if isinstance(current, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(current, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif isinstance(current, float):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif isinstance(current, str) and isinstance(value, str):
        return value
    raise RequestError(f"params.{name} must be a {type(current).__name__} (like {current!r}), got {value!r}")


@dataclass
class ServedModel:
    """One model behind the API.

    Attributes:
        name: its name in the URL paths.
        source: the MODEL argument it was loaded from.
        task: its task id.
        modality: ``image`` (inputs are image files) or ``text`` (JSON text items).
        format: ``pytorch``, ``pipeline`` or the export format (``onnx``, ...).
        predictor: the kit's predictor.
        labels: label names, when the predictor has them.
        load_seconds: how long loading and warm-up took.
    """

    name: str
    source: str
    task: str
    modality: str
    format: str
    predictor: Any = field(repr=False)
    labels: list[str] = field(default_factory=list)
    load_seconds: float = 0.0
    params: list[str] = field(default_factory=list)
    _variants: collections.OrderedDict = field(default_factory=collections.OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _artifact: Any = field(default=None, repr=False)  # the export's DeployedModel, opened by the first OIP infer
    paddlex: Any = field(default=None, repr=False)  # the task's PaddleXRoute, when it answers one

    def info(self) -> dict[str, Any]:
        """The model's entry in ``GET /v1/models``."""
        return {"name": self.name, "task": self.task, "source": self.source, "format": self.format,
                "labels": list(self.labels), "inputs": self.modality, "params": list(self.params),
                "load_seconds": round(self.load_seconds, 3)}

    def params_key(self, params: dict[str, Any] | None) -> Hashable:
        """The batch key of a request's params (checked here, so that a bad param is the request's 400).

        Raises:
            RequestError: a param this predictor does not take, or a value of the wrong type.
        """
        if not params:
            return ()
        if not isinstance(params, dict):
            raise RequestError(f"params must be a JSON object such as {{\"topk\": 3}}, got {params!r}")
        for key, value in params.items():
            if key not in self.params:
                raise RequestError(f"params.{key} is not a setting of model {self.name!r} ({self.task}); it takes "
                                   f"{', '.join(self.params) or 'no params'}")
            if not callable(getattr(self.predictor, f"set_{key}", None)):
                _coerce(key, value, getattr(self.predictor, key))
        return json.dumps(params, sort_keys=True)

    def variant(self, key: Hashable) -> Any:
        """The predictor for a params key: the predictor itself, or a copy with those settings (kept, LRU)."""
        if key == ():
            return self.predictor
        with self._lock:
            if key in self._variants:
                self._variants.move_to_end(key)
                return self._variants[key]
        variant = copy.copy(self.predictor)
        for name, value in json.loads(str(key)).items():
            setter = getattr(variant, f"set_{name}", None)
            if callable(setter):
                setter(value)
            else:
                setattr(variant, name, _coerce(name, value, getattr(variant, name)))
        with self._lock:
            self._variants[key] = variant
            while len(self._variants) > MAX_VARIANTS:
                self._variants.popitem(last=False)
        return variant

    def predict(self, inputs: list[Any], key: Hashable = (), form: str = "dict") -> list[dict[str, Any]]:
        """Each input's result as its ``to_dict()`` (what ``oarkit predict`` prints), or with ``form="paddlex"``
        as PaddleX's ``result`` object; runs in a worker thread.

        Inputs of different kinds (texts and text pairs, from one request or from batch-mates) run as separate
        calls, since a predictor may take a list of one kind only.
        """
        if form == "paddlex" and self.paddlex is None:
            raise RequestError(f"model {self.name!r} ({self.task}) answers no PaddleX route")
        predictor = self.variant(key)
        groups: dict[type, list[int]] = {}
        for i, item in enumerate(inputs):
            groups.setdefault(type(item), []).append(i)
        out: list[dict[str, Any] | None] = [None] * len(inputs)
        for indices in groups.values():
            for i, result in zip(indices, predictor([inputs[i] for i in indices]), strict=True):
                out[i] = result.to_dict() if form == "dict" else self.paddlex.result(result, inputs[i])
        return out  # type: ignore[return-value]

    def warm_up(self) -> None:
        """One prediction on a synthetic input, so that the first request does not pay for lazy setup."""
        sample: Any = np.full((64, 64, 3), 127, np.uint8) if self.modality == "image" else "warm up"
        try:
            self.predictor([sample])
        except OarkitError as err:  # a predictor that needs more than a plain input (QA pairs, a UIE schema)
            logger.info("model %s: warm-up skipped (%s)", self.name, err)
        except Exception as err:  # noqa: BLE001  (the model still serves; its first request will tell)
            logger.warning("model %s: warm-up failed: %s: %s", self.name, type(err).__name__, err)


def load_model(source: str, *, name: str | None = None, device: str = "cpu", warm_up: bool = True) -> ServedModel:
    """Load one MODEL argument into a :class:`ServedModel`.

    Args:
        source: a run, model or export directory, a pipeline folder or a registry name.
        name: the served name (default: :func:`served_name`).
        device: the predictor's device.
        warm_up: run one prediction before the model counts as ready.

    Raises:
        OarkitError: the source is none of these or its kit is not installed.
    """
    from oarkit.core.kits import source_entry

    started = time.perf_counter()
    entry = source_entry(source)
    served = served_name(source, name)
    logger.info("loading %s (%s) from %s", served, entry.task_id, source)
    predictor = entry.predictor(source, device=device)
    model = ServedModel(name=served, source=str(source), task=entry.task_id,
                        modality="image" if entry.input_suffixes else "text", format=source_format(source),
                        predictor=predictor, labels=[str(x) for x in getattr(predictor, "labels", None) or []],
                        params=_param_names(predictor), paddlex=entry.paddlex)
    if warm_up:
        model.warm_up()
    model.load_seconds = time.perf_counter() - started
    logger.info("loaded %s in %.2f s (format %s, params: %s)", served, model.load_seconds, model.format,
                ", ".join(model.params) or "none")
    return model


def check_sources(sources: Sequence[str], name: str | None = None) -> list[str]:
    """The served names of the MODEL arguments, checked before anything loads (a typo fails at once).

    Raises:
        OarkitError: a source that names no model, or two sources with one name.
    """
    from oarkit.core.kits import source_entry

    names: dict[str, str] = {}
    for source in sources:
        source_entry(source)
        served = served_name(source, name)
        if served in names:
            raise ConfigError(f"{names[served]} and {source} would both be served as {served!r}; serve them from "
                              "folders of different names (or one at a time with --name)")
        names[served] = source
    return list(names)
