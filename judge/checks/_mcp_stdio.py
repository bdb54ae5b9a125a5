"""A stdio MCP server's connection (the `Transport` an `mcp.Client` is given), in place of the
SDK's `stdio_client`, which starts a server with a few variables of the environment only,
reads a line of any length, logs a traceback for a line it cannot read and, when the server
exits on its own, leaves the children it forked running.

Here the server starts with the caller's environment (and `McpServer.env` over it), under
`_mcp_leader` on POSIX, which ends the server's whole process group however the connection
or `judge` ends. Its output is read a line at a time: a line that is not JSON-RPC (a banner,
a stray print) is skipped with one line of warning (the `judge.mcp` logger), once per server
and text; a line over `MAX_MESSAGE` bytes ends the connection, `Output.too_large` saying so.
It is closed as the MCP lifecycle says: its input closed, then SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

from judge.checks._mcp_leader import GRACE

MAX_MESSAGE = 16 << 20
"""The bound on one message from a server, in bytes (a tool's result far past what an agent
could read)."""
_EOF_WAIT = 2.0  # seconds a server has to exit once its input is closed
_SHOWN = 80  # characters of a skipped line in its warning
_LEADER = Path(__file__).with_name("_mcp_leader.py")
logger = logging.getLogger("judge.mcp")

Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]


@dataclass
class Output:
    """What a server's output said besides its messages."""

    described: str
    """The server, as its warnings name it."""
    warned: set[str] = field(default_factory=set)
    """The warnings given already (shared by the connections to one server)."""
    too_large: str | None = None
    """Why the connection ended, where a message was over the bound: "too large (N bytes,
    the bound is M)"."""

    def message(self, line: bytes, number: int) -> SessionMessage | None:
        """Line `number`'s message; None, with a warning, for a line that is not one."""
        if not line.strip():
            return None
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError:
            text = line.decode("utf-8", "replace").strip()
            shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
            said = (
                f"the MCP server {self.described}: line {number} of its output is not "
                f"JSON-RPC, skipped: {shown!r}"
            )
            if said not in self.warned:
                self.warned.add(said)
                logger.warning(said)
            return None


class Lines:
    """A server's output cut into lines, up to one over `bound` bytes: its size, once its
    end is read, is `too_large` (the bytes past the bound counted, not kept)."""

    def __init__(self, bound: int = MAX_MESSAGE) -> None:
        self.bound = bound
        self.too_large: int | None = None
        self._line = bytearray()
        self._size = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        """The lines `chunk` ends (those before a line too large)."""
        lines: list[bytes] = []
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            stop = len(chunk) if end < 0 else end
            self._size += stop - start
            if self._size <= self.bound:
                self._line += chunk[start:stop]
            else:
                self._line.clear()
            if end < 0:
                return lines
            if self._size > self.bound:
                self.too_large = self._size
                return lines
            lines.append(bytes(self._line))
            self._line.clear()
            self._size = 0
            start = end + 1


@contextlib.asynccontextmanager
async def stdio_server(
    command: tuple[str, ...], env: Mapping[str, str], errlog: IO[str], output: Output
) -> AsyncIterator[Streams]:
    """The connection to `command`, started with `env` over the caller's environment and its
    standard error written to `errlog`; stopped, its process group with it, on the way out."""
    process = await anyio.open_process(
        _started(command), env={**os.environ, **env}, stderr=errlog, start_new_session=True
    )
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_read, process, to_session, output)
        tasks.start_soon(_write, process, from_session)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled caller still stops the server
                from_server.close()
                to_server.close()
                await _stop(process)
            tasks.cancel_scope.cancel()


def _started(command: tuple[str, ...]) -> list[str]:
    """The command as started: under the leader where process groups are (POSIX)."""
    if os.name != "posix" or not sys.executable:
        return list(command)
    return [sys.executable, "-S", "-I", str(_LEADER), str(os.getpid()), *command]


async def _read(
    process: Process, session: MemoryObjectSendStream[SessionMessage | Exception], output: Output
) -> None:
    """The server's messages to the session, until its output ends or a message is too
    large (once the session is gone, the rest is read and dropped: a server blocked on a full
    pipe would never read the end of its input)."""
    assert process.stdout is not None
    lines, number, delivering = Lines(), 0, True
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with session:
            async for chunk in process.stdout:
                for line in lines.feed(chunk):
                    number += 1
                    message = output.message(line, number)
                    if message is not None and delivering:
                        try:
                            await session.send(message)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            delivering = False
                if lines.too_large is not None:
                    output.too_large = (
                        f"too large ({lines.too_large} bytes, the bound is {lines.bound})"
                    )
                    return


async def _write(process: Process, session: MemoryObjectReceiveStream[SessionMessage]) -> None:
    assert process.stdin is not None
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with session:
            async for message in session:
                text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await process.stdin.send(text.encode() + b"\n")


async def _stop(process: Process) -> None:
    """Close the server's input; SIGTERM (the leader ends the group) if it does not exit;
    SIGKILL if that does not end it."""
    assert process.stdin is not None and process.stdout is not None
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    for wait, end in ((_EOF_WAIT, process.terminate), (GRACE + _EOF_WAIT, process.kill)):
        if await _exited(process, wait):
            break
        with contextlib.suppress(ProcessLookupError):
            end()
    else:
        await _exited(process, _EOF_WAIT)
    with contextlib.suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()


async def _exited(process: Process, seconds: float) -> bool:
    """Whether the process exited within `seconds` (its return code polled: `wait` would
    also wait for its output to close, which a child holding the pipe keeps open)."""
    with anyio.move_on_after(seconds):
        while process.returncode is None:
            await anyio.sleep(0.02)
        return True
    return False
