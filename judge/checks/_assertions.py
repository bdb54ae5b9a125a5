"""Tools called and avoided: the `assert_tools` of a case, checked over the calls graded."""

from __future__ import annotations

from collections.abc import Sequence

from judge.cases._case import AssertTools
from judge.cases._json import pointer
from judge.checks._arguments import Problem
from judge.checks._kinds import FailureKind

Located = tuple[int | None, Problem]


def check_assertions(names: Sequence[str], spec: AssertTools) -> list[Located]:
    """The failures of `names` (every call graded, in order) against `spec`; none when every
    assertion holds. A failure names the call at fault where there is one."""
    problems: list[Located] = []
    at: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        at.setdefault(name, []).append(index)
    for i, name in enumerate(spec.called):
        if name not in at:
            message = f"{name!r} must be called at least once; it was not called"
            problems.append(
                (None, (FailureKind.REQUIRED_TOOL_MISSING, f"/assert_tools/called/{i}", message))
            )
    for i, name in enumerate(spec.avoided):
        for index in at.get(name, ()):
            message = f"{name!r} must never be called (assert_tools.avoided)"
            problems.append(
                (index, (FailureKind.FORBIDDEN_CALL, f"/assert_tools/avoided/{i}", message))
            )
    for name, bounds in spec.counts.items():
        made = at.get(name, [])
        where = pointer(("assert_tools", "counts", name))
        if len(made) < bounds.min:
            message = (
                f"{name!r} was called {_times(len(made))}; at least {_times(bounds.min)} required"
            )
            problems.append((None, (FailureKind.CALL_COUNT, f"{where}/min", message)))
        if bounds.max is not None and len(made) > bounds.max:
            message = (
                f"{name!r} was called {_times(len(made))}; at most {_times(bounds.max)} allowed"
            )
            problems.append((made[bounds.max], (FailureKind.CALL_COUNT, f"{where}/max", message)))
    if spec.max_calls is not None and len(names) > spec.max_calls:
        message = f"{len(names)} calls were made; at most {spec.max_calls} allowed in all"
        problems.append(
            (spec.max_calls, (FailureKind.CALL_COUNT, "/assert_tools/max_calls", message))
        )
    return problems


def _times(n: int) -> str:
    return "once" if n == 1 else f"{n} times"
