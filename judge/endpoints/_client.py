"""The judge-model client: one chat request with structured output, through the one retry
policy, to an endpoint."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
import orjson

from judge._errors import JudgeError
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._http import JsonPoster
from judge.endpoints._local import local_endpoint
from judge.endpoints._reply import Reply as Reply
from judge.endpoints._reply import ResponseFormat as ResponseFormat
from judge.endpoints._reply import Token as Token
from judge.endpoints._reply import reply_of
from judge.endpoints._retry import (
    RateGate,
    RetryPolicy,
    call_with_retries,
    is_quota_exhausted,
    is_retryable,
)

T = TypeVar("T")

_VERDICT_TOOL = "submit_verdict"


class JudgeEndpointError(JudgeError):
    """The endpoint refuses every request (bad key, no access, unknown model, no credit):
    the run stops, since asking again cannot help."""


class JudgeRequestError(JudgeError):
    """One request failed for good (a bad request, or retries ran out): that case gets
    `judge_error`, the run goes on."""


LOCAL_TIMEOUT_S = 900.0
"""The least a request to the embedded model waits: a long case takes minutes on a slow
machine, and a request abandoned to be retried keeps the server busy all the same."""


async def serving(
    endpoint: Endpoint | None, concurrency: int, timeout: float
) -> tuple[Endpoint, int, float]:
    """The endpoint to ask, how many requests at once and how long one may take: None is the
    embedded model, started on first use, which answers one request at a time and is given
    at least `LOCAL_TIMEOUT_S`."""
    if endpoint is not None:
        return endpoint, concurrency, timeout
    return await asyncio.to_thread(local_endpoint), 1, max(timeout, LOCAL_TIMEOUT_S)


def sdk_client(endpoint: Endpoint, timeout: float) -> openai.AsyncOpenAI:
    """The OpenAI SDK's client for an endpoint, with its own retries off (one retry layer:
    ours, in `judge.endpoints._retry`)."""
    return openai.AsyncOpenAI(
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        max_retries=0,
        timeout=timeout,
        # aiohttp spends a fraction of httpx's CPU per request: it matters at high concurrency.
        http_client=openai.DefaultAioHttpClient(),
    )


class EndpointClient:
    """One OpenAI-compatible endpoint: the SDK with its own retries off, bounded concurrency,
    and the one retry policy of `judge.endpoints._retry`. Subclasses say what a refusal means."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        concurrency: int = 8,
        timeout: float = 120.0,
        policy: RetryPolicy | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._client = sdk_client(endpoint, timeout)
        self._slots = asyncio.Semaphore(concurrency)
        self._policy = policy or RetryPolicy()
        self._gate = RateGate()

    async def request(self, send: Callable[[], Awaitable[T]], what: str) -> T:
        """`send()` with retries on transient faults; a failure for good is the subclass's
        `refused` (an HTTP status), else `unreachable` or `unreadable` (by default `failed`:
        no usable HTTP reply)."""
        try:
            return await call_with_retries(send, self._policy, self._gate)
        except openai.APIStatusError as exc:
            raise self.refused(exc, what) from None
        except openai.APIConnectionError as exc:
            raise self.unreachable(exc, what) from None
        except (openai.APIError, ValueError) as exc:  # a body that is not the JSON asked for
            if (error := self.unreadable(exc, what)) is None:
                raise
            raise error from None

    def refused(self, exc: openai.APIStatusError, what: str) -> JudgeError:
        raise NotImplementedError

    def failed(self, message: str) -> JudgeError:
        raise NotImplementedError

    def unreachable(self, exc: openai.APIConnectionError, what: str) -> JudgeError:
        """No HTTP reply (timeouts included), retries spent."""
        return self.failed(f"cannot reach {self.endpoint.base_url} ({what}): {exc}")

    def unreadable(self, exc: Exception, what: str) -> JudgeError | None:
        """A reply the SDK could not read; None raises `exc` as it is."""
        return self.failed(f"{self.endpoint.base_url} sent an unreadable reply ({what}): {exc}")

    async def aclose(self) -> None:
        await self._client.close()


class ChatClient(EndpointClient):
    """The judge's chat completions: a reply that fits a verdict schema."""

    @functools.cached_property
    def _poster(self) -> JsonPoster:
        return JsonPoster(self._client, self.timeout)

    async def aclose(self) -> None:
        await self._poster.aclose()
        await super().aclose()

    async def send(self, body: dict[str, Any], mode: ResponseFormat | None) -> Reply:
        """POST one chat-completions body (as `complete_body` or `answer_body` built it)."""

        data = orjson.dumps(body)
        path = "/chat/completions"

        async def send() -> Reply:
            async with self._slots:
                if self._poster.usable:  # the SDK's headers and errors, not its objects
                    raw = await self._poster.post(path, data)
                else:
                    raw = await self._client.post(path, content=data, cast_to=bytes)
            return reply_of(orjson.loads(raw), mode)  # not JSON: an unreadable reply

        return await self.request(send, f"judge model {self.endpoint.model}")

    def refused(self, exc: openai.APIStatusError, what: str) -> JudgeError:
        return _classify_failure(exc, self.endpoint)

    def failed(self, message: str) -> JudgeError:
        return JudgeRequestError(f"the judge endpoint failed: {message}")


