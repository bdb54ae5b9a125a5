"""What decides a case without a reference: a call broken in itself fails it, and a case whose
right reply makes no call (`expected_behavior: ask` / `no_call`) is held to making none, its
text left to the judge. Part of the compiled core, beside `_plain`, which calls it."""

from __future__ import annotations

from judge.checks._arguments import Problem
from judge.checks._kinds import FailureKind

NO_CALL_BEHAVIORS = ("ask", "no_call")
"""Expected behaviours whose right reply makes no call."""
_STRUCTURAL = (FailureKind.INVALID_JSON, FailureKind.UNKNOWN_NAME, FailureKind.SCHEMA_MISMATCH)


def unexpected_call(index: int, name: str, any_expected: bool) -> tuple[int, Problem]:
    """The `UnexpectedCall` failure of call `index`, to `name`."""
    message = (
        f"call to {name!r} was not expected"
        if any_expected
        else f"no tool call was expected, got {name!r}"
    )
    return index, (FailureKind.UNEXPECTED_CALL, "", message)


def broken(problems: list[tuple[int | None, Problem]]) -> bool:
    """Whether a call is broken in itself (not JSON, an unknown tool, against its schema):
    a case fails on it without a reference."""
    return any(problem[1][0] in _STRUCTURAL for problem in problems)


def undecided_reply(behavior: str, text: str) -> Problem | None:
    """Of a reply that rightly makes no call where the case expects `ask` or `no_call`: the
    `EmptyReply` failure when it has no text either, else None (the judge must decide)."""
    if text.strip():
        return None
    what = "ask the user" if behavior == "ask" else "answer without a call"
    return (
        FailureKind.EMPTY_REPLY,
        "",
        f"the reply makes no call and has no text: the case expects it to {what}",
    )
