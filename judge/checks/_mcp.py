"""An MCP server as an environment: each call a `tools/call`, the state a resource.

`McpServer` says how to reach one: a command started over stdio (a fresh process for every
environment, so runs never share state, with the caller's environment and `env` over it, as
the shell command it is written as would have: `_mcp_stdio`) or the URL of a running server
(streamable HTTP: one server for everything, so its state is not compared). `McpEnvironment`
is one connection: its client runs on an event loop of its own, in a thread, so that it serves
both the synchronous `Environment` protocol (`call`, `snapshot`, for replays) and agent runs
(`acall`, awaited without blocking their loop). A result with `isError` is a failed call
(`ToolFailed`, its text the reason); `structuredContent` is the result when present, else the
text contents joined (given to the agent as they are, `ToolText`). A request past `timeout`
seconds fails; a server that does not start (up to its answer to `initialize`) within
`start_timeout` seconds, or cannot start at all, is `McpStartError` with the last lines it
wrote on standard error. The two bounds are apart: a short bound on a hung tool must not keep
a slow-importing server from starting. A server that lists two tools of one name is refused:
a call by name could not say which. Errors are one line each (a pydantic `ValidationError` as
its first few fields).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import tempfile
import threading
from collections.abc import Coroutine, Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import ValidationError

from judge.cases._case import Case, Tool
from judge.cases._json import DecodeError, loads
from judge.checks._env import ToolFailed, ToolText

T = TypeVar("T")
_CLEAN_UP = 15.0  # seconds a late request's cancellation may take on top of its timeout
_STDERR_LINES = 5
_CLOSE = 15.0  # seconds a stop may take: the server's grace to exit, then its group's


class McpStartError(RuntimeError):
    """The server could not be started or reached, or is refused for the tools it lists."""


class McpServerFailed(ToolFailed):
    """The server did not answer in time, or its connection broke: the environment failed,
    not the call the agent made."""


@dataclass(frozen=True)
class McpServer:
    """How to reach an MCP server, and what to read its state from."""

    command: tuple[str, ...] = ()
    """The command of a stdio server (started afresh for every environment)."""
    url: str | None = None
    """The streamable HTTP endpoint of a running server."""
    state_uri: str | None = None
    """The resource whose JSON text is the state (`snapshot`)."""
    timeout: float = 60.0
    """Seconds a request (a tool call, a state read, `tools/list`) may take."""
    start_timeout: float = 60.0
    """Seconds the server may take to start and answer `initialize`."""
    env: Mapping[str, str] = field(default_factory=dict, hash=False)
    """Variables set over the caller's environment for a stdio server (`--mcp-env`)."""
    tools: list[Tool] = field(default_factory=list, compare=False)
    """The server's tools, once `listed_tools` has listed them."""
    warned: set[str] = field(default_factory=set, compare=False, repr=False)
    """The warnings its output gave (each given once)."""

    @classmethod
    def of(
        cls,
        command: str | None,
        url: str | None,
        state_uri: str | None,
        timeout: float,
        option: str = "--mcp",
        start_timeout: float = 60.0,
        env: Iterable[str] = (),
    ) -> McpServer:
        """The server a command line (split as a shell would) or a URL names, `env` its
        `KEY=VALUE` settings; ValueError, naming `option`, for neither or both, an empty or
        unreadable command, a setting that is not `KEY=VALUE` or is for a URL, or no mcp SDK."""
        if (command is None) == (url is None):
            raise ValueError("give one MCP server: --mcp COMMAND or --mcp-url URL")
        try:
            import mcp  # noqa: F401
        except ImportError:
            raise ValueError(
                "an MCP server needs the mcp SDK: pip install 'tool-call-judge[mcp]'"
            ) from None
        try:
            argv = tuple(shlex.split(command)) if command is not None else ()
            if command is not None and not argv:
                raise ValueError("an empty command")
        except ValueError as exc:  # shlex's too: "No closing quotation"
            raise ValueError(f"{option} {command!r}: {exc}") from None
        settings = _settings(env)
        if settings and url is not None:
            raise ValueError("--mcp-env is for a server judge starts (--mcp COMMAND), not a URL")
        return cls(argv, url, state_uri, timeout, start_timeout, settings)

    @property
    def observes_state(self) -> bool:
        """Whether a state resource is read (else there is no final state to compare)."""
        return self.state_uri is not None

    @property
    def fresh(self) -> bool:
        """Whether every environment starts from the server's initial state (stdio)."""
        return bool(self.command)

    def __call__(self, case: Any = None) -> McpEnvironment:
        """A fresh environment (the factory the final-state checks and agent runs call)."""
        return McpEnvironment(self)

    def listed_tools(self) -> list[Tool]:
        """The server's tools, listed once from a first connection (`McpStartError` when it
        cannot start)."""
        if not self.tools:
            first = McpEnvironment(self)
            try:
                self.tools.extend(Tool.from_spec(tool) for tool in first.tools)
            finally:
                first.close()
        return self.tools

    def offered_to(self, case: Case) -> Case:
        """`case` with the tools it is offered: the server's when it has none; else its own,
        each of which must be the server's (ValueError naming those that are not)."""
        offered = self.listed_tools()
        if not case.tools:
            return case.model_copy(update={"tools": tuple(offered)})
        names = {tool.name for tool in offered}
        missing = [tool.name for tool in case.tools if tool.name not in names]
        if missing:
            raise ValueError(
                f"case {case.id!r}: the MCP server {self.described()} has no tool "
                f"{', '.join(map(repr, missing))} (it has {', '.join(sorted(names))})"
            )
        return case

    def described(self) -> str:
        return shlex.join(self.command) if self.command else str(self.url)


