"""One JSON POST straight through aiohttp, for the judge's hot path: the SDK's headers, its
timeout, and the SDK's own exceptions for a status or a failed connection, so that the one
retry policy and the error messages are those of every other request. What is skipped is the
SDK's request building and response objects: at a few hundred requests a second they cost
twice the CPU of the rest of the judge (`bench/judge_overhead.py`)."""

from __future__ import annotations

import functools
import importlib
import ssl
import urllib.parse
import urllib.request
from typing import Any

import aiohttp
import openai


class JsonPoster:
    """POSTs JSON bodies to paths under an SDK client's base URL; returns the reply's bytes."""

    def __init__(self, sdk: openai.AsyncOpenAI, timeout: float) -> None:
        self._sdk = sdk
        self._base = str(sdk.base_url).rstrip("/")
        # as the SDK's: a bound on connecting and on each wait for bytes, none on the whole
        self._timeout = aiohttp.ClientTimeout(sock_connect=timeout, sock_read=timeout)
        headers = {**sdk.default_headers, **sdk.auth_headers}
        self._headers = {  # the SDK's, less its telemetry (and its `Omit` markers)
            k: v for k, v in headers.items() if isinstance(v, str) and not _telemetry(k)
        }
        self._session: aiohttp.ClientSession | None = None

    @functools.cached_property
    def usable(self) -> bool:
        """Whether requests can go this way: not for a base URL with a query, nor through a
        proxy the environment names for it, nor with an SDK that lacks what its errors are
        built with (the SDK's own client handles those)."""
        if "?" in self._base or not all(hasattr(self._sdk, a) for a in _SDK_NEEDS):
            return False
        scheme, host = urllib.parse.urlsplit(self._base)[:2]
        proxies = urllib.request.getproxies()
        proxied = scheme in proxies or "all" in proxies
        return not proxied or bool(urllib.request.proxy_bypass(host.rsplit("@", 1)[-1]))

    async def post(self, path: str, data: bytes) -> bytes:
        """The body of a 2xx reply to POST `data` (JSON) at `path`. A failure is the SDK's:
        `APIStatusError` (its subclass for the status) or `APIConnectionError` (timeouts:
        `APITimeoutError`)."""
        url = self._base + path
        if self._session is None:  # made in the running loop, used by it only
            # the caller bounds what is in flight; certificates verified as the SDK verifies
            connector = aiohttp.TCPConnector(limit=0, ssl=_ssl_of(self._sdk))
            self._session = aiohttp.ClientSession(connector=connector)  # no proxy: see `usable`
        try:
            async with self._session.post(
                url, data=data, headers=self._headers, timeout=self._timeout
            ) as reply:
                content = await reply.read()
                status, headers = reply.status, list(reply.headers.items())
        except TimeoutError:
            raise openai.APITimeoutError(request=self._request(url)) from None
        except aiohttp.ClientError as exc:
            raise openai.APIConnectionError(request=self._request(url)) from exc
        if not 200 <= status < 300:
            raise self._status_error(url, status, headers, content)
        return content

    def _request(self, url: str) -> Any:
        return self._sdk._client.build_request("POST", url)

    def _status_error(
        self, url: str, status: int, headers: list[tuple[str, str]], content: bytes
    ) -> openai.APIStatusError:
        """The exception the SDK raises for this reply (its class and message by status and
        body), built from an HTTP response of the SDK's own HTTP library."""
        request = self._request(url)
        http = importlib.import_module(type(request).__module__.partition(".")[0])
        # The body is decoded already: a `Content-Encoding` kept would have it decoded twice.
        kept = [(k, v) for k, v in headers if k.lower() not in _DECODED]
        response = http.Response(status, headers=kept, content=content, request=request)
        return self._sdk._make_status_error_from_response(response)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None


_SDK_NEEDS = ("_client", "_make_status_error_from_response")
"""The SDK's own (private) parts the errors are built with: without them, its path is used."""
_DECODED = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def _ssl_of(sdk: openai.AsyncOpenAI) -> ssl.SSLContext | bool:
    """The SDK transport's TLS context (its trust store, `SSL_CERT_FILE`), else the default."""
    found = getattr(getattr(sdk._client, "_transport", None), "ssl_context", None)
    return found if isinstance(found, ssl.SSLContext) else True


def _telemetry(header: str) -> bool:
    return header.lower().startswith("x-stainless")
