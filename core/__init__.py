"""oarkit.core: the registry, configs, the training engine, export and deployment shared by every kit."""

from __future__ import annotations

import logging
import os

# Entry-point hygiene: albumentations phones home at import, and a mistaken hub name should fail fast.
os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")


class _TorchaoEnumNotice(logging.Filter):
    """Drops torch 2.14's notice about torchao registering its enums as pytree constants: transformers imports
    torchao, the notice is printed twice on every import of a kit that uses transformers, and it is torchao's
    deprecation, not something a user of oarkit can act on. A filter survives torch resetting its loggers' levels."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "is an Enum subclass and is now natively supported" not in record.getMessage()


logging.getLogger("torch.utils._pytree").addFilter(_TorchaoEnumNotice())

from oarkit.core.errors import ConfigError, DataError, OarkitError, TrainingError, UnknownNameError, WeightsError  # noqa: E402
from oarkit.core.registry import (  # noqa: E402
    ModelCard,
    Namespace,
    PretrainedWeights,
    create_model,
    list_models,
    model_info,
    register_model,
    register_namespace,
)

_LAZY = {
    "Trainer": "oarkit.core.engine.trainer",
    "Task": "oarkit.core.engine.task",
    "Callback": "oarkit.core.engine.callbacks",
    "Metric": "oarkit.core.engine.metric",
    "load_config": "oarkit.core.config",
    "instantiate": "oarkit.core.config",
    "load_model": "oarkit.core.hub",
}


def __getattr__(name: str):
    # Keep `import oarkit.core` light: the engine pulls in matplotlib, tensorboard and tqdm.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'oarkit.core' has no attribute {name!r}")


__all__ = [
    "Callback", "ConfigError", "DataError", "Metric", "ModelCard", "Namespace", "OarkitError", "PretrainedWeights",
    "Task", "Trainer", "TrainingError", "UnknownNameError", "WeightsError", "create_model", "instantiate",
    "list_models", "load_config", "load_model", "model_info", "register_model", "register_namespace",
]
