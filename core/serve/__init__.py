"""oarkit.core.serve: ``oarkit serve``, every kit's models behind one HTTP API (FastAPI under uvicorn).

The server knows tasks only through their task ids' predictors (:func:`oarkit.core.kits.source_entry`): it
serves what ``oarkit predict`` takes. Requests to a model are batched (:class:`Batcher`), bounded (503 when the
queue is full, 413 over the body limit), optionally behind an API key, observable (``/metrics``, one log line per
request) and drained on SIGTERM. Paths: the Open Inference Protocol's (``/v2/...``) for KServe and Triton
clients, ``/v1/models/{name}/predict`` for applications. Needs the ``serve`` extra
(``pip install 'oarkit[serve]'``); importing this package does not import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oarkit.core.serve.config import ServeConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

SERVE_EXTRA = "pip install 'oarkit[serve]' (fastapi, uvicorn, prometheus-client, python-multipart)"


def _require() -> None:
    import importlib.util

    from oarkit.core.errors import OarkitError

    missing = [m for m in ("fastapi", "uvicorn", "prometheus_client", "multipart")
               if importlib.util.find_spec(m) is None]
    if missing:
        raise OarkitError(f"serving needs {', '.join(missing)}: {SERVE_EXTRA}")


def create_app(config: ServeConfig, **kwargs: Any) -> FastAPI:
    """The ASGI app of ``config`` (see :func:`oarkit.core.serve.app.create_app`)."""
    _require()
    from oarkit.core.serve.app import create_app as build

    return build(config, **kwargs)


def serve(config: ServeConfig) -> int:
    """Run the server until SIGTERM (see :func:`oarkit.core.serve.server.serve`)."""
    _require()
    from oarkit.core.serve.server import serve as run

    return run(config)


__all__ = ["SERVE_EXTRA", "ServeConfig", "create_app", "serve"]
