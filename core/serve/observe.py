"""What the server reports: Prometheus metrics (one registry per app) and one structured log line per request."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST as PROMETHEUS_CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

logger = logging.getLogger("oarkit.serve.access")

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)

__all__ = ["PROMETHEUS_CONTENT_TYPE", "RequestLog", "ServeMetrics"]


class ServeMetrics:
    """The server's Prometheus families, in a registry of their own (two apps in one process do not clash)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("oarkit_serve_requests", "Requests answered, by model and HTTP status code",
                                ["model", "code"], registry=self.registry)
        self.latency = Histogram("oarkit_serve_request_seconds", "Request latency, from the first byte received to "
                                 "the answer", ["model"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.batch_size = Histogram("oarkit_serve_batch_size", "Inputs per batch a model ran", ["model"],
                                    buckets=BATCH_BUCKETS, registry=self.registry)
        self.queue_depth = Gauge("oarkit_serve_queue_depth", "Requests waiting for a batch", ["model"],
                                 registry=self.registry)
        self.load_seconds = Gauge("oarkit_serve_model_load_seconds", "Time to load and warm up a model",
                                  ["model"], registry=self.registry)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class RequestLog:
    """ASGI middleware: counts and times every HTTP request and logs one JSON line for it.

    The line holds ``method``, ``path``, ``model`` (the served model the request named, or null), ``status``,
    ``batch_size`` (inputs in the batch that answered it, for predictions) and ``ms``; handlers fill the model and
    batch size into the request's ``state``. Only known model names label the metrics, so that a client cannot
    grow them without bound.
    """

    def __init__(self, app: Any, metrics: ServeMetrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        state = scope.setdefault("state", {})
        status = {"code": 500}

        async def record_status(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            seconds = time.perf_counter() - started
            model = state.get("model")
            label = model or ""
            self.metrics.requests.labels(model=label, code=str(status["code"])).inc()
            self.metrics.latency.labels(model=label).observe(seconds)
            logger.info(json.dumps({"method": scope["method"], "path": scope["path"], "model": model,
                                    "status": status["code"], "batch_size": state.get("batch_size"),
                                    "ms": round(seconds * 1000, 2)}))
