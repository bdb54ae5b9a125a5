"""Final-state checks: replay calls into an environment and compare the states they reach.

An environment is anything with `call(name, arguments)` (run one tool; raise when it fails)
and `snapshot()` (the state as JSON-like data). A factory makes a fresh one per replay; it is
called with the case when it takes an argument, so each case can seed its own state.
`StateEnvironment` builds one from a state dict and plain functions `tool(state, **arguments)`.
As in tau2-bench, the reference calls and the candidate's calls are replayed into two fresh
environments: any path that reaches the reference's state passes.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from judge.cases._case import Case, ExpectedCall
from judge.cases._json import pointer
from judge.cases._match import load_object
from judge.checks._matchers import ABSENT, example
from judge.checks._values import json_equal

_MAX_DIFFS = 50


@runtime_checkable
class Environment(Protocol):
    """The world the agent's tools act on.

    An environment may also have, and is then used through them: `async acall(name,
    arguments)`, awaited by agent runs instead of `call`; `close()`, called once its run or
    replay is done (an MCP server's process is stopped there); `failure`, why the environment
    itself broke (a server that stopped answering), which fails the run rather than the call.
    """

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run tool `name`; raise to report that the call failed."""
        ...

    def snapshot(self) -> Any:
        """The current state as JSON-like data (dicts, lists, strings, numbers)."""
        ...


EnvironmentFactory = Callable[..., Environment]

NOT_OBSERVED: Any = object()
"""`replay`'s default: no observed end state, the candidate's calls are replayed."""


class ToolFailed(Exception):
    """Raise from a tool to fail the call with a message for the agent."""


class ToolText(str):
    """A tool result that is text for the agent as it is (an MCP tool's text contents), not
    a value to write as JSON."""


def close_environment(env: Any) -> None:
    """Release what an environment holds (an MCP server's process), when it says how."""
    close = getattr(env, "close", None)
    if callable(close):
        close()


class StateEnvironment:
    """An environment over a dict: each tool is `tool(state, **arguments)` and may change it.

    A call that raises leaves the state as it was before the call (the state is copied before
    each call: for a large database, implement `call` and `snapshot` yourself).
    """

    def __init__(self, state: dict[str, Any], tools: Mapping[str, Callable[..., Any]]) -> None:
        self.state = state
        self.tools = dict(tools)

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        tool = self.tools.get(name)
        if tool is None:
            raise ToolFailed(f"unknown tool {name!r}")
        try:
            inspect.signature(tool).bind(self.state, **arguments)
        except TypeError as exc:  # arguments the tool does not take, or lacks
            raise ToolFailed(f"{name}: {exc}") from None
        before = copy.deepcopy(self.state)
        try:
            return tool(self.state, **arguments)
        except Exception:
            self.state = before
            raise

    def snapshot(self) -> Any:
        return copy.deepcopy(self.state)


class StateDiff(BaseModel):
    """One place where the candidate's state differs from the reference's."""

    model_config = ConfigDict(frozen=True)

    path: str
    """JSON pointer into the state."""
    expected: Any = None
    actual: Any = None
    change: str
    """`changed`, `missing` (only in the reference's state) or `added` (only in the candidate's)."""


class CallError(BaseModel):
    model_config = ConfigDict(frozen=True)

    call: int
    name: str
    message: str


class StateReport(BaseModel):
    """The outcome of replaying the reference and the candidate into fresh environments."""

    model_config = ConfigDict(frozen=True)

    equal: bool | None
    """Whether both reach the same state; null when the reference could not be replayed."""
    diff: tuple[StateDiff, ...] = ()
    errors: tuple[CallError, ...] = ()
    """Candidate calls that failed in the environment (their effects are not applied)."""
    reference_error: str | None = None


def observes_state(factory: EnvironmentFactory) -> bool:
    """Whether the environments of `factory` have a state to compare (an MCP server without a
    state resource has none: its snapshots are all null, and equal)."""
    return bool(getattr(factory, "observes_state", True))


def load_factory(spec: str | EnvironmentFactory) -> EnvironmentFactory:
    """`module:factory` or `path/to/file.py:factory` (or a callable, returned as is)."""
    if callable(spec):
        return spec
    factory = load_object(spec)
    if not callable(factory):
        raise ValueError(f"{spec!r} is not callable")
    return factory  # type: ignore[no-any-return]


def new_environment(factory: EnvironmentFactory, case: Case) -> Environment:
    env = factory(case) if _takes_argument(factory) else factory()
    if not isinstance(env, Environment):
        raise TypeError(
            f"the environment factory returned {type(env).__name__}, which lacks call(name, "
            "arguments) and snapshot()"
        )
    return env


def replay(
    factory: EnvironmentFactory,
    case: Case,
    expected: Sequence[ExpectedCall],
    calls: Sequence[tuple[str, dict[str, Any] | None]],
    reached: Any = NOT_OBSERVED,
) -> StateReport:
    """Replay the reference calls and the candidate's `(name, arguments)` calls (None: the
    arguments could not be parsed) into fresh environments and compare their states. With
    `reached` (the state an agent run actually ended in), that state is compared instead of a
    replay of the candidate's calls."""
    reference = new_environment(factory, case)
    try:
        for index, call in enumerate(expected):
            try:
                reference.call(call.name, reference_arguments(call))
            except Exception as exc:
                why = f"expected call {index} ({call.name}) failed: {describe_error(exc)}"
                return StateReport(equal=None, reference_error=why)
        wanted = reference.snapshot()
    finally:
        close_environment(reference)
    if reached is not NOT_OBSERVED:
        found: list[StateDiff] = []
        _diff(wanted, reached, (), found)
        return StateReport(equal=not found, diff=tuple(found[:_MAX_DIFFS]))
    candidate = new_environment(factory, case)
    errors: list[CallError] = []
    try:
        for index, (name, arguments) in enumerate(calls):
            if arguments is None:
                errors.append(CallError(call=index, name=name, message="arguments are not JSON"))
                continue
            try:
                candidate.call(name, arguments)
            except Exception as exc:
                errors.append(CallError(call=index, name=name, message=describe_error(exc)))
        reached = candidate.snapshot()
    finally:
        close_environment(candidate)
    diff: list[StateDiff] = []
    _diff(wanted, reached, (), diff)
    return StateReport(equal=not diff, diff=tuple(diff[:_MAX_DIFFS]), errors=tuple(errors))


def reference_arguments(call: ExpectedCall) -> dict[str, Any]:
    """The arguments to replay for an expected call: a value each matcher accepts (`$any`'s
    first), optional arguments without one left out. ValueError where a matcher names no
    value (`$regex`, `$judge`)."""
    told = {key: example(value) for key, value in call.arguments.items()}
    return {key: value for key, value in told.items() if value is not ABSENT}


def _diff(want: Any, got: Any, path: tuple[Any, ...], out: list[StateDiff]) -> None:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in want:
            if key not in got:
                out.append(
                    StateDiff(path=pointer((*path, key)), expected=want[key], change="missing")
                )
            else:
                _diff(want[key], got[key], (*path, key), out)
        for key in got:
            if key not in want:
                out.append(StateDiff(path=pointer((*path, key)), actual=got[key], change="added"))
    elif isinstance(want, list | tuple) and isinstance(got, list | tuple) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got, strict=True)):
            _diff(a, b, (*path, i), out)
    elif not json_equal(got, want):
        out.append(StateDiff(path=pointer(path), expected=want, actual=got, change="changed"))


def describe_error(exc: BaseException) -> str:
    """What a failed tool call says: a `ToolFailed` message as it is, else the error's type
    and message."""
    text = str(exc)
    return text if isinstance(exc, ToolFailed) else f"{type(exc).__name__}: {text}"


def _takes_argument(factory: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in parameters
    )
