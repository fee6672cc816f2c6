"""The body of ``POST /v1/models/{name}/predict``: a multipart form of ``file`` fields, or JSON
``{"inputs": [...], "params": {...}}``, read into the predictor's inputs and the request's params.

In a form, every field other than ``file`` is a param (its value read as JSON when it parses: ``topk=3`` is the
number 3), and a ``params`` field may hold a JSON object of them. Image decoding runs in a worker thread.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request

from oarkit.core.serve.errors import RequestError
from oarkit.core.serve.inputs import decode_image, image_item, text_item
from oarkit.core.serve.models import ServedModel

JSON_KEYS = ("inputs", "params")
USAGE = ("send a multipart form with one or more 'file' fields (curl -F file=@cat.png), or JSON "
         '{"inputs": [{"image": "<base64>"} | {"text": "..."}], "params": {...}}')


async def read_predict_request(request: Request, model: ServedModel) -> tuple[list[Any], dict[str, Any]]:
    """The inputs (in order) and params of a predict request.

    Raises:
        RequestError: an empty or malformed body, a missing field, an input the model does not take.
    """
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in ("multipart/form-data", "application/x-www-form-urlencoded"):
        return await _read_form(request, model)
    if content_type in ("application/json", "") or content_type.endswith("+json"):
        return await _read_json(request, model)
    raise RequestError(f"Content-Type {content_type!r} is not taken here; {USAGE}", status=415)


async def _read_form(request: Request, model: ServedModel) -> tuple[list[Any], dict[str, Any]]:
    form = await request.form()
    try:
        files: list[tuple[str, bytes]] = []
        params: dict[str, Any] = {}
        for key, value in form.multi_items():
            if key == "file":
                if not isinstance(value, UploadFile):
                    raise RequestError("the 'file' field must be a file upload (curl -F file=@image.png), not text")
                files.append((value.filename or f"file {len(files)}", await value.read()))
            elif isinstance(value, UploadFile):
                raise RequestError(f"the form field {key!r} is a file; images go in fields named 'file'")
            elif key == "params":
                params.update(_json_object(value, "the form field 'params'"))
            else:
                params[key] = _scalar(value)
    finally:
        await form.close()
    if not files:
        raise RequestError(f"the form holds no 'file' field; {USAGE}")
    if model.modality != "image":
        raise RequestError(f"model {model.name!r} ({model.task}) takes texts, not files; send JSON "
                           '{"inputs": [{"text": "..."}]}')
    inputs = await run_in_threadpool(lambda: [decode_image(data, f"file {name!r}") for name, data in files])
    return inputs, params


async def _read_json(request: Request, model: ServedModel) -> tuple[list[Any], dict[str, Any]]:
    raw = await request.body()
    if not raw.strip():
        raise RequestError(f"the request body is empty; {USAGE}")
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RequestError(f"the body is not valid JSON ({err}); {USAGE}") from err
    if not isinstance(body, dict):
        raise RequestError(f"the JSON body must be an object, not {type(body).__name__}; {USAGE}")
    unknown = sorted(set(body) - set(JSON_KEYS))
    if unknown:
        raise RequestError(f"unknown field(s) {unknown} in the body; it takes {', '.join(JSON_KEYS)}")
    items = body.get("inputs")
    if items is None:
        raise RequestError(f"the body lacks the field 'inputs'; {USAGE}")
    if not isinstance(items, list) or not items:
        raise RequestError("'inputs' must be a non-empty list of input objects")
    params = body.get("params") or {}
    if not isinstance(params, dict):
        raise RequestError(f"'params' must be an object such as {{\"topk\": 3}}, not {type(params).__name__}")
    if model.modality == "image":
        inputs = await run_in_threadpool(lambda: [image_item(item, i) for i, item in enumerate(items)])
    else:
        inputs = [text_item(item, i) for i, item in enumerate(items)]
    return inputs, params


def _json_object(value: str, what: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise RequestError(f"{what} is not valid JSON ({err}); send an object such as {{\"topk\": 3}}") from err
    if not isinstance(parsed, dict):
        raise RequestError(f"{what} must be a JSON object such as {{\"topk\": 3}}")
    return parsed


def _scalar(value: str) -> Any:
    """A form field's value: JSON when it parses (``3``, ``0.5``, ``true``, ``["a"]``), else the text."""
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value
