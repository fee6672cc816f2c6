"""``RequestError``: a client's mistake, answered with a 4xx status and ``{"error": "..."}``, never a 5xx."""

from __future__ import annotations

from oarkit.core.errors import OarkitError


class RequestError(OarkitError):
    """A request the server refuses; the message names the problem and the fix.

    Args:
        message: what is wrong and what to send instead.
        status: the HTTP status (400 unless told).
        headers: extra response headers (``Retry-After``, ``WWW-Authenticate``).
    """

    def __init__(self, message: str, *, status: int = 400, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = dict(headers or {})
