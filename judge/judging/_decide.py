"""Verdicts decided without asking the judge, and verdicts combined from several answers."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypeVar

from judge.checks._kinds import FailureKind
from judge.checks._outcome import (
    Agreement,
    ArgumentProblem,
    ArgumentVerdict,
    JudgeOutcome,
    SelectionCategory,
    SelectionLabel,
    SelectionVerdict,
    TrajectoryVerdict,
)
from judge.checks._result import CaseResult, Failure

DERIVED_PROBLEMS: dict[FailureKind, ArgumentProblem] = {
    FailureKind.INVALID_JSON: "invalid_json",
    FailureKind.UNKNOWN_NAME: "other",
    FailureKind.SCHEMA_MISMATCH: "wrong_type",
}


V = TypeVar("V", SelectionVerdict, ArgumentVerdict, TrajectoryVerdict)


def majority(answers: list[V]) -> tuple[V, float]:
    """The majority verdict (ties: the first asked) and the share of samples against it."""
    counts = Counter(a.verdict for a in answers)
    top = max(counts.values())
    chosen = next(a for a in answers if counts[a.verdict] == top)
    return chosen, 1 - top / len(answers)


def majority_arguments(
    answers: list[list[ArgumentVerdict]],
) -> list[tuple[ArgumentVerdict, float]]:
    by_call: dict[int, list[ArgumentVerdict]] = {}
    for sample in answers:
        for verdict in sample:
            by_call.setdefault(verdict.call, []).append(verdict)
    return [majority(verdicts) for verdicts in by_call.values()]


# (needed action, action taken) -> the verdict and category they settle; None: the judge's own.
_SETTLED: dict[tuple[str, str], tuple[SelectionLabel, SelectionCategory] | None] = {
    ("call_tool", "call_tool"): None,
    ("call_tool", "ask_user"): ("incorrect", "needless_ask"),
    ("call_tool", "answer_directly"): ("incorrect", "missing_call"),
    ("ask_user", "call_tool"): ("incorrect", "should_ask"),
    ("ask_user", "ask_user"): ("correct", "right_ask"),
    ("ask_user", "answer_directly"): ("incorrect", "should_ask"),
    ("answer_directly", "call_tool"): ("incorrect", "unnecessary_call"),
    ("answer_directly", "ask_user"): ("incorrect", "needless_ask"),
    ("answer_directly", "answer_directly"): ("correct", "right_no_call"),
}


def settle_selection(data: Any, *, called: bool) -> SelectionVerdict:
    """A selection verdict from the needed and the taken action (a `decide_action` rubric).
    Whether the assistant called a tool is a fact, not the judge's say."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    needed = str(data.get("needed_action"))
    taken = "call_tool" if called else str(data.get("assistant_action"))
    if taken == "call_tool" and not called:
        taken = "answer_directly"  # no call was made, whatever the judge read
    if (needed, taken) not in _SETTLED:
        raise ValueError(
            "needed_action and assistant_action must be call_tool, ask_user or answer_directly"
        )
    verdict = SelectionVerdict.model_validate(data)
    settled = _SETTLED[(needed, taken)]
    reasoning = f"needed: {needed}; taken: {taken}. {verdict.reasoning}"
    if settled is None:
        category = verdict.category if verdict.verdict == "incorrect" else "right_call"
        return verdict.model_copy(update={"reasoning": reasoning, "category": category})
    label, category = settled
    return verdict.model_copy(
        update={"reasoning": reasoning, "verdict": label, "category": category}
    )


def derived_argument(index: int, failures: list[Failure]) -> ArgumentVerdict:
    problems: list[ArgumentProblem] = []
    for failure in failures:
        problem: ArgumentProblem = DERIVED_PROBLEMS[failure.kind]
        if failure.kind == FailureKind.SCHEMA_MISMATCH:
            if "required property" in failure.message:
                problem = "missing_value"
            elif "Additional properties" in failure.message:
                problem = "forbidden_extra"
        if problem not in problems:
            problems.append(problem)
    return ArgumentVerdict(
        call=index,
        verdict="incorrect",
        source="derived",
        reasoning="; ".join(f"{f.kind.value}: {f.message}" for f in failures),
        problems=tuple(problems),
    )


def agreement_with_checks(checked: CaseResult, outcome: JudgeOutcome) -> Agreement:
    selection = None
    if checked.tool_selection is not None and outcome.selection is not None:
        selection = (outcome.selection.verdict == "correct") == checked.tool_selection
    arguments = None
    verdict = outcome.arguments_verdict
    if checked.argument_values is not None and verdict is not None:
        arguments = (verdict == "correct") == checked.argument_values
    return Agreement(selection=selection, arguments=arguments)
