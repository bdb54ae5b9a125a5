"""A real HTTP server on 127.0.0.1 that speaks chat completions, scripted per test.

It runs its own event loop in a thread, so both sync and async code can talk to it. Each request
is answered by the next scripted `Reply`, or, when the script is empty, by `default` (which by
default returns a valid verdict for whatever schema was asked for).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """One scripted answer."""

    status: int = 200
    body: Any = None
    """A dict is sent as JSON; str or bytes as they are (to send malformed JSON)."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """A request the server received."""

    path: str
    body: Any
    at: float


def completion(
    content: str | None = None,
    *,
    finish_reason: str = "stop",
    refusal: str | None = None,
    tool_arguments: str | None = None,
    prompt_tokens: int = 100,
    completion_tokens: int = 20,
) -> dict[str, Any]:
    """A chat-completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": refusal}
    if tool_arguments is not None:
        message["tool_calls"] = [
            {
                "id": "call_v",
                "type": "function",
                "function": {"name": "submit_verdict", "arguments": tool_arguments},
            }
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "judge-test",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def requested_schema(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema a request asked the reply to fit (any structured-output mode)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return dict(fmt["json_schema"]["schema"])
    if body.get("tools"):
        return dict(body["tools"][0]["function"]["parameters"])
    text = body["messages"][0]["content"]
    return dict(json.loads(text[text.index("JSON Schema:\n") + len("JSON Schema:\n") :]))


def verdict_for(body: dict[str, Any], label: str = "correct") -> dict[str, Any]:
    """A valid verdict for the schema a request asked for, every label set to `label`."""
    schema = requested_schema(body)
    if "verdicts" in schema["properties"]:
        calls = schema["properties"]["verdicts"]["items"]["properties"]["call"]["enum"]
        return {
            "verdicts": [
                {"call": c, "reasoning": "fine", "verdict": label, "problems": []} for c in calls
            ]
        }
    if "category" not in schema["properties"]:  # a trajectory verdict
        problems = [] if label == "correct" else ["needless_call"]
        return {"reasoning": "fine", "verdict": label, "problems": problems}
    category = "right_call" if label == "correct" else "wrong_tool"
    return {"reasoning": "fine", "verdict": label, "category": category}


def answer(body: dict[str, Any], label: str = "correct") -> Reply:
    """A valid reply to a request, in the structured-output mode it used."""
    text = json.dumps(verdict_for(body, label))
    if body.get("tools"):
        return Reply(body=completion(None, tool_arguments=text))
    return Reply(body=completion(text))


class ChatServer:
    """Scripted chat-completions endpoint on 127.0.0.1."""

    def __init__(self, default: Callable[[dict[str, Any]], Reply] = answer) -> None:
        self.default = default
        self.script: deque[Reply | Callable[[dict[str, Any]], Reply]] = deque()
        self.seen: list[Seen] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.AbstractServer | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.port = 0
        self.in_flight = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self.max_in_flight = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def chat_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/chat/completions")]

    def push(self, *replies: Reply | Callable[[dict[str, Any]], Reply]) -> None:
        with self._lock:
            self.script.extend(replies)

    def start(self) -> ChatServer:
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
                await self._server.wait_closed()
            for writer in list(self._writers):
                writer.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _next(self, body: Any) -> Reply:
        with self._lock:
            scripted = self.script.popleft() if self.script else self.default
        return scripted(body) if callable(scripted) else scripted

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
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
                path = request_line.decode("latin-1").split(" ")[1]
                body = json.loads(raw) if raw else None
                with self._lock:
                    self.seen.append(Seen(path=path, body=body, at=time.monotonic()))
                    self.in_flight += 1
                    self.max_in_flight = max(self.max_in_flight, self.in_flight)
                reply = (
                    self._next(body)
                    if path.endswith("/chat/completions")
                    else Reply(status=404, body={"error": {"message": f"no route {path}"}})
                )
                try:
                    if reply.delay:
                        await asyncio.sleep(reply.delay)
                finally:
                    with self._lock:
                        self.in_flight -= 1
                payload = (
                    reply.body
                    if isinstance(reply.body, bytes)
                    else reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                head = [
                    f"HTTP/1.1 {reply.status} Scripted",
                    "Content-Type: application/json",
                    f"Content-Length: {len(payload)}",
                ]
                head += [f"{k}: {v}" for k, v in reply.headers.items()]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()


@contextmanager
def serving(default: Callable[[dict[str, Any]], Reply] = answer) -> Iterator[ChatServer]:
    server = ChatServer(default).start()
    try:
        yield server
    finally:
        server.stop()
