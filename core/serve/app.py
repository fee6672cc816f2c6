"""The FastAPI app of ``oarkit serve``: the Open Inference Protocol paths, the application API, metrics, docs.

Paths (fixed: clients and checks depend on them):

- ``GET /v2/health/live``, ``GET /v2/health/ready`` (503 until every model is loaded and warm), ``GET /v2``,
  ``GET /v2/models/{name}`` (metadata), ``GET /v2/models/{name}/ready``, ``POST /v2/models/{name}/infer``;
- ``GET /v1/models``, ``POST /v1/models/{name}/predict`` (``{"results": [...]}``, each the predictor's
  ``to_dict()``);
- ``GET /metrics`` (Prometheus text), ``GET /docs`` (OpenAPI);
- PaddleX's ``POST /ocr``, ``/image-classification``, ``/object-detection``, ``/semantic-segmentation`` for the
  served models of those tasks, in PaddleX's envelope (:mod:`oarkit.core.serve.paddlex`).

Every refusal is a JSON ``{"error": "..."}`` naming the problem (PaddleX's envelope on its routes); bad input is a
4xx, never a 5xx.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from oarkit.core.errors import OarkitError
from oarkit.core.serve import oip
from oarkit.core.serve.batcher import BatcherStopped, QueueFull
from oarkit.core.serve.config import CONFIG_ENV, ServeConfig
from oarkit.core.serve.errors import RequestError
from oarkit.core.serve.model_set import ModelSet
from oarkit.core.serve.observe import PROMETHEUS_CONTENT_TYPE, RequestLog, ServeMetrics
from oarkit.core.serve.paddlex import add_paddlex_routes
from oarkit.core.serve.payload import read_predict_request
from oarkit.core.serve.security import ApiKeyGuard, BodyLimit

logger = logging.getLogger(__name__)

PREDICT_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "properties": {
        "file": {"type": "array", "items": {"type": "string", "format": "binary"}}}}},
    "application/json": {"schema": {"type": "object", "required": ["inputs"], "properties": {
        "inputs": {"type": "array", "items": {"type": "object"},
                   "example": [{"image": "<base64>"}, {"text": "..."}, {"text_a": "...", "text_b": "..."}]},
        "params": {"type": "object", "example": {"topk": 3}}}}}}}}
INFER_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
    "type": "object", "required": ["inputs"], "properties": {"inputs": {"type": "array", "items": {
        "type": "object", "required": ["name", "shape", "datatype", "data"]}}}}}}}}


def error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def create_app(config: ServeConfig, *, background_load: bool = True) -> FastAPI:
    """The app serving ``config.sources``.

    Args:
        config: what to serve and how.
        background_load: load the models in a thread after startup (``ready`` is 503 meanwhile); ``False``
            loads them before the app takes requests (tests).

    Raises:
        OarkitError: a source that names no model, two sources of one name, an unset API key variable.
    """
    metrics = ServeMetrics()
    models = ModelSet(config, metrics)
    api_key = config.api_key()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        models.start(background=background_load)
        yield
        await models.stop()

    app = FastAPI(title="oarkit serve", version="1", lifespan=lifespan,
                  description="oarkit models behind the Open Inference Protocol (KServe v2) and a JSON API.")
    app.state.models, app.state.metrics, app.state.config = models, metrics, config

    # -- refusals as {"error": ...} ------------------------------------------------------------------------
    @app.exception_handler(RequestError)
    async def _request_error(request: Request, err: RequestError) -> JSONResponse:
        return error(err.status, str(err), err.headers)

    @app.exception_handler(QueueFull)
    async def _queue_full(request: Request, err: QueueFull) -> JSONResponse:
        return error(503, str(err), {"Retry-After": str(err.retry_after)})

    @app.exception_handler(BatcherStopped)
    async def _stopping(request: Request, err: BatcherStopped) -> JSONResponse:
        return error(503, str(err), {"Retry-After": "5", "Connection": "close"})

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, err: HTTPException) -> JSONResponse:
        message = str(err.detail)
        if err.status_code == 404:
            message = f"no endpoint {request.method} {request.url.path}; the endpoints are listed at /docs"
        elif err.status_code == 405:
            allowed = (err.headers or {}).get("Allow", "")
            message = f"{request.method} is not allowed on {request.url.path}; use {allowed or 'another method'}"
        return error(err.status_code, message, err.headers)

    @app.exception_handler(Exception)
    async def _internal(request: Request, err: Exception) -> JSONResponse:
        logger.error("%s %s failed", request.method, request.url.path, exc_info=err)
        return error(500, f"the server failed on this request ({type(err).__name__}: {err}); see its log")

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, err: RequestValidationError) -> JSONResponse:
        return error(400, f"invalid request: {err.errors()}")

    # -- health (OIP) ----------------------------------------------------------------------------------------
    @app.get("/v2/health/live", tags=["health"])
    async def live() -> dict[str, Any]:
        return {"live": True}

    @app.get("/v2/health/ready", tags=["health"])
    async def ready() -> JSONResponse:
        return JSONResponse({"ready": models.ready, "models": models.status()}, status_code=200 if models.ready
                            else 503)

    @app.get("/v2", tags=["oip"])
    async def server_metadata() -> dict[str, Any]:
        return {"name": "oarkit", "version": "1", "extensions": []}

    # -- models (OIP) ----------------------------------------------------------------------------------------
    @app.get("/v2/models/{name}", tags=["oip"])
    async def model_metadata(name: str, request: Request) -> dict[str, Any]:
        return oip.metadata(_model(request, name))

    @app.get("/v2/models/{name}/ready", tags=["oip"])
    async def model_ready(name: str, request: Request) -> JSONResponse:
        _model(request, name)
        return JSONResponse({"name": name, "ready": True})

    @app.post("/v2/models/{name}/infer", tags=["oip"], openapi_extra=INFER_BODY)
    async def infer(name: str, request: Request) -> dict[str, Any]:
        model = _model(request, name)
        body = await _json_body(request)
        return await run_in_threadpool(oip.infer, model, body)

    # -- application API -------------------------------------------------------------------------------------
    @app.get("/v1/models", tags=["predict"])
    async def list_models() -> dict[str, Any]:
        entries = []
        for name in models.names:
            model = models.models.get(name)
            entry = model.info() if model is not None else {"name": name, "source": models.sources[name]}
            entry["state"] = models.status()[name]
            if name in models.errors:
                entry["error"] = models.errors[name]
            entries.append(entry)
        return {"models": entries}

    @app.post("/v1/models/{name}/predict", tags=["predict"], openapi_extra=PREDICT_BODY)
    async def predict(name: str, request: Request) -> dict[str, Any]:
        model = _model(request, name)
        inputs, params = await read_predict_request(request, model)
        key = model.params_key(params)
        try:
            results, size = await models.batchers[name].submit(inputs, (key, "dict"))
        except (RequestError, QueueFull, BatcherStopped):
            raise
        except OarkitError as err:  # the predictor refused the input (a DataError, a ConfigError)
            raise RequestError(str(err)) from err
        request.state.batch_size = size
        return {"results": results}

    add_paddlex_routes(app, models)  # POST /ocr, /image-classification, ... for the served models' tasks

    @app.get("/metrics", tags=["metrics"])
    async def prometheus() -> Response:
        return Response(metrics.render(), media_type=PROMETHEUS_CONTENT_TYPE)

    app.add_middleware(BodyLimit, max_bytes=config.max_body_bytes)
    if api_key:
        app.add_middleware(ApiKeyGuard, api_key=api_key)
    app.add_middleware(RequestLog, metrics=metrics)  # outermost: it logs the 401s and 413s too
    return app


def _model(request: Request, name: str) -> Any:
    models: ModelSet = request.app.state.models
    if name in models.sources:
        request.state.model = name
    return models.get(name)


async def _json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        raise RequestError("the request body is empty; send a JSON object")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RequestError(f"the body is not valid JSON ({err})") from err


def app_from_env() -> FastAPI:
    """The app of the :class:`ServeConfig` in ``$OARKIT_SERVE_CONFIG`` (what each uvicorn worker builds)."""
    if not logging.getLogger().handlers:  # a spawned worker: log as the parent process does
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise OarkitError(f"{CONFIG_ENV} is unset; start the server with `oarkit serve MODEL`")
    return create_app(ServeConfig.from_json(text))