class McpEnvironment:
    """One connection to the server (for stdio, its own server process)."""

    def __init__(self, server: McpServer) -> None:
        from judge.checks._mcp_stdio import Output

        self.server = server
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._stderr = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 (closed by close)
        self._output = Output(server.described(), server.warned)
        self._stopping = asyncio.Event()
        self._held: asyncio.Task[None] | None = None
        self._closed = False
        self.failure: str | None = None
        """Why the server failed (it did not answer, or its connection broke): the run's
        error, where the tool's own refusals are the agent's to handle."""
        try:
            self._wait(self._open(), self.server.start_timeout, "start")
            self.tools = self._wait(self._list(), self.server.timeout, "tools/list")
        except BaseException as exc:
            said = self.stderr_tail()
            self.close()
            if not isinstance(exc, Exception):  # Ctrl-C: the server stopped, the stop goes on
                raise
            leaf = _leaf(exc)
            if isinstance(leaf, McpStartError):  # refused for its tools: the message says all
                raise leaf from None
            if isinstance(leaf, ToolFailed):  # late: the message says all
                why = str(leaf)
            else:
                why = self._broken(leaf) + (f"; it said: {said}" if said else "")
            raise McpStartError(
                f"the MCP server {server.described()} could not be started: {why}"
            ) from None

    async def _open(self) -> None:
        """Connect, the connection held by a task of its own until `close`: anyio's task
        groups (in the client and the transport) must be left by the task that entered them."""
        ready: asyncio.Future[None] = self._loop.create_future()
        self._held = asyncio.ensure_future(self._hold(ready))
        try:
            await ready
        except BaseException:  # late or failed: the server is stopped before the error is told
            self._held.cancel()
            with contextlib.suppress(BaseException):
                await self._held
            raise

    async def _hold(self, ready: asyncio.Future[None]) -> None:
        from mcp import Client

        from judge.checks._mcp_stdio import stdio_server

        target: Any = str(self.server.url)
        if self.server.command:  # its standard error kept, for the errors that quote it
            target = stdio_server(self.server.command, self.server.env, self._stderr, self._output)
        try:
            # No response cache: a state read after a call must see that call.
            async with Client(target, cache=None) as client:
                self._session = client
                ready.set_result(None)
                await self._stopping.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def _release(self) -> None:
        self._stopping.set()
        if self._held is not None:
            await self._held

    async def _list(self) -> list[dict[str, Any]]:
        listed = await self._session.list_tools()
        names = [tool.name for tool in listed.tools]
        for later, name in enumerate(names):
            if (first := names.index(name)) < later:
                raise McpStartError(
                    f"the MCP server {self.server.described()} lists two tools named {name!r} "
                    f"(numbers {first + 1} and {later + 1} of its tools/list): a call by name "
                    "could not say which"
                )
        return [_openai_tool(tool) for tool in listed.tools]

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run tool `name` (blocking): its result, or `ToolFailed` with the reason."""
        try:
            return self._wait(self._call(name, arguments), self.server.timeout, f"tool {name}")
        except Exception as exc:
            raise self._failed(exc) from None

    async def acall(self, name: str, arguments: dict[str, Any]) -> Any:
        """`call`, awaited on the caller's event loop without blocking it."""

        async def bounded() -> Any:
            return await asyncio.wait_for(self._call(name, arguments), self.server.timeout)

        future = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        try:
            return await asyncio.wrap_future(future)
        except TimeoutError:
            raise self._failed(McpServerFailed(self._late(f"tool {name}"))) from None
        except Exception as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: Exception) -> ToolFailed:
        """The call's failure for the agent; a server at fault is also the environment's
        `failure` (its run fails with it)."""
        if isinstance(exc, ToolFailed) and not isinstance(exc, McpServerFailed):
            return exc  # the tool's own refusal: the run goes on
        if not isinstance(exc, McpServerFailed):
            exc = McpServerFailed(f"the MCP server failed: {self._broken(exc)}")
        self.failure = self.failure or str(exc)
        return exc

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        result = await self._session.call_tool(name, arguments)
        text = "".join(getattr(part, "text", "") or "" for part in result.content or ())
        if result.is_error:
            raise ToolFailed(text or f"{name} failed (an error result without a message)")
        if result.structured_content is not None:
            return result.structured_content
        return ToolText(text)

    def snapshot(self) -> Any:
        """The state resource's JSON (None without `state_uri`)."""
        uri = self.server.state_uri
        if uri is None:
            return None
        return self._wait(self._read(uri), self.server.timeout, f"resource {uri}")

    async def _read(self, uri: str) -> Any:
        result = await self._session.read_resource(uri)
        texts = [getattr(part, "text", None) for part in result.contents]
        text = next((t for t in texts if isinstance(t, str)), None)
        if text is None:
            raise ToolFailed(f"the resource {uri} holds no text")
        try:
            return loads(text)
        except DecodeError as exc:
            raise ToolFailed(f"the resource {uri} is not JSON: {exc}") from None

    def stderr_tail(self) -> str:
        """The last lines the server wrote on standard error."""
        try:
            self._stderr.seek(0)
            lines = [line.rstrip() for line in self._stderr.read().splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return " | ".join(lines[-_STDERR_LINES:])

    def close(self) -> None:
        """Disconnect, and stop a stdio server (its process and any it started)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(BaseException):
            self._wait(self._release(), _CLOSE, "stop")
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
        self._stderr.close()

    def _wait(self, work: Coroutine[Any, Any, T], timeout: float, what: str) -> T:
        """`work` run on the connection's loop within `timeout` (cancelled, and its clean-up
        awaited there, when late: a server being started is stopped, not left behind)."""

        async def bounded() -> T:
            return await asyncio.wait_for(work, timeout)

        future = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        try:
            return future.result(timeout + _CLEAN_UP)
        except (TimeoutError, FutureTimeout):
            future.cancel()
            raise McpServerFailed(self._late(what, starting=what == "start")) from None

    def _broken(self, exc: BaseException) -> str:
        """What broke the connection: a message over the bound, else `exc`, in one line."""
        if self._output.too_large is not None:
            return f"a message from it was {self._output.too_large}"
        return _one_line(exc)

    def _late(self, what: str, *, starting: bool = False) -> str:
        said = self.stderr_tail()
        bound, option = (
            (self.server.start_timeout, "--mcp-start-timeout")
            if starting
            else (self.server.timeout, "--mcp-timeout")
        )
        return f"the MCP server did not answer ({what}) within {bound:g} s ({option})" + (
            f"; it said: {said}" if said else ""
        )


def _leaf(exc: BaseException) -> BaseException:
    """The first error an exception group holds (anyio's task groups wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _one_line(exc: BaseException) -> str:
    """`exc` in one line: a pydantic error by its first fields, not its pages."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_url=False)
        said = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(the value)'}: {e['msg']}" for e in errors[:3]
        )
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        return f"{exc.title} is not valid: {said}{more}"
    return f"{type(exc).__name__}: " + " ".join(str(exc).split())


def _settings(given: Iterable[str]) -> dict[str, str]:
    """`KEY=VALUE` settings as a mapping (the last of a key wins); ValueError naming one
    that is not a setting."""
    settings: dict[str, str] = {}
    for text in given:
        key, sep, value = text.partition("=")
        if not sep or not key or key != key.strip():
            raise ValueError(f"--mcp-env {text!r}: expected KEY=VALUE")
        settings[key] = value
    return settings


def _openai_tool(tool: Any) -> dict[str, Any]:
    """An MCP tool as an OpenAI chat tool (its `inputSchema` the parameters)."""
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.input_schema}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}
