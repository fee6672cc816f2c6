"""PaddleX's basic-serving routes on ``oarkit serve``, so that a PaddleX client moves over unchanged.

Each served model whose task declares a :class:`~oarkit.core.kits.PaddleXRoute` (``/image-classification``,
``/object-detection``, ``/semantic-segmentation``, ``/ocr``) answers it; where two served models share a route,
the first given answers it (the startup log says which). A request is PaddleX's JSON body: the image as base64
in ``image`` (``file`` for ``/ocr``, with ``fileType``). A URL there is refused: the server fetches nothing.
Unlike PaddleX's basic serving, which runs one request at a time, requests go through the model's batcher and
its queue like ``/v1/models/{name}/predict``.

Every answer is PaddleX's envelope: ``{"logId", "errorCode": 0, "errorMsg": "Success", "result"}``, and on a
refusal ``{"logId", "errorCode": <HTTP status>, "errorMsg": "..."}`` with that status (422 for a body that does
not fit the route's schema, as PaddleX answers).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from oarkit.core.errors import OarkitError
from oarkit.core.serve.batcher import BatcherStopped, QueueFull
from oarkit.core.serve.errors import RequestError
from oarkit.core.serve.inputs import decode_base64, decode_image
from oarkit.core.serve.model_set import ModelSet

logger = logging.getLogger(__name__)

#: a ``file`` / ``image`` value PaddleX would download (a scheme such as ``http://``)
URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def envelope(status: int, message: str, result: Any = None) -> dict[str, Any]:
    """PaddleX's answer body: the result on success (status 0), else the error code and message."""
    body: dict[str, Any] = {"logId": str(uuid.uuid4()), "errorCode": 0 if status < 400 else status,
                            "errorMsg": message}
    if result is not None:
        body["result"] = result
    return body


def paddlex_error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(envelope(status, message), status_code=status, headers=headers)


def add_paddlex_routes(app: FastAPI, models: ModelSet) -> dict[str, str]:
    """Add the PaddleX route of every served model's task; returns ``{path: served name}``."""
    from oarkit.core.kits import source_entry

    routes: dict[str, str] = {}
    for name in models.names:
        route = source_entry(models.sources[name]).paddlex
        if route is None:
            continue
        if route.path in routes:
            logger.info("PaddleX route POST %s: answered by %s, not %s (the first model given)", route.path,
                        routes[route.path], name)
            continue
        routes[route.path] = name
        logger.info("PaddleX route POST %s -> model %s", route.path, name)
        app.add_api_route(route.path, _handler(name, route.path, route.image_field, route.params),
                          methods=["POST"], tags=["paddlex"], summary=f"PaddleX's {route.path} on model {name}",
                          openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                              "schema": {"type": "object", "required": [route.image_field], "properties": {
                                  route.image_field: {"type": "string", "description": "base64 of the image"}}}}}}})
    app.state.paddlex_paths = frozenset(routes)
    return routes


def _handler(name: str, path: str, field: str, params_of: Any) -> Any:
    async def paddlex_route(request: Request) -> JSONResponse:
        request.state.model = name
        try:
            models: ModelSet = request.app.state.models
            body = await _body(request)
            params = _params(body, field, params_of)
            image = _image(body[field], field)
            model = models.get(name)
            results, size = await models.batchers[name].submit([image], (model.params_key(params), "paddlex"))
            request.state.batch_size = size
            return JSONResponse(envelope(200, "Success", results[0]))
        except RequestError as err:
            return paddlex_error(err.status, str(err), err.headers)
        except QueueFull as err:
            return paddlex_error(503, str(err), {"Retry-After": str(err.retry_after)})
        except BatcherStopped as err:
            return paddlex_error(503, str(err), {"Retry-After": "5", "Connection": "close"})
        except OarkitError as err:  # the predictor refused the input
            return paddlex_error(400, str(err))
        except Exception as err:  # noqa: BLE001  (the envelope, not a traceback; the log has it whole)
            logger.error("POST %s failed", path, exc_info=err)
            return paddlex_error(500, f"the server failed on this request ({type(err).__name__}: {err}); see its log")

    paddlex_route.__name__ = f"paddlex_{path.strip('/').replace('-', '_')}"
    return paddlex_route


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RequestError(f"the body is not valid JSON ({err})", status=422) from err
    if not isinstance(body, dict):
        raise RequestError("the body must be a JSON object such as {\"image\": \"<base64 of the image file>\"}",
                           status=422)
    return body


def _params(body: dict[str, Any], field: str, params_of: Any) -> dict[str, Any]:
    if field not in body:
        raise RequestError(f"the body has no {field!r}: send {{\"{field}\": \"<base64 of the image file>\"}}",
                           status=422)
    try:
        return params_of({k: v for k, v in body.items() if k != field})
    except ValueError as err:
        raise RequestError(str(err), status=422) from err


def _image(value: Any, field: str) -> Any:
    if isinstance(value, str) and URL.match(value.strip()):
        raise RequestError(f"{field} is a URL ({value.strip()[:60]}); this server fetches nothing: send the file's "
                           "bytes as base64", status=422)
    return decode_image(decode_base64(value, field), field)
