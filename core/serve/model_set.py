"""``ModelSet``: every served model of one app, its batcher, and whether all of them are loaded and warm.

The names are checked when the set is made (a typo in a MODEL argument fails before the server binds); loading
runs in a daemon thread once the app starts, so that the health endpoints answer at once and ``ready`` turns 200
when the last model is warm. Each model's batcher starts with the app and is drained when it stops.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from oarkit.core.serve.batcher import Batcher
from oarkit.core.serve.config import ServeConfig
from oarkit.core.serve.errors import RequestError
from oarkit.core.serve.models import ServedModel, check_sources, load_model
from oarkit.core.serve.observe import ServeMetrics

logger = logging.getLogger(__name__)


class ModelSet:
    """The models one app serves.

    Args:
        config: the sources, their names and the batching settings.
        metrics: where the batch sizes, queue depths and load times go.
    """

    def __init__(self, config: ServeConfig, metrics: ServeMetrics) -> None:
        self.config, self.metrics = config, metrics
        self.names = check_sources(config.sources, config.name)
        self.sources = dict(zip(self.names, config.sources))
        self.models: dict[str, ServedModel] = {}
        self.errors: dict[str, str] = {}
        self.loaded = threading.Event()
        self.batchers: dict[str, Batcher] = {}
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        """Every model loaded and warmed up."""
        return self.loaded.is_set() and not self.errors and len(self.models) == len(self.names)

    def start(self, *, background: bool = True) -> None:
        """Start the batchers (on the running loop) and load the models (in a daemon thread unless told)."""
        for name in self.names:
            batcher = Batcher(name, self._runner(name), max_batch_size=self.config.max_batch_size,
                              max_delay_ms=self.config.max_delay_ms, max_queue=self.config.max_queue,
                              on_batch=self.metrics.batch_size.labels(model=name).observe)
            self.metrics.queue_depth.labels(model=name).set_function(lambda b=batcher: b.depth)
            batcher.start()
            self.batchers[name] = batcher
        if background:
            self._thread = threading.Thread(target=self.load, name="oarkit-serve-load", daemon=True)
            self._thread.start()
        else:
            self.load()

    async def stop(self) -> None:
        """Answer every queued request, then stop the batchers."""
        for batcher in self.batchers.values():
            await batcher.stop()

    def load(self) -> None:
        """Load and warm up every model, one after another, logging progress; errors are kept per model."""
        try:
            for i, (name, source) in enumerate(self.sources.items(), 1):
                logger.info("model %d/%d: %s", i, len(self.sources), name)
                try:
                    model = load_model(source, name=name, device=self.config.device)
                except Exception as err:  # noqa: BLE001  (reported by ready and /v1/models; the others still load)
                    self.errors[name] = f"{type(err).__name__}: {err}"
                    logger.error("model %s (%s) failed to load: %s", name, source, self.errors[name])
                    continue
                self.models[name] = model
                self.metrics.load_seconds.labels(model=name).set(model.load_seconds)
            if self.ready:
                logger.info("ready: %s", ", ".join(self.names))
        finally:
            self.loaded.set()

    def get(self, name: str) -> ServedModel:
        """The loaded model of a name.

        Raises:
            RequestError: 404 for an unknown name (the served names listed), 503 while it loads, 500 if it failed.
        """
        if name not in self.sources:
            from oarkit.core.errors import did_you_mean

            raise RequestError(f"no model named {name!r} is served.{did_you_mean(name, self.names)} Served: "
                               f"{', '.join(self.names)} (GET /v1/models lists them)", status=404)
        if name in self.errors:
            raise RequestError(f"model {name!r} failed to load: {self.errors[name]}", status=500)
        if name not in self.models:
            raise RequestError(f"model {name!r} is still loading; retry when GET /v2/health/ready answers 200",
                               status=503, headers={"Retry-After": "2"})
        return self.models[name]

    def status(self) -> dict[str, Any]:
        """Each model's state, for ``/v2/health/ready``."""
        return {name: ("ready" if name in self.models else "failed" if name in self.errors else "loading")
                for name in self.names}

    def _runner(self, name: str) -> Any:
        # a batch key is (params key, answer form): requests share a batch only when both match
        return lambda inputs, key: self.models[name].predict(inputs, *key)
