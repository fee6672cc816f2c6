"""``_target_`` safety: a config names callables only inside an allow-list of packages.

A config file is data, not a program: ``_target_: os.system`` or ``builtins.eval`` must not run. The check
applies to the dotted path *and* to the module the resolved object really lives in, so re-exports such as
``oarkit.core.config.targets.os.system`` are refused too. A few callables inside allowed packages that load
or compile code (``torch.hub.load``, ``torch.utils.cpp_extension``, pickled ``torch.load``) are refused as well.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator
from typing import Any

from omegaconf import DictConfig, ListConfig

from oarkit.core.errors import ConfigError

ALLOWED_PACKAGES = ("oarkit", "torch", "torchvision", "albumentations", "transformers", "timm", "torchao")
DENIED_PREFIXES = ("torch.hub", "torch.utils.cpp_extension", "torch.load", "torch.jit", "torch.package",
                   "torch.serialization", "torch.ops", "torch.library", "torch.utils.data.datapipes",
                   "transformers.dynamic_module_utils", "timm.models._hub")
HYDRA_KEYS = ("_target_", "_partial_", "_recursive_", "_convert_", "_args_")


def _package_of(dotted: str) -> str:
    return dotted.split(".", 1)[0]


def _allowed_path(dotted: str) -> bool:
    return _package_of(dotted) in ALLOWED_PACKAGES and not any(
        dotted == d or dotted.startswith(d + ".") for d in DENIED_PREFIXES)


def locate(dotted: str, *, where: str = "") -> Any:
    """Import and return the callable ``dotted`` names, after the allow-list checks.

    Raises:
        ConfigError: the path is outside the allow-list, does not exist, or is not callable.
    """
    at = f" (at {where})" if where else ""
    refuse = (f"_target_ {dotted!r}{at} is refused: configs may only name callables in "
              f"{', '.join(ALLOWED_PACKAGES)} (and not code loaders such as torch.hub). "
              "A config file names components; it must not be a way to run arbitrary code.")
    if not isinstance(dotted, str) or not dotted or any(p.startswith("_") for p in dotted.split(".")[1:]):
        raise ConfigError(refuse)
    if not _allowed_path(dotted):
        raise ConfigError(refuse)
    parts = dotted.split(".")
    obj, err = None, None
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError as e:
            err = e
            continue
        try:
            for name in parts[cut:]:
                obj = getattr(obj, name)
        except AttributeError as e:
            raise ConfigError(f"_target_ {dotted!r}{at} does not exist: {e}") from e
        break
    else:
        raise ConfigError(f"_target_ {dotted!r}{at} cannot be imported: {err}")
    if inspect.ismodule(obj) or not callable(obj):
        raise ConfigError(f"_target_ {dotted!r}{at} is not a callable")
    module = getattr(obj, "__module__", None) or ""
    if not _allowed_path(module) and not _allowed_path(getattr(type(obj), "__module__", "") or ""):
        raise ConfigError(refuse)
    return obj


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


def check_targets(cfg: Any) -> None:
    """Refuse the whole config when any ``_target_`` in it is not allowed, before anything is built."""
    for path, node in iter_targets(cfg):
        locate(node._get_node("_target_")._value(), where=path)
        if node.get("trust_remote_code") is True:
            raise ConfigError(f"{path}.trust_remote_code=true is refused: it runs code downloaded from a hub")


def instantiate(node: Any, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` after :func:`check_targets`."""
    from hydra.utils import instantiate as hydra_instantiate

    check_targets(node)
    try:
        return hydra_instantiate(node, **kwargs)
    except Exception as err:
        from oarkit.core.errors import OarkitError

        cause = err
        while cause.__cause__ is not None and not isinstance(cause, OarkitError):
            cause = cause.__cause__
        if isinstance(cause, OarkitError):
            raise cause from err
        raise
