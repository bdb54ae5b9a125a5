"""Assembling a case's outcome from its answered verdicts: the calibration's map of each
confidence, abstention below the thresholds, escalation of what was abstained from to a second
judge, and agreement with the deterministic checks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TypeVar

from jinja2 import TemplateError

from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.checks._outcome import (
    AnswerVerdict,
    ArgumentVerdict,
    JudgeOutcome,
    Provenance,
    SelectionVerdict,
    Usage,
)
from judge.checks._result import CaseResult
from judge.judging._answering import Answered, Answering
from judge.judging._decide import abstained, agreement_with_checks
from judge.judging._questions import Questioner, questions_for
from judge.judging._scored import platt

V = TypeVar("V", SelectionVerdict, ArgumentVerdict, AnswerVerdict)


@dataclass
class Verdicts:
    """A case's verdicts on what calibration measures, as they are settled; after escalation,
    how many the escalation judge decided, at what cost."""

    selection: SelectionVerdict | None = None
    arguments: list[ArgumentVerdict] = field(default_factory=list)
    count: int = 0
    tally: Counter[str] = field(default_factory=Counter)
    answer: AnswerVerdict | None = None


Escalated = Verdicts
"""What `Judge.reask` returns (its name before the judging layer was split)."""


def settled(
    verdicts: Verdicts,
    platts: dict[str, tuple[float, float]],
    cuts: dict[str, float] | None,
) -> Verdicts:
    """The verdicts with each confidence mapped by the calibration's Platt fit, then those
    less sure than their dimension's threshold `uncertain`."""

    def mapped(dimension: str, verdict: V) -> V:
        ab = platts.get(dimension)
        if ab is None or verdict.confidence is None or verdict.source == "derived":
            return verdict
        return verdict.model_copy(update={"confidence": platt(ab, verdict.confidence)})

    selection, arguments, answer = verdicts.selection, verdicts.arguments, verdicts.answer
    if platts:
        arguments = [mapped("arguments", a) for a in arguments]
        selection = None if selection is None else mapped("selection", selection)
        answer = None if answer is None else mapped("answer", answer)
    cuts = cuts or {}
    if "answer" in cuts and answer is not None:
        answer = abstained(answer, cuts["answer"])
    if "arguments" in cuts:
        arguments = [abstained(a, cuts["arguments"]) for a in arguments]
    if "selection" in cuts and selection is not None:
        selection = abstained(selection, cuts["selection"])
    return Verdicts(selection, arguments, answer=answer)


async def reask(
    answering: Answering,
    questioner: Questioner,
    case: Case,
    checked: CaseResult,
    verdicts: Verdicts,
) -> Verdicts:
    """As the escalation judge: answer again exactly the `uncertain` verdicts of another
    judge (only the questions they need), keeping this judge's verdicts for them. A verdict
    it cannot give stays uncertain."""
    selection, arguments, answer = verdicts.selection, verdicts.arguments, verdicts.answer
    unsure_selection = selection is not None and selection.verdict == "uncertain"
    unsure_calls = {a.call for a in arguments if a.verdict == "uncertain"}
    unsure_answer = answer is not None and answer.verdict == "uncertain"
    if not unsure_selection and not unsure_calls and not unsure_answer:
        return verdicts
    try:
        asked = questions_for(
            case,
            checked,
            questioner.rubrics,
            judge_broken=questioner.judge_broken,
            answers=unsure_answer,
            aligned=questioner.aligned,
        ).questions
    except (TemplateError, ShapeError):
        return verdicts
    needed = [
        q
        for q in asked
        if (q.dimension == "selection" and unsure_selection)
        or (q.dimension == "arguments" and unsure_calls & set(q.calls))
        or (q.dimension == "answer" and unsure_answer)
    ]
    tally: Counter[str] = Counter()
    answered = await answering.answered(needed, tally)
    count = 0
    if unsure_selection and answered.selection is not None:
        selection = answered.selection.model_copy(update={"escalated": True})
        count += 1
    by_call = {a.call: a for a in answered.arguments if a.call in unsure_calls}
    count += len(by_call)
    arguments = [
        by_call[a.call].model_copy(update={"escalated": True}) if a.call in by_call else a
        for a in arguments
    ]
    if unsure_answer and answered.answer is not None:
        answer = answered.answer.model_copy(update={"escalated": True})
        count += 1
    return Verdicts(selection, arguments, count, tally, answer)


@dataclass(frozen=True)
class Judged:
    """What the outcome records of the judge beside its verdicts."""

    samples: int
    provenance: Provenance
    trusted: bool | None
    escalation: Provenance | None


def outcome(
    checked: CaseResult,
    answered: Answered,
    verdicts: Verdicts,
    tally: Counter[str],
    judged: Judged,
) -> JudgeOutcome:
    """The judge's part of a case's result, with its agreement with the checks."""
    error, flips = answered.error, answered.flips
    found = JudgeOutcome(
        status="judge_error" if error else "ok",
        selection=verdicts.selection,
        arguments=tuple(verdicts.arguments),
        trajectory=answered.trajectory,
        answer=verdicts.answer,
        samples=judged.samples,
        flip_rate=(sum(flips) / len(flips)) if judged.samples > 1 and flips else None,
        error=str(error) if error else None,
        raw=error.raw if error else None,
        usage=Usage(**tally),
        provenance=judged.provenance,
        trusted=judged.trusted,
        escalated=verdicts.count,
        escalation_usage=Usage(**verdicts.tally) if verdicts.tally else None,
        escalation=judged.escalation,
    )
    return found.model_copy(update={"agreement": agreement_with_checks(checked, found)})
