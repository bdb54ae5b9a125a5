"""A fake OpenRouter on 127.0.0.1: `GET /api/v1/models` with supported_parameters, pricing
and reasoning efforts, and chat completions answered per model as scripted.

Scripted models (the case's user message names the city, `weather in Paris`):
- `good/m` calls get_weather with the right city; `bad/m` calls get_time instead;
- `flaky/m` is right on the 1st, 3rd, 5th... request for the same conversation, wrong otherwise;
- `ratelimited/m` answers 429 (Retry-After: 0) to its first request, then like good/m;
- `broken/m` always answers 500; `nocredit/m` answers 402;
- `slow/m` answers like good/m after `slow_seconds`;
- `notemp/m` (no temperature), `notools/m` (no tools) and `efforts/m` (reasoning effort high
  only) are listed with those limits and answer like good/m.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

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
}
PROMPT_PRICE = 0.000001
COMPLETION_PRICE = 0.000004


@dataclass
class Request:
    method: str
    path: str
    body: Any
    authorization: str | None


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


class OpenRouterServer:
    def __init__(self, slow_seconds: float = 0.0) -> None:
        self.slow_seconds = slow_seconds
        self.seen: list[Request] = []
        self._asked: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v1"

    @property
    def chats(self) -> list[dict[str, Any]]:
        """The bodies of the chat requests received, in order."""
        return [r.body for r in self.seen if r.path.endswith("/chat/completions")]

    def start(self) -> OpenRouterServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self._loop
        )
        self._server = future.result(timeout=10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            if self._server is not None:
                self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

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
        if model == "ratelimited/m" and nth == 1:
            return 429, {"error": {"message": "Rate limit exceeded"}}, {"retry-after": "0"}, 0
        if model == "bad/m":
            return 200, completion(model, wrong), {}, 0
        if model == "flaky/m":
            return 200, completion(model, right if nth % 2 else wrong), {}, 0
        delay = self.slow_seconds if model == "slow/m" else 0.0
        return 200, completion(model, right), {}, delay

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                headers: dict[str, str] = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                method, path = request_line.decode("latin-1").split(" ")[:2]
                request = Request(
                    method, path, json.loads(raw) if raw else None, headers.get("authorization")
                )
                with self._lock:
                    self.seen.append(request)
                status, reply, extra, delay = self._route(request)
                if delay:
                    await asyncio.sleep(delay)
                payload = json.dumps(reply).encode()
                head = [
                    f"HTTP/1.1 {status} Scripted",
                    "Content-Type: application/json",
                    f"Content-Length: {len(payload)}",
                    *(f"{k}: {v}" for k, v in extra.items()),
                ]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            writer.close()


@contextmanager
def openrouter(slow_seconds: float = 0.0) -> Iterator[OpenRouterServer]:
    server = OpenRouterServer(slow_seconds).start()
    try:
        yield server
    finally:
        server.stop()
