"""What a trajectory's failures say of where calls stand in the path: a `MissingCall` names the
calls that were made and what each was paired with; a `WrongOrder` names the step a call is
in the reference. Off the hot path: only failing cases get here."""

from __future__ import annotations

from collections.abc import Sequence

from judge.cases._lean_form import Expected
from judge.checks._arguments import Problem
from judge.checks._kinds import FailureKind

_SHOWN_CALLS = 5  # calls a `MissingCall` message names, at most


def missing_call(
    exp_index: int, expected: Sequence[Expected], names: list[str], call_ids: list[int],
    paired_with: dict[int, int],
) -> Problem:  # fmt: skip
    """The `MissingCall` of reference call `exp_index`: `expected a call to 'x'
    (/expected_calls/1), none made; the calls made: x (paired with /expected_calls/0), y`,
    the first few of the calls compared (`call_ids`), with their pairs (`paired_with`)."""
    at = f"/expected_calls/{exp_index}"
    said = f"expected a call to {expected[exp_index].name!r} ({at}), none made"
    if not call_ids:
        return FailureKind.MISSING_CALL, at, said + "; no call was made"
    shown: list[str] = []
    for c in call_ids[:_SHOWN_CALLS]:
        e = paired_with.get(c)
        name = names[c] if names[c].isprintable() else repr(names[c])  # escape codes spelled out
        shown.append(name if e is None else f"{name} (paired with /expected_calls/{e})")
    more = len(call_ids) - _SHOWN_CALLS
    said += f"; the calls made: {', '.join(shown)}" + (f" and {more} more" if more > 0 else "")
    return FailureKind.MISSING_CALL, at, said


def wrong_order(
    late: list[int], names: list[str], expected: Sequence[Expected], exp_ids: list[int],
    paired_with: dict[int, int],
) -> list[tuple[int | None, Problem]]:  # fmt: skip
    """The `WrongOrder` of each call of `late`: the step of its reference call among those
    compared (`exp_ids`)."""
    order = " -> ".join(expected[e].name for e in exp_ids)
    found: list[tuple[int | None, Problem]] = []
    for call_index in late:
        e = paired_with[call_index]
        message = (
            f"call to {names[call_index]!r} is out of order: it is step "
            f"{exp_ids.index(e) + 1} of {order} (/expected_calls/{e})"
        )
        found.append((call_index, (FailureKind.WRONG_ORDER, "", message)))
    return found
