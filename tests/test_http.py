"""The judge's chat requests go through aiohttp directly (`endpoints/_http.py`), not the SDK's
request and response objects: every reply, failure and message must be what the SDK's own
path gives, and a proxied or query-string endpoint keeps the SDK's path."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import openai
import pytest

from judge._errors import JudgeError
from judge.endpoints._client import ChatClient
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._http import JsonPoster
from judge.endpoints._retry import RetryPolicy
from tests.chat_server import ChatServer, Reply, completion, serving, with_logprobs


def gzipped(status: int, body: Any) -> Reply:
    """A reply compressed as a CDN compresses JSON."""
    data = gzip.compress(json.dumps(body).encode())
    headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
    return Reply(status=status, body=data, headers=headers)


BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
ONCE = RetryPolicy(attempts=1)


def endpoint(server: ChatServer) -> Endpoint:
    return Endpoint(base_url=server.url, model="m", provider="custom", api_key="sk-test")


async def send_both_ways(server: ChatServer, reply: Reply, mode: Any = None) -> list[Any]:
    """What `ChatClient.send` gives for the same scripted reply, directly and by the SDK."""
    found: list[Any] = []
    for direct in (True, False):
        client = ChatClient(endpoint(server), policy=ONCE)
        client._poster.__dict__["usable"] = direct
        server.push(reply)
        try:
            found.append(await client.send(BODY, mode))
        except JudgeError as exc:
            found.append((type(exc), str(exc)))
        finally:
            await client.aclose()
    return found


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(Reply(body=completion('{"verdict": "correct"}')), id="a-reply"),
        pytest.param(with_logprobs(Reply(body=completion('{"a": 1}'))), id="logprobs"),
        pytest.param(Reply(body=completion(None, tool_arguments='{"x": 1}')), id="a-tool-call"),
        pytest.param(Reply(status=400, body={"error": {"message": "no logprobs"}}), id="400"),
        pytest.param(Reply(status=401, body={"error": {"message": "bad key"}}), id="401"),
        pytest.param(Reply(status=404, body="not found"), id="404-text"),
        pytest.param(
            Reply(status=429, body={"error": {"message": "insufficient_quota"}}), id="quota"
        ),  # fmt: skip
        pytest.param(Reply(status=503, body={"error": {"message": "busy"}}), id="503"),
        pytest.param(Reply(body="{not json"), id="malformed"),
        pytest.param(gzipped(200, completion("ok")), id="gzip"),
        pytest.param(gzipped(400, {"error": {"message": "no logprobs"}}), id="gzip-400"),
        pytest.param(gzipped(429, {"error": {"message": "slow down"}}), id="gzip-429"),
        pytest.param(Reply(body=[1, 2]), id="not-an-object"),
    ],
)
def test_a_direct_request_reads_and_fails_as_the_sdk_does(reply: Reply) -> None:
    with serving() as server:
        direct, sdk = asyncio.run(send_both_ways(server, reply, mode="tool"))
        if isinstance(direct, tuple) and isinstance(sdk, tuple) and "unreadable" in direct[1]:
            assert direct[0] is sdk[0]  # the decoder's own words differ: the kind does not
        else:
            assert direct == sdk
        assert [r.headers.get("authorization") for r in server.chat_requests] == [
            "Bearer sk-test"
        ] * 2


def test_a_direct_request_is_retried_after_retry_after() -> None:
    with serving() as server:
        slow = Reply(
            status=429, body={"error": {"message": "slow"}}, headers={"retry-after-ms": "10"}
        )
        server.push(slow, Reply(body=completion("ok")))

        async def go() -> str:
            client = ChatClient(endpoint(server), policy=RetryPolicy(attempts=2))
            try:
                return (await client.send(BODY, None)).text
            finally:
                await client.aclose()

        assert asyncio.run(go()) == "ok"
        assert len(server.chat_requests) == 2


def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    sdk = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key="x", max_retries=0)
    poster = JsonPoster(sdk, timeout=5)

    async def go() -> None:
        try:
            await poster.post("/chat/completions", b"{}")
        finally:
            await poster.aclose()
            await sdk.close()

    with pytest.raises(openai.APIConnectionError):
        asyncio.run(go())


@pytest.mark.parametrize(
    ("base_url", "env", "direct"),
    [
        ("http://127.0.0.1:8080/v1", {}, True),
        ("http://127.0.0.1:8080/v1?api-version=1", {}, False),
        ("https://openrouter.ai/api/v1", {"HTTPS_PROXY": "http://proxy:3128"}, False),
        ("http://example.com/v1", {"HTTP_PROXY": "http://proxy:3128"}, False),
        ("http://example.com/v1", {"ALL_PROXY": "http://proxy:3128"}, False),
        (
            "http://127.0.0.1:8080/v1",
            {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "127.0.0.1"},
            True,
        ),  # fmt: skip
    ],
)
def test_a_proxied_endpoint_keeps_the_sdks_client(
    base_url: str, env: dict[str, str], direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP", "HTTPS", "NO", "ALL", "http", "https", "no", "all"):
        name = f"{name}_PROXY" if name.isupper() else f"{name}_proxy"
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    sdk = openai.AsyncOpenAI(base_url=base_url, api_key="x")
    assert JsonPoster(sdk, timeout=5).usable is direct
