"""The calibration record a review writes: built as `judge calibrate` builds it, and bound to
the judge that gave the results (`RecordRefused` when there is none to bind it to)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from judge._errors import JudgeError
from judge.calibrate._record import CalibrationRecord, build_record, dimensions_of
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.judging._grade import Judge


class RecordRefused(JudgeError):
    """The calibration record cannot be written from these results; the message says why."""


def record_of(
    cases: list[Case],
    results: list[CaseResult],
    judge: Judge | None,
    *,
    path: Path,
    threshold: float,
    strict: bool,
    sample: str,
    results_path: str | None,
) -> CalibrationRecord:
    """The record of the labels so far against the results, to be written at `path`."""
    stem = path.with_suffix("")
    answers = "answer" in dimensions_of(cases)  # as `judge calibrate` binds its record
    fingerprint = judge.fingerprint(answers=answers) if judge is not None else {}
    return build_record(
        cases=cases,
        results=results,
        fingerprint=fingerprint,
        threshold=threshold,
        strict=strict,
        sample=sample,
        results_path=results_path or "",
        disagreements_path=f"{stem}.disagreements.jsonl",
        defaults=judge.decision_defaults() if judge is not None else None,
    )


def find_judge(
    judge_for: Callable[[bool], Judge] | None,
    results_path: str | None,
    results: list[CaseResult],
    wants_answers: bool,
) -> Judge:
    """The judge `judge_for(answers)` builds that graded `results` (read from
    `results_path`), tried with answers as the sample `wants_answers` first."""
    if results_path is None:
        raise RecordRefused("no --results: a record measures a judge's verdicts")
    judged = [r.judge for r in results if r.judge is not None and r.judge.provenance]
    if not judged:
        raise RecordRefused(f"{results_path} holds no judge verdicts for this sample")
    if judge_for is None:
        raise RecordRefused("no judge options: the record cannot name the judge")
    first: set[str] = set()
    for answers in (wants_answers, not wants_answers):  # graded with(out) --answers
        judge = judge_for(answers)
        differ = [judge.differs_from(o) for o in judged]  # as resume and the gate compare
        if not any(differ):
            if wants_answers and not answers:
                raise RecordRefused(
                    "the sample has answer labels but the results were graded without "
                    "answers: grade it with --answers"
                )
            return judge
        if not all(differ):
            fields = sorted({f for d in differ for f in d})
            raise RecordRefused(
                f"{results_path} mixes judges (they differ in: {', '.join(fields)}): "
                "a record is bound to one judge, so grade the sample with one"
            )
        first = first or {f for d in differ for f in d}
    raise RecordRefused(
        f"the results were graded by another judge than these options describe (differs "
        f"in: {', '.join(sorted(first))}): start judge review with the options they were "
        "graded with (--model, --base-url, --rubrics, --samples, ...)"
    )
