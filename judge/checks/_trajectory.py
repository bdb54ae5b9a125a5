"""A multi-step agent's trajectory: every call of the assistant turns, then the final response."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from judge.cases._calls import ShapeError, ToolCall, normalise_response
from judge.cases._case import Case
from judge.cases._form import ArgsMode, MatchMode


class TrajectoryCall(BaseModel):
    """One call of the trajectory and where the case holds it."""

    model_config = ConfigDict(frozen=True)

    index: int
    name: str
    source: str
    """JSON pointer into the case: `/messages/3/tool_calls/0`, `/response/tool_calls/1`."""


class TrajectoryReport(BaseModel):
    """How the candidate's path differs from the reference. Failure `call` indices of a
    trajectory result are positions in `calls`."""

    model_config = ConfigDict(frozen=True)

    mode: MatchMode | None
    """Null when no mode was set: only the final state was compared (`--env` without
    `--match`), or an agent run's calls were paired as `judge check` pairs them by default."""
    args: ArgsMode | None
    calls: tuple[TrajectoryCall, ...]
    matched: tuple[tuple[int, int], ...] = ()
    """(call, expected call) pairs, in call order."""
    missing: tuple[int, ...] = ()
    """Expected calls the mode requires and the candidate did not make."""
    extra: tuple[int, ...] = ()
    """Calls the mode does not allow: in no pair with a reference call (`superset` and
    `in_order` allow them, unless `expected_calls` is empty)."""
    out_of_order: tuple[int, ...] = ()
    """`strict` and `in_order` only: the fewest matched calls that must move for the order to
    agree (the parallel calls of one message have no order among themselves)."""
    ignored: tuple[int, ...] = ()
    """Calls to `ignore_tools`, neither required nor extra."""


def trajectory_calls(case: Case) -> list[tuple[ToolCall, str]]:
    """The calls of the assistant turns of `messages`, then those of `response`, in order,
    each with its JSON pointer in the case. Raises ShapeError (pointer from the case root)."""
    found: list[tuple[ToolCall, str]] = []
    for i, message in enumerate(case.messages):
        if message.get("role") != "assistant":
            continue
        try:
            response = normalise_response(message)
        except ShapeError as exc:
            raise ShapeError(f"/messages/{i}{exc.pointer}", str(exc)) from None
        listed = isinstance(message.get("tool_calls"), list)
        for j, call in enumerate(response.tool_calls if response else ()):
            found.append((call, f"/messages/{i}/tool_calls/{j}" if listed else f"/messages/{i}"))
    for j, call in enumerate(case.tool_calls):
        found.append((call, f"/response/tool_calls/{j}"))
    return found


def message_of(source: str, response_at: int) -> int:
    """The index of the message that holds the call at `source` (a `trajectory_calls`
    pointer); `response_at` for the response's calls."""
    if source.startswith("/messages/"):
        return int(source.split("/")[2])
    return response_at


def response_offset(case: Case, trajectory: TrajectoryReport | None) -> int:
    """The trajectory index of the response's first call (0 without a trajectory)."""
    return len(trajectory.calls) - len(case.tool_calls) if trajectory is not None else 0