def complete_body(
    model: str,
    messages: list[dict[str, str]],
    *,
    schema: dict[str, Any],
    mode: ResponseFormat,
    temperature: float,
    seed: int | None,
    reasoning_effort: str | None = None,
    extra_body: dict[str, Any] | None = None,
    logprobs: int | None = None,
) -> dict[str, Any]:
    """The body of a request for a reply that fits `schema`: what the judge sends online,
    and what a batch input line holds."""
    if mode == "json_object":
        messages = _with_schema_in_prompt(messages, schema)
    body: dict[str, Any] = {
        **(extra_body or {}),
        "model": model,
        "messages": messages,
        "temperature": temperature,
        **_structured(mode, schema),
    }
    if seed is not None:
        body["seed"] = seed
    if reasoning_effort is not None:
        body["reasoning_effort"] = reasoning_effort
    if logprobs is not None:
        body.update(logprobs=True, top_logprobs=logprobs)
    return body


def answer_body(
    model: str,
    messages: list[dict[str, str]],
    *,
    logprobs: int,
    seed: int | None,
    extra_body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of a one-token question, scored by its `logprobs` most likely alternatives."""
    body: dict[str, Any] = {
        **(extra_body or {}),
        "model": model,
        "messages": messages,
        "temperature": 0.0,
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": logprobs,
    }
    if seed is not None:
        body["seed"] = seed
    return body


def _structured(mode: ResponseFormat, schema: dict[str, Any]) -> dict[str, Any]:
    if mode == "json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema, "strict": True},
            }
        }
    if mode == "json_object":
        return {"response_format": {"type": "json_object"}}
    tool = {
        "type": "function",
        "function": {
            "name": _VERDICT_TOOL,
            "description": "Submit the verdict.",
            "parameters": schema,
            "strict": True,
        },
    }
    return {
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": _VERDICT_TOOL}},
    }


def _with_schema_in_prompt(
    messages: list[dict[str, str]], schema: dict[str, Any]
) -> list[dict[str, str]]:
    import json

    note = "\n\nReply with only a JSON object that fits this JSON Schema:\n" + json.dumps(
        schema, indent=1
    )
    first, *rest = messages
    return [{**first, "content": first["content"] + note}, *rest]


def _classify_failure(exc: openai.APIStatusError, endpoint: Endpoint) -> JudgeError:
    where = f"{endpoint.base_url} (model {endpoint.model})"
    detail = exc.message
    if exc.status_code == 401:
        return JudgeEndpointError(
            f"the judge endpoint {where} rejected the API key: set "
            f"JUDGE_API_KEY (or the provider's key). {detail}"
        )
    if exc.status_code == 403:
        return JudgeEndpointError(
            f"the judge endpoint {where} refused access: check the key's "
            f"permissions for this model. {detail}"
        )
    if exc.status_code == 404:
        return JudgeEndpointError(
            f"the judge endpoint {where} has no such model or route: "
            f"check --model and --base-url. {detail}"
        )
    if exc.status_code == 402 or is_quota_exhausted(exc):
        return JudgeEndpointError(
            f"the judge endpoint {where} says the credit or quota is exhausted "
            f"({exc.status_code}): add credit or use another key. {detail}"
        )
    if is_retryable(exc):
        return JudgeRequestError(
            f"the judge endpoint kept failing ({exc.status_code}), retries exhausted: {detail}"
        )
    return JudgeRequestError(
        f"the judge endpoint rejected the request ({exc.status_code}): {detail}"
    )


def rejects_logprobs(error: JudgeError) -> bool:
    """Whether a rejected request looks like the endpoint does not give logprobs."""
    text = str(error).lower()
    return (
        isinstance(error, JudgeRequestError)
        and "rejected the request" in text
        and ("logprob" in text)
    )


def rejects_structured_output(error: JudgeError) -> bool:
    """Whether a rejected request looks like the endpoint does not support the format asked."""
    text = str(error).lower()
    return (
        isinstance(error, JudgeRequestError)
        and "rejected the request" in text
        and any(
            word in text
            for word in ("response_format", "json_schema", "structured", "tool_choice", "tools")
        )
    )
