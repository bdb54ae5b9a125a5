"""A minimal HTTP/1.1 server on 127.0.0.1 in a thread of its own, for scripted fake endpoints.

Subclasses implement `handle(request)`; the base reads requests (keep-alive, Content-Length
bodies), records them in `seen`, and writes the replies.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Self


@dataclass
class Request:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")


@dataclass
class Answer:
    status: int = 200
    body: Any = None
    """Bytes and text are sent as they are; anything else as JSON."""
    headers: dict[str, str] = field(default_factory=dict)

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return json.dumps(self.body).encode()


class LoopbackServer:
    def __init__(self) -> None:
        self.seen: list[Request] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def handle(self, request: Request) -> Answer:
        raise NotImplementedError

    def start(self) -> Self:
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
                method, path = request_line.decode("latin-1").split(" ")[:2]
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:  # not JSON (a multipart upload): the bytes as they came
                    body = raw
                request = Request(method, path, body, headers)
                with self._lock:
                    self.seen.append(request)
                answer = await self.handle(request)
                payload = answer.payload()
                head = [
                    f"HTTP/1.1 {answer.status} Scripted",
                    "Content-Type: application/json",
                    f"Content-Length: {len(payload)}",
                    *(f"{k}: {v}" for k, v in answer.headers.items()),
                ]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return
        finally:
            self._writers.discard(writer)
            writer.close()
