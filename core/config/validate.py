"""Validation of a composed config before any work: keys, types, values and targets.

The schema is not written twice: the keys a ``_target_`` node accepts are the parameters of the callable it
names, with their type hints, and the ``trainer:`` section is checked against ``Trainer.__init__``.
"""

from __future__ import annotations

import collections.abc
import inspect
import pathlib
import types
import typing
from typing import Any, Literal, get_args, get_origin

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from oarkit.core.config.targets import HYDRA_KEYS, check_targets, iter_targets, locate
from oarkit.core.errors import ConfigError, OarkitError, did_you_mean

if typing.TYPE_CHECKING:
    from oarkit.core.config.compose import Origins

#: top-level sections of a run config; later features (quantization, export) add theirs here
SECTIONS: dict[str, str] = {
    "output_dir": "the run directory",
    "task": "the kit's task (_target_)",
    "data": "the kit's data module (_target_)",
    "trainer": "keyword arguments of oarkit.core.Trainer",
    "optimizer": "a _partial_ optimizer (_target_)",
    "scheduler": "a _partial_ LR schedule (_target_) or null",
    "callbacks": "a list of callbacks (_target_)",
    "quant": "quantization-aware training (quant=qat) or null",
    "distill": "knowledge distillation (distill=kd | ssld | feature | dml) or null",
    "prune": "structured pruning to a FLOPs target (prune=l1|fpgm|taylor) or null",
}
#: Trainer arguments that come from other sections, not from ``trainer:``
_NOT_IN_TRAINER = {"self", "task", "data", "optimizer", "scheduler", "callbacks", "config", "output_dir", "resume"}


