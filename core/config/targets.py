"""``_target_`` safety: a config names the components recipes need, from an explicit list, and nothing else.

A config file is data, not a program. A ``_target_`` is admitted only when the object it names is one of:

- oarkit: a component class defined in an oarkit package (a subclass of ``Task``, ``DataModule``, ``Metric``,
  ``Callback`` or ``torch.nn.Module``: every kit's tasks, data modules, models, losses, metrics and callbacks,
  today's and tomorrow's), or one of :data:`CORE_CALLABLES` (``oarkit.core.create_model``, ...);
- torch: an optimizer or LR-scheduler class of ``torch.optim``, a ``torch.nn`` module class (layers, losses);
- torchvision: a transform class of ``torchvision.transforms`` (v1 and v2), a model builder of
  ``torchvision.models`` (or ``torchvision.models.get_model``), a torchvision module class;
- albumentations: a transform or composition class; timm: a module class;
- transformers: a model (``PreTrainedModel``) or config (``PreTrainedConfig``) class.

The judgement is made on the object the path resolves to, in the module it really lives in, so a re-export
(``oarkit.core.config.targets.importlib.import_module``) gains nothing; methods (``from_pretrained``),
modules, private names (``torch._C``) and anything in a module that runs processes, writes files or loads code
(``os``, ``subprocess``, ``shutil``, ``collect_env``, ``cpp_extension``, ``hub``, ``jit``, ``serialization``,
...) are refused before anything is imported. Arguments that load code are refused in every node of a config
(``trust_remote_code: true``, ``weights_only: false``, ``allow_pickle: true``, ``pickle_module``). The checks
run on the config as written and as it resolves, since an interpolation (``${oc.create:...}``) can make a node.
"""

from __future__ import annotations

import copy
import functools
import importlib
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from oarkit.core.errors import ConfigError, OarkitError, did_you_mean

if TYPE_CHECKING:
    from oarkit.core.config.compose import Origins

#: the packages a ``_target_`` may start with; inside them only what :data:`RULES` admits passes
ALLOWED_PACKAGES = ("oarkit", "torch", "torchvision", "albumentations", "transformers", "timm")
#: oarkit callables a config may name besides component classes (by public path; re-exports of them pass too)
CORE_CALLABLES = ("oarkit.core.create_model", "oarkit.core.engine.schedule.WarmupLR",
                  "oarkit.core.quant.QuantizationAwareTraining", "oarkit.core.distill.KnowledgeDistillation",
                  "oarkit.core.distill.MutualLearning", "oarkit.core.prune.StructuredPruning")
#: module names (any segment of the path or of the object's real module) that run processes, write files or
#: load code; nothing under them is admitted, whatever the rules say
DENIED_MODULES = frozenset({
    "os", "posix", "nt", "sys", "subprocess", "shutil", "pty", "socket", "tempfile", "pathlib", "io", "pickle",
    "marshal", "shelve", "builtins", "importlib", "runpy", "ctypes", "multiprocessing", "collect_env",
    "cpp_extension", "hub", "jit", "package", "serialization", "library", "datapipes", "distributed",
    "dynamic_module_utils", "checkpoint", "commands", "cli",
})
DENIED_PREFIXES = ("torch.ops",)  # custom-op libraries (``ops`` alone would also shut out torchvision.ops layers)
#: argument names that make a callable load code, with the only values admitted for them
CODE_LOADING_ARGS: dict[str, tuple[Any, ...]] = {
    "trust_remote_code": (False, None), "weights_only": (True,), "allow_pickle": (False, None),
    "pickle_module": (), "pickle_load_args": (), "pickle_kwargs": (),
}
HYDRA_KEYS = ("_target_", "_partial_", "_recursive_", "_convert_", "_args_")
ADMITTED = ("A config may name: oarkit component classes (tasks, data modules, models, losses, metrics, "
            "callbacks: subclasses of Task, DataModule, nn.Module, Metric or Callback) and "
            f"{', '.join(CORE_CALLABLES)}; torch.optim optimizer and LR-scheduler classes; torch.nn module classes; "
            "torchvision transform classes, model builders and module classes; albumentations transform classes; "
            "timm module classes; transformers model and config classes.")


