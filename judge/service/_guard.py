"""Who the service and the review app answer, one rule for both: with a token, its holders
(`Authorization: Bearer <token>`); without one, only requests addressed to a loopback name or to
a host the user allowed, so a page elsewhere cannot reach the app through a DNS name rebound to
127.0.0.1 (421 otherwise). Either way, no write that a browser says another site sent
(`SameOriginWrites`)."""

from __future__ import annotations

import hmac
from collections.abc import Collection, Iterable

from fastapi import FastAPI
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from judge.service._origin import SameOriginWrites
from judge.service._token import TOKEN_ENV, is_loopback


def guard(
    app: FastAPI,
    token: str | None,
    *,
    hosts: Iterable[str] = (),
    open_paths: Collection[str] = (),
    guarded_prefix: str | None = None,
) -> None:
    """Put the rule on `app`: with `token`, every request but `open_paths` (or, with
    `guarded_prefix`, every one under it) needs it; without, only loopback names and `hosts`
    (names, a port ignored) are answered."""
    if token:
        app.add_middleware(
            BearerAuth, token=token, open_paths=open_paths, guarded_prefix=guarded_prefix
        )
    else:
        app.add_middleware(KnownHosts, hosts=hosts)
    app.add_middleware(SameOriginWrites)  # outermost: a cross-site write is 403 first


class BearerAuth:
    """Refuses every request but `open_paths` (or, with `guarded_prefix`, every request under
    it) without `Authorization: Bearer <token>`; the token is compared in constant time."""

    def __init__(
        self,
        app: ASGIApp,
        token: str,
        open_paths: Collection[str] = (),
        guarded_prefix: str | None = None,
    ) -> None:
        self.app = app
        self.token = token.encode()
        self.open_paths = frozenset(open_paths)
        self.guarded_prefix = guarded_prefix

    def _open(self, path: str) -> bool:
        if self.guarded_prefix is not None:
            return not path.startswith(self.guarded_prefix)
        return path in self.open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open(scope["path"]):
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token):
            await self.app(scope, receive, send)
            return
        detail = "wrong bearer token" if header else "missing bearer token"
        response = JSONResponse(
            {"detail": f"{detail}: send Authorization: Bearer <{TOKEN_ENV}>"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)


class KnownHosts:
    """Answers only requests whose Host is a loopback name or one of `hosts` (421 otherwise)."""

    def __init__(self, app: ASGIApp, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = frozenset(host_name(h.encode("latin-1")) for h in hosts)

    def known(self, header: bytes) -> bool:
        name = host_name(header)
        return is_loopback(name) or name in self.hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.known(dict(scope["headers"]).get(b"host", b"")):
            detail = (
                "only loopback names (and --allow-host names) are answered; set "
                f"{TOKEN_ENV} to serve others"
            )
            response = JSONResponse({"detail": detail}, status_code=421)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def host_name(header: bytes) -> str:
    """The host name of a Host header, without its port (`[::1]:8100` -> `::1`)."""
    text = header.decode("latin-1").strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text
