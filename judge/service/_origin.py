"""Writes a web page elsewhere cannot make: a request that changes state (any method but GET,
HEAD and OPTIONS) whose browser says it comes from another site is answered 403. Browsers send
`Sec-Fetch-Site` (and `Origin` on such requests); a form post from any page would otherwise be
answered, as no preflight guards a `text/plain` body. Requests without either header (curl,
scripts, the SDKs) are not a browser's, and pass."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_OWN_SITE = frozenset({b"same-origin", b"none"})  # `none`: typed in the address bar


class SameOriginWrites:
    """403 for a state-changing request a browser sent from another origin."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] not in SAFE_METHODS:
            why = cross_site(dict(scope["headers"]))
            if why is not None:
                response = JSONResponse({"detail": why}, status_code=403)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def cross_site(headers: dict[bytes, bytes]) -> str | None:
    """Why these request headers say another site sent it (None: they do not)."""
    fetch = headers.get(b"sec-fetch-site")
    if fetch is not None and fetch.strip().lower() not in _OWN_SITE:
        return f"a write from another site (Sec-Fetch-Site: {fetch.decode('latin-1')}) is refused"
    origin = headers.get(b"origin")
    if origin is None:
        return None
    text = origin.decode("latin-1").strip()
    host = headers.get(b"host", b"").decode("latin-1").strip().lower()
    parts = urlsplit(text)
    if text == "null" or parts.netloc.lower() != host or parts.scheme not in ("http", "https"):
        return f"a write from another origin (Origin: {text}) is refused"
    return None