@dataclass(frozen=True)
class Rule:
    """One kind of callable a config may name: ``admits(obj)`` for objects whose real module is under ``package``."""

    package: str
    what: str
    admits: Callable[[Any], bool]


def _subclass_of(*bases: Callable[[], type | tuple[type, ...]]) -> Callable[[Any], bool]:
    def admits(obj: Any) -> bool:
        return inspect.isclass(obj) and any(issubclass(obj, base()) for base in bases)

    return admits


def _oarkit_bases() -> tuple[type, ...]:
    import torch

    from oarkit.core.engine.callbacks import Callback
    from oarkit.core.engine.metric import Metric
    from oarkit.core.engine.task import DataModule, Task

    return Task, DataModule, Metric, Callback, torch.nn.Module


@functools.cache
def _attribute(dotted: str) -> Any:
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _is_core_callable(obj: Any) -> bool:
    name = getattr(obj, "__name__", None)  # compared first: only a namesake's module is imported
    return any(dotted.rpartition(".")[2] == name and obj is _attribute(dotted) for dotted in CORE_CALLABLES)


@functools.cache
def _torchvision_builders() -> tuple[Any, ...]:
    import torchvision.models as tvm

    return (tvm.get_model, *(tvm.get_model_builder(name) for name in tvm.list_models()))


def _torch_module() -> type:
    import torch

    return torch.nn.Module


def _optim_classes() -> tuple[type, ...]:
    import torch

    return torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler, torch.optim.lr_scheduler.ReduceLROnPlateau


def _albumentations_classes() -> tuple[type, ...]:
    from albumentations.core.composition import BaseCompose
    from albumentations.core.transforms_interface import BasicTransform

    return BasicTransform, BaseCompose


def _transformers_classes() -> tuple[type, ...]:
    from transformers import PreTrainedConfig, PreTrainedModel

    return PreTrainedModel, PreTrainedConfig


_is_oarkit_component = _subclass_of(_oarkit_bases)
_is_torch_module = _subclass_of(_torch_module)

RULES = (
    Rule("oarkit", "component classes (subclasses of Task, DataModule, Metric, Callback or nn.Module) and "
         + ", ".join(CORE_CALLABLES),
         lambda obj: _is_oarkit_component(obj) or _is_core_callable(obj)),
    Rule("torch.optim", "a torch.optim optimizer or LR-scheduler class", _subclass_of(_optim_classes)),
    Rule("torch.nn", "a torch.nn module class", _is_torch_module),
    Rule("torchvision.transforms", "a torchvision transform class", inspect.isclass),
    Rule("torchvision", "a torchvision model builder or module class",
         lambda obj: _is_torch_module(obj) or any(obj is b for b in _torchvision_builders())),
    Rule("albumentations", "an albumentations transform class", _subclass_of(_albumentations_classes)),
    Rule("timm", "a timm module class", _is_torch_module),
    Rule("transformers", "a transformers model or config class", _subclass_of(_transformers_classes)),
)


def _under(dotted: str, prefix: str) -> bool:
    return dotted == prefix or dotted.startswith(prefix + ".")


def _denied_part(dotted: str) -> str | None:
    """The module name in ``dotted`` that is never admitted, if any."""
    for prefix in DENIED_PREFIXES:
        if _under(dotted, prefix):
            return prefix
    parts = dotted.split(".")
    cut = next((i for i, part in enumerate(parts) if part in DENIED_MODULES), None)
    return None if cut is None else ".".join(parts[:cut + 1])


def _refuse(dotted: Any, where: str, why: str) -> ConfigError:
    at = f" at {where}" if where else ""
    return ConfigError(f"_target_ {dotted!r}{at} is refused: {why}. {ADMITTED}")


def _import_path(dotted: str, at: str) -> tuple[Any, list[str]]:
    """The longest importable module prefix of ``dotted`` and the attribute names after it."""
    parts = dotted.split(".")
    error: Exception | None = None
    for cut in range(len(parts), 0, -1):
        try:
            return importlib.import_module(".".join(parts[:cut])), parts[cut:]
        except ImportError as err:
            error = err  # the shortest path's error: the package or module that is missing
    raise ConfigError(f"_target_ {dotted!r}{at} cannot be imported: {error}")


