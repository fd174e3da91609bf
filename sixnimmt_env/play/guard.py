"""The play table's API guard: only the table's own page may drive the API (issue 39).

A page on another site, open in the same browser, can send requests to the local server (cross-site request
forgery): a ``fetch`` or a form posts ``text/plain`` or a form body without asking the server first, and the
browser attaches nothing that would tell the server apart from its own page except the ``Origin`` and ``Referer``
headers. :class:`ApiGuard` (plain ASGI middleware, in front of every ``/api/`` request) therefore refuses, each
with a JSON error ``{"error": message, "code": reason}`` and before the app sees the request:

======  ==========================  ===================================================================
status  code                        request
======  ==========================  ===================================================================
403     ``"cross_origin"``          an ``Origin`` (or, without it, a ``Referer``) other than the server's own
                                    origin (``http://`` + the ``Host`` the server answered to)
415     ``"unsupported_media"``     a ``POST`` whose ``Content-Type`` is not ``application/json``
403     ``"bad_token"``             a ``POST`` without the server's token in ``X-Sixnimmt-Token`` (a second
                                    lock: the token is written into the page, which another site cannot read)
413     ``"too_large"``             a body over ``max_body`` bytes (by ``Content-Length`` or as it arrives)
400     ``"bad_request"``           a ``Content-Length`` that is not a number
======  ==========================  ===================================================================

A request without ``Origin`` and ``Referer`` (a script on this machine: ``curl``, the tests) passes the origin
check: browsers send ``Origin`` with every cross-site ``POST``. The ``Host`` header itself is checked before,
by Starlette's ``TrustedHostMiddleware`` (DNS rebinding).
"""

from __future__ import annotations

import hmac
import json
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["MAX_BODY", "TOKEN_HEADER", "ApiGuard"]

MAX_BODY = 4096
"""Bytes a request body may hold (the API's bodies are a few dozen)."""
TOKEN_HEADER = "X-Sixnimmt-Token"
"""The header that carries the server's token (the page reads it from ``<meta name="sixnimmt-token">``)."""


def _origin(url: str) -> str:
    """``scheme://host[:port]`` of a URL (``Referer``), lower-cased; ``""`` if it has none."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    return f"{parts.scheme}://{parts.netloc}".lower() if parts.scheme and parts.netloc else ""


class ApiGuard:
    """ASGI middleware: the checks of the module docstring on every request under ``prefix``.

    Args:
        app: the app to guard.
        token: the server's token (compared in constant time).
        max_body: bytes a body may hold.
        prefix: the path prefix of the API.
    """

    def __init__(self, app: ASGIApp, token: str, max_body: int = MAX_BODY, prefix: str = "/api/") -> None:
        self.app, self.token, self.max_body, self.prefix = app, token, max_body, prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefix):
            await self.app(scope, receive, send)
            return
        refused = self._check(scope)
        if refused is not None:
            await _refuse(send, *refused)
            return
        if scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body:
                await _refuse(send, *_too_large(len(body), self.max_body))
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replay(bytes(body), receive), send)

    def _check(self, scope: Scope) -> tuple[int, str, str] | None:
        """``(status, code, message)`` of the first check ``scope``'s headers fail, else ``None``."""
        headers = Headers(scope=scope)
        own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()
        origin = headers.get("origin")
        referer = headers.get("referer")
        sender = origin.lower() if origin is not None else None if referer is None else _origin(referer) or referer
        if sender is not None and sender != own:
            return 403, "cross_origin", f"requests from {sender[:80]!r} are refused: only {own} may use this API"
        if scope["method"] in ("GET", "HEAD"):
            return None
        kind = headers.get("content-type", "")
        if kind.split(";")[0].strip().lower() != "application/json":
            return 415, "unsupported_media", f"the API takes application/json bodies, got {kind[:80] or 'none'!r}"
        if not hmac.compare_digest(headers.get(TOKEN_HEADER, "").encode(), self.token.encode()):
            return 403, "bad_token", f"missing or wrong {TOKEN_HEADER}: use the table's own page"
        length = headers.get("content-length")
        if length is not None and not length.isdigit():
            return 400, "bad_request", f"Content-Length must be a number of bytes, got {length[:40]!r}"
        if length is not None and int(length) > self.max_body:
            return _too_large(int(length), self.max_body)
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives the app ``body`` once, then waits on the connection (for its disconnect)."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


def _too_large(size: int, limit: int) -> tuple[int, str, str]:
    return 413, "too_large", f"the request body holds {size:,} bytes or more; at most {limit:,} are taken"


async def _refuse(send: Send, status: int, code: str, message: str) -> None:
    body = json.dumps({"error": message, "code": code}).encode()
    headers: list[tuple[bytes, Any]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
