"""``serve_on_ray(config)``: the same FastAPI app as a Ray Serve deployment of ``config.replicas`` replicas.

Each replica builds the app from the :class:`ServeConfig` itself (its own models, batchers and metrics: replicas
share nothing but the model folder) and is ready only once its models are loaded and warm. The cluster is the one
``$RAY_ADDRESS`` names (``ray.init(address=...)``), else a local Ray on 127.0.0.1 with the dashboard off. Ray
Serve's proxy listens on ``config.host:config.port``; the process stays in the foreground until SIGTERM or Ctrl-C,
then removes the application (and on a local Ray, Serve and Ray with it) and returns 0.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
from typing import Any

from oarkit.core.errors import ConfigError
from oarkit.core.kits import pipeline_task_id
from oarkit.core.serve.config import ServeConfig

logger = logging.getLogger(__name__)

RAY_EXTRA = "pip install 'oarkit[serve-ray]' (ray[serve])"
#: the Ray Serve application and deployment name
APP_NAME = "oarkit"
#: how long a replica may take to finish its requests when the application is removed
GRACEFUL_SECONDS = 8
#: the local Ray's object store: the app passes no large objects through it
LOCAL_OBJECT_STORE_BYTES = 128 * 1024 * 1024


def require_ray() -> Any:
    """``ray.serve``, imported.

    Raises:
        ConfigError: ray or its serve extra is not installed (the install command named).
    """
    try:
        from ray import serve
    except ImportError as err:
        raise ConfigError(f"--ray needs Ray Serve, which is not installed ({err}): {RAY_EXTRA}") from err
    return serve


def build_app(config: ServeConfig) -> Any:
    """The ASGI app one replica serves: every model loaded before the replica reports healthy."""
    from oarkit.core.serve.app import create_app

    if not logging.getLogger().handlers:  # a Ray worker: log as ``oarkit serve`` does (Ray forwards stdout)
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    return create_app(config, background_load=False)


def deployment(config: ServeConfig) -> Any:
    """The bound Ray Serve application: ``config.replicas`` replicas of the app, with Ray's own queue out of the
    way (each replica takes up to a full batch queue, so that its batcher gathers and its 503 applies)."""
    serve = require_ray()
    # a replica's working directory is not this one: folders travel as absolute paths
    sources = tuple(os.path.abspath(s) if os.path.exists(s) and not pipeline_task_id(s) else s
                    for s in config.sources)
    text = dataclasses.replace(config, sources=sources).to_json()

    def build() -> Any:  # runs in each replica: the config travels as JSON, the models load there
        return build_app(ServeConfig.from_json(text))

    cpus = float(os.cpu_count() or 1) if not os.environ.get("RAY_ADDRESS") else 1.0
    actor: dict[str, Any] = {"num_cpus": min(1.0, cpus / config.replicas)}
    if config.api_key_env:  # a replica on another node has no such variable: it travels in the runtime env
        actor["runtime_env"] = {"env_vars": {config.api_key_env: config.api_key()}}
    ingress = serve.deployment(serve.ingress(build)(), name=APP_NAME)
    return ingress.options(
        num_replicas=config.replicas,
        ray_actor_options=actor,
        max_ongoing_requests=config.max_queue + config.max_batch_size,
        graceful_shutdown_timeout_s=GRACEFUL_SECONDS,
    ).bind()


def connect() -> bool:
    """Join ``$RAY_ADDRESS``'s cluster, or start a local Ray on 127.0.0.1; returns whether it is local."""
    import ray

    address = os.environ.get("RAY_ADDRESS")
    if address:
        logger.info("joining the Ray cluster at %s", address)
        ray.init(address=address, log_to_driver=True)
        return False
    cpus = os.cpu_count() or 1
    logger.info("starting local Ray on 127.0.0.1 (%d CPUs, dashboard off)", cpus)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves this machine
    ray.init(address="local", num_cpus=cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
             object_store_memory=LOCAL_OBJECT_STORE_BYTES, log_to_driver=True)
    return True


def serve_on_ray(config: ServeConfig) -> int:
    """Deploy the app on Ray Serve and wait in the foreground until SIGTERM or Ctrl-C; returns the exit status.

    Raises:
        ConfigError: Ray Serve is not installed.
    """
    serve = require_ray()
    import ray

    local = connect()
    stop = threading.Event()
    # after ray.init, which sets its own SIGTERM handler (sys.exit): a signal now only ends the wait below
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        serve.start(http_options={"host": config.host, "port": config.port})
        logger.info("deploying %d replica%s of %s", config.replicas, "" if config.replicas == 1 else "s",
                    ", ".join(config.sources))
        serve.run(deployment(config), name=APP_NAME, route_prefix="/", blocking=False)
        where = f"http://{config.host}:{config.port}"
        logger.info("ready at %s (%d replica%s; docs: %s/docs, metrics of one replica: %s/metrics)", where,
                    config.replicas, "" if config.replicas == 1 else "s", where, where)
        while not stop.wait(0.5):
            pass
        logger.info("stopping: removing the Ray Serve application %s", APP_NAME)
    finally:
        if local:
            serve.shutdown()
        else:  # the cluster's other applications keep running
            serve.delete(APP_NAME)
        ray.shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
