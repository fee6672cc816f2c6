"""Optional dependencies: imported when a format needs them, never installed at run time."""

from __future__ import annotations

import importlib
from types import ModuleType

from oarkit.core.errors import OarkitError

#: import name -> (distribution, oarkit extra that installs it)
OPTIONAL_PACKAGES: dict[str, tuple[str, str]] = {
    "onnx": ("onnx", "onnx"),
    "onnxscript": ("onnxscript", "onnx"),
    "onnxruntime": ("onnxruntime", "onnx"),
    "openvino": ("openvino", "openvino"),
    "executorch": ("executorch", "executorch"),
    "torchao": ("torchao", "quant"),
}


class MissingDependencyError(OarkitError, ImportError):
    """An optional package that a format or runtime needs is not installed."""


def pip_hint(module: str) -> str:
    """The ``pip install`` command that brings ``module`` (its oarkit extra, and the bare package)."""
    dist, extra = OPTIONAL_PACKAGES.get(module.split(".")[0], (module.split(".")[0], ""))
    return f"pip install 'oarkit[{extra}]' (or pip install {dist})" if extra else f"pip install {dist}"


def require(module: str, *, purpose: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingDependencyError` naming what needs it and the install command.

    Args:
        module: the import name (``openvino``, ``executorch.exir``).
        purpose: what needs it, for the message (``"the openvino export format"``).
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(f"{purpose} needs the {module.split('.')[0]!r} package, which is not "
                                     f"installed ({err}). Install it with: {pip_hint(module)}") from err
