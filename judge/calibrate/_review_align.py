"""The review app's "align" action: `judge align`'s fitting (`fit_alignment`, nested
cross-validation) on the labels given so far in the review, with the review's judge; one run
at a time; the aligned spec written where `judge review --aligned-out` says (by default
beside the calibration record), and per dimension the held-out kappa before and after."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge._errors import InputError, JudgeError
from judge.calibrate._align import AlignmentFit, fit_alignment
from judge.calibrate._align_folds import MIN_LABELS, label_counts
from judge.calibrate._align_probe import probe_source
from judge.calibrate._review import Review
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.checks._result import CaseResult
from judge.judging._aligned import AlignedSpec
from judge.judging._grade import Judge

JudgeWith = Callable[[bool, AlignedSpec | None], Judge]
"""Builds the review's judge (answers or not), aligned by the spec (None: the base judge)."""


class AlignBusy(Exception):
    """An align run is under way: one at a time."""


class NoVerdicts(JudgeError):
    """The judge gave no usable verdict at all: unreachable, or refusing every request."""


def aligned_beside(record: str | Path) -> Path:
    """The default spec's path: `<record stem>.aligned.json` beside the calibration record."""
    record = Path(record)
    return record.with_name(f"{record.stem}.aligned.json")


class ReviewAlign:
    """The align action over `review`. `judge_with` builds its judge; None with
    `unavailable` saying why there is none (the action is then refused)."""

    def __init__(
        self,
        review: Review,
        judge_with: JudgeWith | None,
        output: str | Path,
        *,
        unavailable: str | None = None,
        policy: str | None = None,
        folds: int = 5,
        k: int = 4,
        seed: int = 0,
    ) -> None:
        self.review, self.judge_with, self.output = review, judge_with, Path(output)
        self.policy = policy
        """The user's labelling rule (`judge review --policy`): measured as `judge align
        --policy` measures it."""
        self.unavailable = unavailable or (
            None if judge_with else "no judge to align: start judge review with the judge options"
        )
        self.folds, self.k, self.seed = folds, k, seed
        self.last: dict[str, Any] | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._lock.locked()

    def status(self) -> dict[str, Any]:
        """Whether a run can start (and why not), the label counts against the minimum, whether
        one runs now, and what the last one found."""
        _, cases = self.review.read()
        counts = label_counts(cases)
        reason = self.unavailable
        if reason is None and not any(n >= MIN_LABELS for n in counts.values()):
            said = ", ".join(f"{d} {n}" for d, n in counts.items())
            reason = f"align needs {MIN_LABELS} labels in a dimension (labels so far: {said})"
        return {
            "minimum": MIN_LABELS,
            "labels": counts,
            "ready": reason is None,
            "reason": reason,
            "running": self.running,
            "path": str(self.output),
            "last": self.last,
        }

    def run(self) -> dict[str, Any]:
        """Fit on the labels so far and write the spec (blocking: call it from a worker
        thread). `AlignBusy` while another run is under way; `InputError` for too few labels
        or no judge; `JudgeError` when the judge cannot be asked."""
        if not self._lock.acquire(blocking=False):
            raise AlignBusy("an align run is under way: wait for its figures")
        try:
            if self.judge_with is None:
                raise InputError(self.unavailable or "no judge to align")
            _, cases = self.review.read()
            labelled = [c for c in cases if c.labels is not None]
            fitted = asyncio.run(self._fit(self.judge_with, labelled))
            write_atomically(
                self.output, (fitted.spec.model_dump_json(indent=2) + "\n").encode(), durable=True
            )
            self.last = shown_fit(fitted, self.output)
            return self.last
        finally:
            self._lock.release()

    async def _fit(self, judge_with: JudgeWith, cases: list[Case]) -> AlignmentFit:
        answers = any(c.labels is not None and c.labels.answer is not None for c in cases)
        usable = 0

        async def grader(spec: AlignedSpec | None, chosen: list[Case]) -> list[CaseResult]:
            nonlocal usable
            async with judge_with(answers, spec) as judge:
                results = list(await judge.grade(chosen))
            usable += sum(1 for r in results if r.judge is not None and r.judge.status == "ok")
            if not usable:  # the base judge, first graded, answered nothing: stop here
                first = next((r.judge.error for r in results if r.judge and r.judge.error), None)
                raise NoVerdicts(f"the judge gave no verdict{f': {first}' if first else ''}")
            return results

        async with judge_with(answers, None) as judge:  # what `weights` and `probe` start from
            defaults = judge.decision_defaults()
            probe = probe_source(lambda: judge_with(answers, None), judge)
        return await fit_alignment(
            cases, grader, policy=self.policy, folds=self.folds, k=self.k, seed=self.seed,
            defaults=defaults, probe=probe,
        )  # fmt: skip


def shown_fit(fitted: AlignmentFit, output: Path) -> dict[str, Any]:
    """What the page shows of a fit: per dimension the held-out kappa before and after with
    their intervals, every candidate's, and the choice with why."""
    dimensions = {
        found.dimension: {
            "labels": found.labels,
            "choice": found.choice,
            "why": found.why,
            "before": found.before.as_dict() if found.before else None,
            "after": found.after.as_dict() if found.after else None,
            "candidates": {c: h.as_dict() for c, h in found.candidates.items()},
        }
        for found in fitted.fits
    }
    return {
        "path": str(output),
        "folds": fitted.folds,
        "dimensions": dimensions,
        "left_base": dict(fitted.left_base),
    }
