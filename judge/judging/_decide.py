"""Verdicts decided without asking the judge, and verdicts combined from several answers."""

from __future__ import annotations

from collections import Counter
from typing import Any, TypeVar

from judge.checks._kinds import FailureKind
from judge.checks._outcome import (
    Agreement,
    AnswerVerdict,
    ArgumentProblem,
    ArgumentVerdict,
    JudgeOutcome,
    SelectionCategory,
    SelectionLabel,
    SelectionVerdict,
    TrajectoryVerdict,
)
from judge.checks._result import CaseResult, Failure
from judge.judging._replies import ValueVerdict

DERIVED_PROBLEMS: dict[FailureKind, ArgumentProblem] = {
    FailureKind.INVALID_JSON: "invalid_json",
    FailureKind.UNKNOWN_NAME: "other",
    FailureKind.SCHEMA_MISMATCH: "wrong_type",
}


V = TypeVar("V", SelectionVerdict, ArgumentVerdict, TrajectoryVerdict, AnswerVerdict, ValueVerdict)
A = TypeVar("A", SelectionVerdict, ArgumentVerdict, AnswerVerdict)


def majority(answers: list[V]) -> tuple[V, float]:
    """The majority verdict (ties: the first asked) and the share of samples against it.
    With several samples its confidence is the share that agrees with it."""
    counts = Counter(a.verdict for a in answers)
    top = max(counts.values())
    chosen = next(a for a in answers if counts[a.verdict] == top)
    if len(answers) > 1:
        chosen = chosen.model_copy(
            update={"confidence": top / len(answers), "confidence_source": "samples"}
        )
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


def taken_action(data: dict[str, Any], *, called: bool) -> str:
    """The action the assistant took: call_tool exactly when it called a tool (a fact, not the
    judge's say), else the judge's reading of its reply."""
    if called:
        return "call_tool"
    taken = str(data.get("assistant_action"))
    return "answer_directly" if taken == "call_tool" else taken


def settle_selection(data: Any, *, called: bool) -> SelectionVerdict:
    """A selection verdict from the needed and the taken action (a `decide_action` rubric).
    Whether the assistant called a tool is a fact, not the judge's say."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    needed = str(data.get("needed_action"))
    taken = taken_action(data, called=called)
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


def selection_confidence(
    needed: dict[str, float] | None,
    verdict: dict[str, float] | None,
    taken: str,
    chosen: SelectionLabel,
) -> float | None:
    """The probability of the chosen selection verdict under the judge's distribution over the
    needed action (a `decide_action` rubric): the needed actions that settle to the same
    verdict, and where both actions are call_tool, the judge's own verdict's probability."""
    if needed is None:
        return None
    total = 0.0
    for action, p in needed.items():
        settled = _SETTLED.get((action, taken))
        if settled is None:
            if verdict is None:
                return None
            total += p * verdict.get(chosen, 0.0)
        elif settled[0] == chosen:
            total += p
    return min(1.0, total)


def abstained(verdict: A, below: float) -> A:
    """The verdict, or `uncertain` (leaning to its label) when the judge is less sure of it
    than `below`, or gave no measure. A derived verdict is a fact: never uncertain."""
    if verdict.source == "derived" or verdict.verdict not in ("correct", "incorrect"):
        return verdict
    if verdict.confidence is not None and verdict.confidence >= below:
        return verdict
    return verdict.model_copy(update={"verdict": "uncertain", "leaning": verdict.verdict})


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
        confidence=1.0,
        reasoning="; ".join(f"{f.kind.value}: {f.message}" for f in failures),
        problems=tuple(problems),
    )


def agreement_with_checks(checked: CaseResult, outcome: JudgeOutcome) -> Agreement:
    selection = None
    chosen = outcome.selection.verdict if outcome.selection is not None else None
    if checked.tool_selection is not None and chosen in ("correct", "incorrect"):
        selection = (chosen == "correct") == checked.tool_selection
    arguments = None
    verdict = outcome.arguments_verdict
    if checked.argument_values is not None and verdict in ("correct", "incorrect"):
        arguments = (verdict == "correct") == checked.argument_values
    return Agreement(selection=selection, arguments=arguments)
