"""What a chat completion says, read straight from its JSON: the text (or the forced tool
call's arguments), why it stopped, a refusal, the usage, and the tokens' logprobs. Read from
the decoded body, not through the SDK's objects: at a high request rate building those cost
more CPU than the request itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ResponseFormat = Literal["json_schema", "json_object", "tool"]


@dataclass(frozen=True)
class Token:
    """One generated token and its most likely alternatives (itself among them), as
    (text, logprob)."""

    text: str
    alternatives: tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Reply:
    """What one request returned."""

    text: str
    finish_reason: str | None
    refusal: str | None
    prompt_tokens: int
    completion_tokens: int
    tokens: tuple[Token, ...] = ()
    """The reply's tokens with their top alternatives, when logprobs were asked and given."""
    cached_tokens: int | None = None
    """Prompt tokens the server served from its prompt cache, where it says."""


def reply_of(completion: Any, mode: ResponseFormat | None) -> Reply:
    """What a chat completion (its decoded JSON) says, for a request of this format. Parts
    that are missing or of another type read as absent."""
    completion = _object(completion)
    usage = _usage(completion)
    choices = completion.get("choices")
    choice = _object(choices[0]) if isinstance(choices, list) and choices else None
    if choice is None:
        return Reply("", None, None, *usage)
    message = _object(choice.get("message"))
    text = _text(message.get("content"))
    tokens: tuple[Token, ...] = ()  # logprobs describe the content, not a tool call's arguments
    calls = message.get("tool_calls")
    if mode == "tool" and isinstance(calls, list) and calls:
        text = _text(_object(_object(calls[0]).get("function")).get("arguments"))
    else:
        tokens = _tokens(choice)
    refusal = message.get("refusal")
    return Reply(
        text,
        _text(choice.get("finish_reason")) or None,
        refusal if isinstance(refusal, str) and refusal else None,
        *usage,
        tokens=tokens,
        cached_tokens=_cached(completion),
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _tokens(choice: dict[str, Any]) -> tuple[Token, ...]:
    content = _object(choice.get("logprobs")).get("content") or ()
    found = []
    try:
        for item in content:
            tops = item.get("top_logprobs") or ()
            alternatives = tuple((str(t["token"]), float(t["logprob"])) for t in tops)
            token = item["token"]
            if not any(t == token for t, _ in alternatives):
                alternatives = ((str(token), float(item["logprob"])), *alternatives)
            found.append(Token(str(token), alternatives))
    except (TypeError, ValueError, KeyError, AttributeError):  # no confidence, not a failure
        return ()
    return tuple(found)


def _cached(completion: dict[str, Any]) -> int | None:
    """Cached prompt tokens: OpenAI's `usage.prompt_tokens_details.cached_tokens`, or
    llama.cpp's `timings.cache_n`."""
    details = _object(_object(completion.get("usage")).get("prompt_tokens_details"))
    cached = details.get("cached_tokens")
    if cached is None:
        cached = _object(completion.get("timings")).get("cache_n")
    return int(cached) if isinstance(cached, int | float) else None


def _usage(completion: dict[str, Any]) -> tuple[int, int]:
    usage = _object(completion.get("usage"))
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0
