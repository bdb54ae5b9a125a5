"""Value origins and injection evidence of a whole case, for its result."""

from __future__ import annotations

from typing import NamedTuple

from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.cases._json import pointer
from judge.checks._grounding import UngroundedValue
from judge.checks._injection import evidence
from judge.checks._origins import Conversation, Graded, leaves
from judge.checks._result import CaseResult, InjectionEvidence, ValueOrigin
from judge.checks._structure import parse_arguments
from judge.checks._trajectory import trajectory_calls


class CaseEvidence(NamedTuple):
    """A case's evidence, as its result's fields (`CaseResult.model_copy(update=...)`)."""

    value_origins: tuple[ValueOrigin, ...] | None
    injection: tuple[InjectionEvidence, ...] | None
    evidence_undecided: str | None = None


def case_evidence(case: Case, whole_path: bool) -> CaseEvidence:
    """Where each value of the graded calls came from (every call of the assistant turns with
    `whole_path`, each read against the messages before it; else the response's), and the
    values that only instructions in a tool result gave; or why they are undecided."""
    before = len(case.messages)
    if whole_path:
        try:
            located = trajectory_calls(case)
        except ShapeError:  # the result says why already
            return CaseEvidence((), ())
        graded: list[Graded] = [
            (call.name, parse_arguments(call.arguments)[0], _place(where, before))
            for call, where in located
        ]
    else:
        graded = [(c.name, parse_arguments(c.arguments)[0], before) for c in case.tool_calls]
    places = {tool.name: (index, tool.parameters) for index, tool in enumerate(case.tools)}
    found = evidence(Conversation(case.messages), graded, places.get)
    if found.origins is None or found.injection is None:
        return CaseEvidence(None, None, found.undecided)
    return CaseEvidence(
        tuple(ValueOrigin(**o) for o in found.origins),
        tuple(InjectionEvidence(**i) for i in found.injection),
    )


def _place(where: str, end: int) -> int:
    """The message a call was made in (`/messages/3/tool_calls/0`), or the end for the
    response's calls: what comes before it is what it could have read."""
    parts = where.split("/")
    return int(parts[2]) if parts[1] == "messages" else end


def response_evidence(
    case: Case, checked: CaseResult | None = None
) -> tuple[tuple[ValueOrigin, ...], tuple[InjectionEvidence, ...]]:
    """The evidence of the response's calls: the checked result's own where it has it and
    numbers calls within the response (no trajectory), else found again."""
    if (
        checked is not None
        and checked.trajectory is None
        and (checked.value_origins is not None or checked.evidence_undecided is not None)
    ):
        return checked.value_origins or (), checked.injection or ()  # (undecided: none)
    found = case_evidence(case, False)
    return found.value_origins or (), found.injection or ()


def ungrounded_values(case: Case, checked: CaseResult | None = None) -> tuple[UngroundedValue, ...]:
    """The values of the response's calls found nowhere (origin `nowhere`), with the values
    themselves (from `checked`'s origins where it has them)."""
    origins = response_evidence(case, checked)[0]
    nowhere = {(o.call, o.path) for o in origins if o.origin == "nowhere"}
    found = []
    for index, call in enumerate(case.tool_calls):
        arguments, _ = parse_arguments(call.arguments)
        for path, value in leaves(arguments or {}):
            if (index, pointer(path)) in nowhere:
                found.append(UngroundedValue(call=index, path=pointer(path), value=value))
    return tuple(found)
