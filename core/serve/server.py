"""``serve(config)``: the app under uvicorn: bind, log, and on SIGTERM stop accepting, finish what is in flight
and exit 0 (within :data:`GRACEFUL_SECONDS` plus the batchers' drain)."""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from oarkit.core.serve.config import CONFIG_ENV, ServeConfig

logger = logging.getLogger(__name__)

#: how long in-flight requests may take to finish after SIGTERM before their connections are closed
GRACEFUL_SECONDS = 8


def _stopped_by(sig: int, frame: Any) -> None:
    # uvicorn re-raises the signal it stopped on once it is done; this handler makes that re-raise a clean exit.
    logger.info("stopped by %s", signal.Signals(sig).name)


def serve(config: ServeConfig) -> int:
    """Run the server in the foreground until SIGTERM or Ctrl-C; returns the exit status.

    With ``config.workers`` above 1, uvicorn starts that many processes, each building the app from
    ``$OARKIT_SERVE_CONFIG`` (and loading every model); with ``config.ray``, the app runs as a Ray Serve
    deployment of ``config.replicas`` replicas instead (:func:`oarkit.core.serve.ray_deploy.serve_on_ray`).

    Raises:
        OarkitError: a MODEL that names no model, two of one name, an unset API key variable (before binding),
            ``--ray`` without Ray Serve installed.
    """
    from oarkit.core.serve.models import check_sources

    check_sources(config.sources, config.name)
    config.api_key()
    if config.host not in ("127.0.0.1", "localhost", "::1") and not config.api_key_env:
        logger.warning("listening on %s without an API key: anyone who reaches it can use the models "
                       "(--api-key-env VAR requires a Bearer token)", config.host)
    if config.ray:
        from oarkit.core.serve.ray_deploy import serve_on_ray

        return serve_on_ray(config)
    import uvicorn

    from oarkit.core.serve.app import create_app

    options = dict(host=config.host, port=config.port, log_config=None, access_log=False,
                   timeout_graceful_shutdown=GRACEFUL_SECONDS)
    where = f"http://{config.host}:{config.port}"
    signal.signal(signal.SIGTERM, _stopped_by)
    if config.workers > 1:
        os.environ[CONFIG_ENV] = config.to_json()
        logger.info("serving %s at %s with %d workers (docs: %s/docs)", ", ".join(config.sources), where,
                    config.workers, where)
        uvicorn.run("oarkit.core.serve.app:app_from_env", factory=True, workers=config.workers, **options)
        return 0
    app = create_app(config)
    logger.info("serving %s at %s (docs: %s/docs, metrics: %s/metrics)", ", ".join(app.state.models.names), where,
                where, where)
    uvicorn.Server(uvicorn.Config(app, **options)).run()
    return 0