def _parameters(fn: Any) -> tuple[dict[str, inspect.Parameter], dict[str, Any], bool]:
    """Named parameters, their resolved type hints, and whether ``**kwargs`` is accepted."""
    target = fn.__init__ if inspect.isclass(fn) else fn
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return {}, {}, True
    params = {n: p for n, p in sig.parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    var_kw = any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # hints naming TYPE_CHECKING-only imports: check keys, not types
        hints = {}
    return params, hints, var_kw


def trainer_parameters() -> tuple[dict[str, inspect.Parameter], dict[str, Any]]:
    from oarkit.core.engine.trainer import Trainer

    params, hints, _ = _parameters(Trainer)
    return {k: v for k, v in params.items() if k not in _NOT_IN_TRAINER}, hints


def _type_ok(value: Any, hint: Any) -> bool:
    """Whether a config value can serve an argument of type ``hint`` (lenient where the hint is exotic)."""
    if hint is Any or hint is inspect.Parameter.empty:
        return True
    if isinstance(value, DictConfig) and "_target_" in value:
        return True  # built into an object by instantiate
    origin = get_origin(hint)
    if origin is typing.Union or origin is types.UnionType:
        return any(_type_ok(value, h) for h in get_args(hint))
    if origin is Literal:
        return value in get_args(hint)
    if hint is type(None):
        return value is None
    if value is None:
        return False
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if hint in (pathlib.Path,):
        return isinstance(value, str)
    base = origin or hint
    if base in (list, tuple, collections.abc.Sequence):
        if isinstance(value, str) and base is collections.abc.Sequence:
            return True
        return isinstance(value, (list, tuple, ListConfig))
    if base in (dict, collections.abc.Mapping):
        return isinstance(value, (dict, DictConfig))
    return True


def _hint_text(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def _check_keys(node: DictConfig, path: str, params: dict[str, inspect.Parameter], hints: dict[str, Any],
                var_kw: bool, origins: Origins | None, owner: str) -> None:
    where = (lambda k: f" (from {origins.of(k)})") if origins else (lambda k: "")
    for key in node:
        key = str(key)
        full = f"{path}.{key}" if path else key
        if key in HYDRA_KEYS:
            continue
        if key not in params:
            if var_kw:
                continue
            raise ConfigError(f"unknown key {full!r}{where(full)}: {owner} takes no such argument."
                              f"{did_you_mean(key, params)} Valid keys: {', '.join(sorted(params))}.")
        child = node._get_node(key)
        if OmegaConf.is_missing(node, key):
            raise ConfigError(f"{full} is required{where(full)} but has no value; set it, e.g. {full}=VALUE")
        if getattr(child, "_is_interpolation", lambda: False)():
            continue
        value = OmegaConf.to_container(child) if isinstance(child, (DictConfig, ListConfig)) else child._value()
        if isinstance(child, DictConfig) and "_target_" in child:
            continue
        if key in hints and not _type_ok(value, hints[key]):
            raise ConfigError(f"{full}={value!r}{where(full)} has the wrong type for {owner}: expected "
                              f"{_hint_text(hints[key])}.")


def known_keys(cfg: DictConfig) -> list[str]:
    """Every key a config could set: the ones present, plus the parameters of each ``_target_`` node."""
    keys = [k for k in _leaf_keys(cfg)]
    for path, node in iter_targets(cfg):
        try:
            params, _, _ = _parameters(locate(node._get_node("_target_")._value(), where=path))
        except ConfigError:
            continue
        keys += [f"{path}.{p}" if path else p for p in params]
    keys += [f"trainer.{p}" for p in trainer_parameters()[0]]
    return sorted(set(keys))


def _leaf_keys(node: Any, path: str = "") -> list[str]:
    if isinstance(node, DictConfig):
        out = []
        for key in node:
            child = node._get_node(key)
            sub = f"{path}.{key}" if path else str(key)
            out += _leaf_keys(child, sub) if isinstance(child, DictConfig) and not child._is_interpolation() \
                else [sub]
        return out
    return [path]


def validate_config(cfg: DictConfig, origins: Origins | None = None) -> None:
    """Raise :class:`ConfigError` on the first problem of a composed run config.

    Checks, in order: top-level sections, the ``_target_`` allow-list, each target's keys and types, the
    ``trainer`` section against ``Trainer``, missing values, interpolations, and registry model names.
    """
    where = (lambda k: f" (from {origins.of(k)})") if origins else (lambda k: "")
    for key in cfg:
        if key not in SECTIONS:
            raise ConfigError(f"unknown top-level key {key!r}{where(str(key))}.{did_you_mean(str(key), SECTIONS)} "
                              f"Top-level keys: {', '.join(SECTIONS)}.")
    for section in ("task", "data"):
        if section not in cfg or not isinstance(cfg[section], DictConfig) or "_target_" not in cfg[section]:
            raise ConfigError(f"the config has no '{section}' section with a _target_; every run config names "
                              f"{SECTIONS[section]} (see configs/clas/ for examples)")
    check_targets(cfg, origins)
    for path, node in iter_targets(cfg):
        fn = locate(node._get_node("_target_")._value(), where=path)
        params, hints, var_kw = _parameters(fn)
        if node.get("_partial_") is True or "_args_" in node:
            hints = {}  # positional arguments supplied later (or in _args_): check the names only
        _check_keys(node, path, params, hints, var_kw, origins, f"{node._target_}")
    if "trainer" in cfg:
        if not isinstance(cfg.trainer, DictConfig):
            raise ConfigError(f"trainer must be a mapping of Trainer arguments{where('trainer')}")
        params, hints = trainer_parameters()
        _check_keys(cfg.trainer, "trainer", params, hints, False, origins, "oarkit.core.Trainer")
    try:
        OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as err:
        key = getattr(err, "full_key", "") or ""
        raise ConfigError(f"cannot resolve {key or 'the config'}{where(key) if key else ''}: {err.msg}"
                          if hasattr(err, "msg") else str(err)) from err
    _check_model_names(cfg, where)


def _check_model_names(cfg: DictConfig, where: Any) -> None:
    from oarkit.core.registry import model_info

    for path, node in iter_targets(cfg):
        if node._target_ == "oarkit.core.create_model" and "name" in node:
            try:
                model_info(str(OmegaConf.select(cfg, f"{path}.name")))
            except OarkitError as err:
                raise ConfigError(f"{path}.name{where(path + '.name')}: {err}") from err
