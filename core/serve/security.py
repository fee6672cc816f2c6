"""The API key and the body-size limit, as ASGI middleware in front of every route.

- :class:`ApiKeyGuard`: with a key, every path but ``/v2/health/*`` needs ``Authorization: Bearer <key>``;
  the token is compared with :func:`hmac.compare_digest` (constant time), and anything else is a 401.
- :class:`BodyLimit`: a ``Content-Length`` over the limit is a 413 before a byte of the body is read, and a
  body sent without one (chunked) is counted as it streams and cut off with a 413 at the limit.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

HEALTH_PREFIX = "/v2/health/"


async def send_error(send: Any, status: int, message: str, headers: dict[str, str] | None = None,
                     scope: dict[str, Any] | None = None) -> None:
    """Answer ``{"error": message}`` with ``status`` straight from middleware (PaddleX's envelope on a PaddleX
    route of the app in ``scope``)."""
    app = (scope or {}).get("app")
    if scope is not None and scope.get("path") in getattr(getattr(app, "state", None), "paddlex_paths", ()):
        from oarkit.core.serve.paddlex import envelope

        body = json.dumps(envelope(status, message)).encode()
    else:
        body = json.dumps({"error": message}).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class ApiKeyGuard:
    """ASGI middleware: the Bearer token on every path but health (see the module docstring)."""

    def __init__(self, app: Any, api_key: str) -> None:
        self.app, self.expected = app, b"Bearer " + api_key.encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith(HEALTH_PREFIX):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not hmac.compare_digest(given, self.expected):
            reason = "no Authorization header" if not given else "a wrong API key"
            await send_error(send, 401, f"this server requires an API key ({reason}); send 'Authorization: "
                                        "Bearer <key>' with the key the server's --api-key-env variable holds",
                             {"WWW-Authenticate": "Bearer"}, scope)
            return
        await self.app(scope, receive, send)


class BodyTooLarge(Exception):
    """Raised into the app when a streamed body passes the limit (the middleware answers 413)."""


class BodyLimit:
    """ASGI middleware: refuse a request body over ``max_bytes`` with 413 (see the module docstring)."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, int(max_bytes)

    def message(self, size: str) -> str:
        return (f"the request body is {size}, over this server's limit of {self.max_bytes / 2**20:g} MiB "
                "(--max-body-mb); send fewer or smaller files per request")

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await send_error(send, 400, f"Content-Length {length.decode(errors='replace')!r} is not a number",
                                 scope=scope)
                return
            if declared > self.max_bytes:
                await send_error(send, 413, self.message(f"{declared:,} bytes"), scope=scope)
                return
        received = 0
        started = False

        async def counted_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            if not started:
                await send_error(send, 413, self.message(f"more than {self.max_bytes:,} bytes"),
                                 {"Connection": "close"}, scope)