def locate(dotted: str, *, where: str = "") -> Any:
    """Import and return the callable ``dotted`` names, after the allow-list checks (see the module docstring).

    Args:
        dotted: the ``_target_`` text, e.g. ``torch.optim.SGD``.
        where: the config key (and file) it came from, for the message.

    Raises:
        ConfigError: the path is refused, does not exist, or is not callable; the message says which and why.
    """
    at = f" (at {where})" if where else ""
    if not isinstance(dotted, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", dotted):
        why = ("it is an interpolation; write the dotted path itself" if isinstance(dotted, str) and "${" in dotted
               else "it is not a dotted Python path")
        raise _refuse(dotted, where, why)
    package = dotted.split(".", 1)[0]
    if package not in ALLOWED_PACKAGES:
        raise _refuse(dotted, where, f"package {package!r} is not one configs may use ({', '.join(ALLOWED_PACKAGES)})")
    private = next((p for p in dotted.split(".") if p.startswith("_")), None)
    if private:
        raise _refuse(dotted, where, f"{private!r} is a private name")
    denied = _denied_part(dotted)
    if denied:
        raise _refuse(dotted, where, f"the module {denied} runs processes, writes files or loads code")
    obj, attributes = _import_path(dotted, at)
    for name in attributes:
        parent = obj
        try:
            obj = getattr(obj, name)
        except AttributeError as err:
            public = [n for n in dir(parent) if not n.startswith("_")]
            raise ConfigError(f"_target_ {dotted!r}{at} does not exist: {err}.{did_you_mean(name, public)}") from err
        if inspect.ismodule(obj) and obj.__name__ != f"{parent.__name__}.{name}":
            raise _refuse(dotted, where, f"{name!r} is the module {obj.__name__} reached through another module")
    if inspect.ismodule(obj) or not callable(obj):
        raise ConfigError(f"_target_ {dotted!r}{at} is not a callable: it names a "
                          f"{'module' if inspect.ismodule(obj) else type(obj).__name__}")
    _judge(obj, dotted, where)
    return obj


def _judge(obj: Any, dotted: str, where: str) -> None:
    """Refuse ``obj`` unless a rule for the package it really lives in admits it."""
    qualname = getattr(obj, "__qualname__", "")
    if inspect.ismethod(obj) or (inspect.isroutine(obj) and "." in qualname and "<locals>" not in qualname):
        raise _refuse(dotted, where, f"{qualname or dotted} is a method; configs name classes "
                                     "and builder functions")
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or not module:
        raise _refuse(dotted, where, "the module it lives in cannot be determined")
    if _denied_part(module):
        raise _refuse(dotted, where, f"it lives in {module}, a module that runs processes, writes files or loads code")
    if module.split(".", 1)[0] not in ALLOWED_PACKAGES:
        raise _refuse(dotted, where, f"it lives in {module}, outside the packages configs may use")
    rule = next((r for r in RULES if _under(module, r.package)), None)
    if rule is None or not rule.admits(obj):
        kind = "class" if inspect.isclass(obj) else "function" if inspect.isroutine(obj) else type(obj).__name__
        if rule is None:
            raise _refuse(dotted, where, f"it is a {kind} of {module}, a module configs may name nothing from")
        raise _refuse(dotted, where, f"it is a {kind} of {module}, and there configs may name only {rule.what}")


def iter_targets(node: Any, path: str = "") -> Iterator[tuple[str, DictConfig]]:
    """Every ``(key_path, node)`` pair of ``_target_`` nodes in a config tree, outermost first."""
    if isinstance(node, DictConfig):
        if "_target_" in node:
            yield path, node
        for key in node:
            child = node._get_node(key)
            yield from iter_targets(child, f"{path}.{key}" if path else str(key))
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            yield from iter_targets(node._get_node(i), f"{path}[{i}]")


def _iter_values(node: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """Every ``(key_path, key, value node)`` of a config tree."""
    if isinstance(node, DictConfig):
        for key in node:
            child = node._get_node(key)
            full = f"{path}.{key}" if path else str(key)
            yield full, str(key), child
            yield from _iter_values(child, full)
    elif isinstance(node, ListConfig):
        for i in range(len(node)):
            yield from _iter_values(node._get_node(i), f"{path}[{i}]")


def _origin(path: str, origins: Origins | None) -> str:
    if origins is None:
        return path
    key = re.sub(r"\[\d+\]", "", path).removesuffix("._target_")
    return f"{path} (from {origins.of(key)})"


def _key_path(node: Any) -> str:
    """Where a section sits in its config (``callbacks[0]``), so that messages name the whole key."""
    parts = []
    while isinstance(node, (DictConfig, ListConfig)) and node._get_parent() is not None:
        parent = node._get_parent()
        parts.append(f"[{node._key()}]" if isinstance(parent, ListConfig) else f".{node._key()}")
        node = parent
    return "".join(reversed(parts)).lstrip(".")


def _check_tree(cfg: Any, origins: Origins | None, resolved: bool) -> None:
    prefix = _key_path(cfg)
    for path, key, child in _iter_values(cfg, prefix):
        if isinstance(child, (DictConfig, ListConfig)):
            continue  # walked
        value = child._value()
        if child._is_interpolation() and not resolved:
            continue  # judged in the resolved tree
        if resolved and isinstance(value, str) and "${" in value:
            raise ConfigError(f"{_origin(path, origins)}={value!r} is refused: it would be resolved a second time "
                              "when built (an escaped interpolation); write the value itself")
        if key in CODE_LOADING_ARGS and value not in CODE_LOADING_ARGS[key]:
            admitted = " or ".join(str(v).lower() for v in CODE_LOADING_ARGS[key] if v is not None)
            rule = f"only {key}: {admitted} is admitted" if admitted else f"{key} may not be set"
            raise ConfigError(f"{_origin(path, origins)}={value!r} is refused: it lets a file or a hub load and run "
                              f"code ({rule} in a config)")
    for path, node in iter_targets(cfg, prefix):
        locate(node._get_node("_target_")._value(), where=_origin(f"{path}._target_" if path else "_target_", origins))


def _resolved(node: DictConfig | ListConfig) -> DictConfig | ListConfig:
    """A copy of ``node`` with every interpolation resolved (against its own root), as Hydra would build it."""
    out = copy.deepcopy(node)
    out._set_flag(flags=["allow_objects", "struct", "readonly"], values=[True, False, False])
    out._set_parent(node._get_parent())
    OmegaConf.resolve(out)
    return out


def check_targets(cfg: Any, origins: Origins | None = None) -> None:
    """Refuse the whole config when a ``_target_`` or an argument in it is not admitted, before anything is built.

    The config is checked as written and, when it resolves, as resolved (an interpolation can make a node).

    Args:
        cfg: a config node (a whole run config or one section).
        origins: where each key came from (file or override), for the messages.

    Raises:
        ConfigError: naming the key, where it came from, why it is refused and what a config may name.
    """
    _check_tree(cfg, origins, resolved=False)
    try:
        resolved = _resolved(cfg)
    except OmegaConfBaseException:
        return  # unresolvable: validation reports it, and instantiate() resolves strictly before building
    _check_tree(resolved, origins, resolved=True)


def instantiate(node: Any, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` on the resolved node, after :func:`check_targets` on exactly what is built."""
    from hydra.utils import instantiate as hydra_instantiate

    if isinstance(node, (dict, list)):
        node = OmegaConf.create(node)
    if isinstance(node, (DictConfig, ListConfig)):
        try:
            node = _resolved(node)
        except OmegaConfBaseException as err:
            raise ConfigError(f"cannot resolve {getattr(err, 'full_key', '') or 'the config'}: {err}") from err
        _check_tree(node, None, resolved=True)  # exactly what Hydra builds
    if kwargs:
        check_targets(OmegaConf.create(kwargs, flags={"allow_objects": True}))
    try:
        return hydra_instantiate(node, **kwargs)
    except Exception as err:
        cause = err
        while cause.__cause__ is not None and not isinstance(cause, OarkitError):
            cause = cause.__cause__
        if isinstance(cause, OarkitError):
            raise cause from err
        raise
