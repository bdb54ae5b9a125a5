"""Invariance probes: the judge asked the same cases with changes that must not change a
verdict, and how often a verdict flipped.

- `tool_order`: the tools offered, in reverse order;
- `call_order`: the response's calls, in reverse order (verdicts compared call by call);
- `call_ids`: the calls' ids renamed;
- `key_order`: each call's argument keys, in reverse order (the values as they were).

A probe applies to a case only where it changes something (two tools or more, two calls or
more, calls with ids, an argument object of two keys or more). A case whose judge gave no
verdict, before or after the change, is not compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from judge._errors import JudgeError
from judge.cases._calls import Response, ToolCall
from judge.cases._case import Case
from judge.cases._json import DecodeError, dumps, loads
from judge.checks._result import CaseResult
from judge.judging._grade import Judge

Verdicts = tuple[str | None, tuple[str | None, ...]]
"""What a probe compares: the selection verdict, and each call's argument verdict in the
original order of the calls."""


def _tool_order(case: Case) -> Case | None:
    if len(case.tools) < 2:
        return None
    return case.model_copy(update={"tools": tuple(reversed(case.tools))})


def _call_order(case: Case) -> Case | None:
    if len(case.tool_calls) < 2:
        return None
    return _with_calls(case, tuple(reversed(case.tool_calls)))


def _call_ids(case: Case) -> Case | None:
    if not any(call.id for call in case.tool_calls):
        return None
    return _with_calls(
        case,
        tuple(
            call.model_copy(update={"id": f"probe_{i}"}) if call.id else call
            for i, call in enumerate(case.tool_calls)
        ),
    )


def _key_order(case: Case) -> Case | None:
    calls, changed = [], False
    for call in case.tool_calls:
        calls.append(call)
        try:
            arguments = loads(call.arguments)
        except DecodeError:
            continue
        if isinstance(arguments, dict) and len(arguments) > 1:
            text = dumps(dict(reversed(list(arguments.items())))).decode()
            calls[-1] = call.model_copy(update={"arguments": text})
            changed = True
    return _with_calls(case, tuple(calls)) if changed else None


def _with_calls(case: Case, calls: tuple[ToolCall, ...]) -> Case:
    response = (case.response or Response()).model_copy(update={"tool_calls": calls})
    return case.model_copy(update={"response": response})


PROBES: dict[str, Callable[[Case], Case | None]] = {
    "tool_order": _tool_order,
    "call_order": _call_order,
    "call_ids": _call_ids,
    "key_order": _key_order,
}


def probed(case: Case, probe: str) -> Case | None:
    """The case changed as `probe` says (same id), or None when the probe does not apply."""
    if probe not in PROBES:
        raise JudgeError(f"unknown probe {probe!r} (one of {', '.join(PROBES)})")
    return PROBES[probe](case)


def verdicts(result: CaseResult, calls: int, probe: str | None = None) -> Verdicts | None:
    """The verdicts a probe compares (`calls`: how many the response makes), call verdicts in
    the original order of the calls; None when the judge gave none."""
    outcome = result.judge
    if outcome is None or outcome.status != "ok":
        return None
    # An abstained verdict is compared by the label it leaned to: abstaining is not a flip.
    chosen = outcome.selection
    selection = (chosen.leaning or chosen.verdict) if chosen is not None else None
    by_call = {a.call: a.leaning or a.verdict for a in outcome.arguments}
    order = range(calls - 1, -1, -1) if probe == "call_order" else range(calls)
    return selection, tuple(by_call.get(i) for i in order)


@dataclass
class ProbeStats:
    """One probe over a set of cases."""

    probe: str
    applied: int = 0
    """Cases the probe changed and both judgements gave verdicts for."""
    flipped: list[str] = field(default_factory=list)
    """Ids of the cases whose verdicts changed."""
    not_compared: int = 0
    """Cases the probe changed where the judge gave no verdict before or after."""

    @property
    def flip_rate(self) -> float | None:
        return len(self.flipped) / self.applied if self.applied else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "applied": self.applied,
            "flipped": len(self.flipped),
            "flip_rate": self.flip_rate,
            "not_compared": self.not_compared,
            "flipped_cases": list(self.flipped),
        }


async def probe(judge: Judge, cases: Iterable[Case], probes: Iterable[str]) -> list[ProbeStats]:
    """Judge each case as it is and as each probe changes it; count the verdicts that flip."""
    names = list(probes)
    stats = {name: ProbeStats(name) for name in names}
    originals = list(cases)
    changed = [(name, probed(case, name), i) for i, case in enumerate(originals) for name in names]
    before = list(await judge.grade(originals))
    after = iter(await judge.grade([case for _, case, _ in changed if case is not None]))
    for name, case, i in changed:
        if case is None:
            continue
        calls = len(originals[i].tool_calls)
        now, was = verdicts(next(after), calls, name), verdicts(before[i], calls)
        case_id = originals[i].id
        if now is None or was is None:
            stats[name].not_compared += 1
            continue
        stats[name].applied += 1
        if now != was:
            stats[name].flipped.append(case_id)
    return list(stats.values())
