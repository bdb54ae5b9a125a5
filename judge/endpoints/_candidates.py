"""The candidate-model client: the endpoint's model list, and one chat request as returned.

Same reliability as the judge client: the OpenAI SDK over aiohttp with its own retries off, the
one retry policy of `judge.endpoints._retry`, bounded concurrency. Raw JSON is kept: the runner
stores the response exactly as the endpoint sent it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import openai

from judge._errors import JudgeError
from judge.endpoints._client import EndpointClient, JudgeEndpointError
from judge.endpoints._endpoint import Endpoint
from judge.endpoints._retry import RetryPolicy, is_quota_exhausted


class CandidateEndpointError(JudgeEndpointError):
    """The candidates' endpoint refuses every request (bad key, no credit): the run stops,
    since asking again cannot help."""


class CandidateRequestError(JudgeError):
    """One candidate request failed for good (a bad or refused request, or retries ran out):
    it is recorded as an error and the run goes on."""


@dataclass(frozen=True)
class Answer:
    """One chat completion as the endpoint returned it."""

    body: Any
    latency_s: float
    """Seconds the successful attempt took (queueing and backoff excluded)."""
    attempts: int


class CandidateClient(EndpointClient):
    """Requests to one OpenAI-compatible endpoint on behalf of candidate models."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        concurrency: int = 8,
        timeout: float = 120.0,
        policy: RetryPolicy | None = None,
        key_hint: str = "OPENROUTER_API_KEY",
    ) -> None:
        super().__init__(endpoint, concurrency=concurrency, timeout=timeout, policy=policy)
        self._key_hint = key_hint

    async def models(self) -> Any:
        """The decoded body of `GET {base_url}/models`."""

        async def send() -> Any:
            return await self._client.get("/models", cast_to=object)

        return await self.request(send, "GET /models")

    async def chat(self, body: dict[str, Any]) -> Answer:
        """One chat completion for `body` (with retries on transient faults)."""
        attempts = 0
        took = 0.0

        async def send() -> Any:
            nonlocal attempts, took
            async with self._slots:
                attempts += 1
                start = time.perf_counter()
                # The SDK's own POST, cast to plain JSON: the body is stored as it came.
                reply = await self._client.post("/chat/completions", body=body, cast_to=object)
                took = time.perf_counter() - start
                return reply

        reply = await self.request(send, f"model {body.get('model')!r}")
        return Answer(body=reply, latency_s=took, attempts=attempts)

    def failed(self, message: str) -> JudgeError:
        return CandidateRequestError(message)

    def refused(self, exc: openai.APIStatusError, what: str) -> JudgeError:
        where = f"the candidates' endpoint {self.endpoint.base_url} ({what})"
        status, detail = exc.status_code, exc.message
        if status == 401:
            return CandidateEndpointError(
                f"{where} rejected the API key: check {self._key_hint}. {detail}"
            )
        if status == 403:  # OpenRouter: this input was flagged by moderation; others go on
            return CandidateRequestError(f"{where} refused this request (403): {detail}")
        if status == 402 or is_quota_exhausted(exc):
            return CandidateEndpointError(
                f"{where} says the credit or quota is exhausted: add credit or use another "
                f"key. {detail}"
            )
        if status < 500 and status != 429:
            return CandidateRequestError(f"{where} rejected the request ({status}): {detail}")
        return CandidateRequestError(
            f"{where} kept failing ({status}), retries exhausted: {detail}"
        )
