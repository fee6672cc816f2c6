"""``ServeConfig``: what ``oarkit serve`` was asked to serve and how (one record the app, its workers and a later
Ray deployment all read)."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass

from oarkit.core.errors import ConfigError

#: the environment variable that hands a :class:`ServeConfig` to each uvicorn worker process (``--workers N``)
CONFIG_ENV = "OARKIT_SERVE_CONFIG"


@dataclass(frozen=True)
class ServeConfig:
    """The server's settings (the ``oarkit serve`` flags of the same names).

    Attributes:
        sources: what to serve: run, model or export directories, pipeline folders, registry names.
        name: the served name of the one model (default: see :func:`oarkit.core.serve.models.served_name`).
        host, port: where to listen; 127.0.0.1 unless told otherwise.
        max_batch_size: inputs per batch a model runs.
        max_delay_ms: how long a batch waits for more requests after its first.
        max_queue: requests waiting per model before new ones are refused with 503.
        max_body_mb: the largest request body; a larger one is refused with 413 before it is read whole.
        workers: uvicorn worker processes (each loads every model).
        ray: run the app as a Ray Serve deployment (on ``$RAY_ADDRESS``'s cluster, else a local Ray).
        replicas: Ray Serve replicas, each a process with every model and its own batching (needs ``ray``).
        api_key_env: the environment variable holding the Bearer token every endpoint but health requires.
        device: the predictors' device.
    """

    sources: tuple[str, ...]
    name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    max_batch_size: int = 16
    max_delay_ms: float = 5.0
    max_queue: int = 256
    max_body_mb: float = 20.0
    workers: int = 1
    api_key_env: str | None = None
    device: str = "cpu"
    ray: bool = False
    replicas: int = 1

    def __post_init__(self) -> None:
        if not self.sources:
            raise ConfigError("serve needs at least one MODEL: a run directory, export folder or registry name")
        if self.name is not None and len(self.sources) != 1:
            raise ConfigError(f"--name names one model, but {len(self.sources)} are served; leave --name out "
                              "(each model is named after its folder or registry name) or serve one model")
        for key, low in (("max_batch_size", 1), ("max_queue", 1), ("workers", 1), ("replicas", 1), ("port", 0)):
            if int(getattr(self, key)) < low:
                raise ConfigError(f"--{key.replace('_', '-')} must be at least {low}, got {getattr(self, key)}")
        for key in ("max_delay_ms", "max_body_mb"):
            if float(getattr(self, key)) < 0 or (key == "max_body_mb" and not float(self.max_body_mb)):
                raise ConfigError(f"--{key.replace('_', '-')} must be positive, got {getattr(self, key)}")
        if self.replicas > 1 and not self.ray:
            raise ConfigError(f"--replicas {self.replicas} needs --ray (Ray Serve replicas); without Ray, use "
                              f"--workers {self.replicas} for that many uvicorn processes on this machine")
        if self.ray and self.workers > 1:
            raise ConfigError(f"--workers {self.workers} is uvicorn's; with --ray, scale with --replicas "
                              f"{self.workers} instead (each replica is a Ray Serve process)")

    @property
    def max_body_bytes(self) -> int:
        return int(self.max_body_mb * 1024 * 1024)

    def api_key(self) -> str | None:
        """The token clients must send, read from :attr:`api_key_env` (``None``: no key required).

        Raises:
            ConfigError: the variable is named but unset or empty.
        """
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env, "")
        if not value:
            raise ConfigError(f"--api-key-env {self.api_key_env}: the environment variable {self.api_key_env} is "
                              f"unset or empty; export {self.api_key_env}=<a long random token> first")
        return value

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        data = json.loads(text)
        data["sources"] = tuple(data["sources"])
        return cls(**data)
