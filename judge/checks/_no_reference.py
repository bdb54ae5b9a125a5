"""What decides a case without a reference: a call broken in itself fails it, and a case whose
right reply makes no call (`expected_behavior: ask` / `no_call`) is held to making none: a
`no_call` reply with text passes, whether an `ask` reply's text asks is the judge's. Part of the
compiled core, beside `_plain`, which calls it."""

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


def reply_without_call(
    behavior: str | None, text: str | None
) -> tuple[bool | None, Problem | None]:
    """`passed` of a case passed so far whose reply makes no call, and its `EmptyReply` failure
    if any. Where the case expects `ask` or `no_call`: failed when the reply has no text either;
    undecided for an `ask` reply with text (whether it asks is the judge's: `needs_judge`) and
    for a case not run yet (`text` None); else passed."""
    if behavior not in NO_CALL_BEHAVIORS:
        return True, None
    if text is None:
        return None, None
    if text.strip():
        return (None if behavior == "ask" else True), None
    what = "ask the user" if behavior == "ask" else "answer without a call"
    message = f"the reply makes no call and has no text: the case expects it to {what}"
    return False, (FailureKind.EMPTY_REPLY, "", message)
