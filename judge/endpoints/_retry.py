"""The one retry policy for judge requests, and the classifier that decides what is retried.

Retried, with jittered exponential backoff (or the server's Retry-After): rate limits (429, but
not an exhausted quota), server errors (5xx), connection errors and timeouts. Never retried: bad
requests, authentication and permission errors, unknown models or routes, and bugs.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import openai
from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds on retrying one request."""

    attempts: int = 6
    """Tries in all, the first included."""
    total_seconds: float = 300.0
    """Give up once this long has passed since the first try."""
    base_seconds: float = 0.5
    """First backoff; doubles each try, with full jitter."""
    max_wait_seconds: float = 60.0
    """Longest single wait, Retry-After included."""


def is_retryable(exc: BaseException) -> bool:
    """Whether a failed request is worth sending again."""
    if isinstance(exc, openai.RateLimitError):
        return not is_quota_exhausted(exc)
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code >= 500
    return isinstance(exc, openai.APIConnectionError)  # timeouts included


def is_quota_exhausted(exc: openai.APIStatusError) -> bool:
    """A 429 that waiting will not cure: the account is out of credit."""
    code = getattr(exc, "code", None)
    text = f"{code} {exc.message}".lower()
    return exc.status_code == 429 and (
        "insufficient_quota" in text or "quota" in text or "credit" in text
    )


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (`retry-after-ms` or `retry-after`), if any."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    headers = exc.response.headers
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):  # neither seconds nor a date: back off as usual
        return None
    return max(0.0, when.timestamp() - time.time())


class RateGate:
    """Holds every request back while the endpoint has asked us to slow down."""

    def __init__(self) -> None:
        self._until = 0.0

    def hold(self, seconds: float) -> None:
        self._until = max(self._until, time.monotonic() + seconds)

    async def wait(self) -> None:
        delay = self._until - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


async def call_with_retries(
    send: Callable[[], Awaitable[T]], policy: RetryPolicy, gate: RateGate
) -> T:
    """Send a request under the policy. The last error is raised when retries run out."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = retry_after(exc) if exc is not None else None
        if asked is not None:
            seconds = min(asked, policy.max_wait_seconds)
        else:
            ceiling = policy.base_seconds * 2 ** (state.attempt_number - 1)
            seconds = random.uniform(0, min(ceiling, policy.max_wait_seconds))
        if isinstance(exc, openai.RateLimitError):
            gate.hold(seconds)  # everyone backs off, not just this request
        return seconds

    retrying = AsyncRetrying(
        retry=retry_if_exception(is_retryable),
        wait=wait,
        stop=stop_after_attempt(policy.attempts) | stop_after_delay(policy.total_seconds),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            await gate.wait()
            return await send()
    raise AssertionError("unreachable: tenacity reraises the last error")
