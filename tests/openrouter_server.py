"""A fake OpenRouter on 127.0.0.1: `GET /api/v1/models` with supported_parameters, pricing
and reasoning efforts, and chat completions answered per model as scripted.

Scripted models (the case's user message names the city, `weather in Paris`):
- `good/m` calls get_weather with the right city; `bad/m` calls get_time instead;
- `flaky/m` is right on the 1st, 3rd, 5th... request for the same conversation, wrong otherwise;
- `ratelimited/m` answers 429 (Retry-After: 0) to its first request, then like good/m;
- `broken/m` always answers 500; `nocredit/m` answers 402; `flagged/m` answers 403 (OpenRouter:
  the input was flagged by moderation);
- `midfail/m` answers 200 with an error met during generation (`finish_reason: "error"` and an
  `error` in the choice); `errorbody/m` answers 200 with only an `error` object;
- `text/m` writes the right call as JSON in a ```json fence in `content` (no `tool_calls`), as
  models served without a tool-call parser do;
- `slow/m` answers like good/m after `slow_seconds`;
- `cut/m` makes good/m's call but stops at its token limit (`finish_reason: "length"`);
- `acme/m` is served by two providers: `fast` (or none pinned) answers like good/m; `cheap`
  breaks its calls in the three structural ways by city: arguments that are not JSON (Paris),
  a tool that does not exist (Oslo), arguments that break the schema (Rome); right on Lima;
- `notemp/m` (no temperature), `notools/m` (no tools) and `efforts/m` (reasoning effort high
  only) and `noreason/m` (no reasoning) are listed with those limits and answer like good/m.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.loopback import Answer, LoopbackServer, Request

KEY = "test-key"
FULL = ["tools", "tool_choice", "temperature", "seed", "reasoning", "include_reasoning"]
CATALOG: dict[str, dict[str, Any]] = {
    "good/m": {"supported_parameters": FULL, "reasoning": {"supported_efforts": ["low", "high"]}},
    "bad/m": {"supported_parameters": FULL},
    "flaky/m": {"supported_parameters": FULL},
    "ratelimited/m": {"supported_parameters": FULL},
    "broken/m": {"supported_parameters": FULL},
    "nocredit/m": {"supported_parameters": FULL},
    "slow/m": {"supported_parameters": FULL},
    "notemp/m": {"supported_parameters": ["tools", "tool_choice", "seed", "reasoning"]},
    "notools/m": {"supported_parameters": ["temperature", "seed"]},
    "efforts/m": {"supported_parameters": FULL, "reasoning": {"supported_efforts": ["high"]}},
    "noreason/m": {"supported_parameters": ["tools", "tool_choice", "temperature", "seed"]},
    "flagged/m": {"supported_parameters": FULL},
    "midfail/m": {"supported_parameters": FULL},
    "errorbody/m": {"supported_parameters": FULL},
    "text/m": {"supported_parameters": FULL},
    "cut/m": {"supported_parameters": FULL},
    "acme/m": {"supported_parameters": FULL},
}
CHEAP_CALLS = {
    "Paris": {"id": "call_1", "type": "function",
              "function": {"name": "get_weather", "arguments": '{"city": "Paris"'}},
    "Oslo": {"id": "call_1", "type": "function",
             "function": {"name": "get_wether", "arguments": '{"city": "Oslo"}'}},
    "Rome": {"id": "call_1", "type": "function",
             "function": {"name": "get_weather", "arguments": '{"city": 7}'}},
}  # fmt: skip
"""What `acme/m` answers through the provider `cheap`, by city: each structural failure once."""
PROMPT_PRICE = 0.000001
COMPLETION_PRICE = 0.000004


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "gen-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "provider": "Fake",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": message}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


class OpenRouterServer(LoopbackServer):
    def __init__(self, slow_seconds: float = 0.0) -> None:
        super().__init__()
        self.slow_seconds = slow_seconds
        self._asked: Counter[tuple[str, str]] = Counter()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    @property
    def chats(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests received, in order."""
        return [r.body for r in self.seen if r.path.endswith("/chat/completions")]

    async def handle(self, request: Request) -> Answer:
        status, reply, extra, delay = self._route(request)
        if delay:
            await asyncio.sleep(delay)
        return Answer(status, reply, extra)

    def _route(self, request: Request) -> tuple[int, Any, dict[str, str], float]:
        if request.authorization != f"Bearer {KEY}":
            return 401, {"error": {"message": "No auth credentials found", "code": 401}}, {}, 0
        if request.method == "GET" and request.path.endswith("/models"):
            data = [
                {
                    "id": model_id,
                    "name": model_id,
                    "pricing": {"prompt": str(PROMPT_PRICE), "completion": str(COMPLETION_PRICE)},
                    **spec,
                }
                for model_id, spec in CATALOG.items()
            ]
            return 200, {"data": data}, {}, 0
        if not request.path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {request.path}"}}, {}, 0
        return self._chat(request.body)

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any, dict[str, str], float]:
        model = body["model"]
        user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        with self._lock:
            self._asked[(model, user)] += 1
            nth = self._asked[(model, user)]
        city = user.rsplit(" ", 1)[-1]
        right = {
            "role": "assistant",
            "content": None,
            "tool_calls": [tool_call("get_weather", {"city": city})],
        }
        wrong = {
            "role": "assistant",
            "content": None,
            "tool_calls": [tool_call("get_time", {"city": city})],
        }
        if model == "broken/m":
            return 500, {"error": {"message": "upstream exploded"}}, {"retry-after": "0"}, 0
        if model == "nocredit/m":
            return 402, {"error": {"message": "Insufficient credits", "code": 402}}, {}, 0
        if model == "flagged/m":
            flagged = {"message": "Input was flagged by moderation", "code": 403}
            return 403, {"error": {**flagged, "metadata": {"reasons": ["violence"]}}}, {}, 0
        if model == "midfail/m":
            failed = completion(model, {"role": "assistant", "content": ""})
            failed["choices"][0]["finish_reason"] = "error"
            failed["choices"][0]["error"] = {"message": "Provider disconnected", "code": 502}
            return 200, failed, {}, 0
        if model == "errorbody/m":
            return 200, {"error": {"message": "Upstream timed out", "code": 504}}, {}, 0
        if model == "text/m":
            call = json.dumps({"name": "get_weather", "arguments": {"city": city}}, indent=2)
            written = {"role": "assistant", "content": f"```json\n{call}\n```"}
            return 200, completion(model, written), {}, 0
        if model == "cut/m":
            stopped = completion(model, right)
            stopped["choices"][0]["finish_reason"] = "length"
            return 200, stopped, {}, 0
        if model == "ratelimited/m" and nth == 1:
            return 429, {"error": {"message": "Rate limit exceeded"}}, {"retry-after": "0"}, 0
        if model == "bad/m":
            return 200, completion(model, wrong), {}, 0
        pinned = (body.get("provider") or {}).get("order") or [None]
        if model == "acme/m" and pinned[0] == "cheap" and city in CHEAP_CALLS:
            broken = {"role": "assistant", "content": None, "tool_calls": [CHEAP_CALLS[city]]}
            return 200, completion(model, broken), {}, 0
        if model == "flaky/m":
            return 200, completion(model, right if nth % 2 else wrong), {}, 0
        delay = self.slow_seconds if model == "slow/m" else 0.0
        return 200, completion(model, right), {}, delay


@contextmanager
def openrouter(slow_seconds: float = 0.0) -> Iterator[OpenRouterServer]:
    server = OpenRouterServer(slow_seconds).start()
    try:
        yield server
    finally:
        server.stop()
