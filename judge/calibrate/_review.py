"""What `judge review` serves: a sample's cases in the order that spends a reviewer's time
best (`_review_queue`), each as the judge saw it, the labels given so far against the judge's
verdicts (the statistics of `judge calibrate`), and the calibration record written from them
(`_review_record`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from judge._errors import InputError
from judge.calibrate._labels import LabelFile, LabelState, Written, needs, write_rows
from judge.calibrate._record import CalibrationRecord, dimensions_of, disagreements
from judge.calibrate._review_case import shown_case, shown_write
from judge.calibrate._review_queue import Placed, Strata, check_filters, queue_of, strata_of
from judge.calibrate._review_record import RecordRefused as RecordRefused
from judge.calibrate._review_record import find_judge, record_of
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.cases._json import dumps
from judge.checks._check import check_case
from judge.checks._evidence import ungrounded_values
from judge.checks._result import CaseResult
from judge.judging._grade import Judge


def read_results(path: str | Path) -> dict[str, CaseResult]:
    """The results of `judge grade` (or `judge calibrate --results`), by case id."""
    found: dict[str, CaseResult] = {}
    try:
        with Path(path).open("rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    result = CaseResult.model_validate_json(line)
                except ValueError as exc:
                    first = str(exc).splitlines()[0]
                    raise InputError(f"{path}:{number}: not a judge result: {first}") from None
                found[result.id] = result
    except OSError as exc:
        raise InputError(f"{path}: cannot read the results: {exc}") from None
    return found


class Review:
    """A sample under review: its label file, the judge's results, and the judge the results
    are bound to (`judge_for(answers)` builds it from the options the results were graded
    with; it is never asked anything, only compared). `low_confidence`: verdicts under it
    are queued with the uncertain ones; `min_kappa` and `strict` as `judge calibrate`'s."""

    def __init__(
        self,
        sample: str | Path,
        results: str | Path | None = None,
        *,
        judge_for: Callable[[bool], Judge] | None = None,
        low_confidence: float = 0.7,
        min_kappa: float = 0.6,
        strict: bool = False,
        record: str | Path = "calibration.json",
        reviewer: str | None = None,
    ) -> None:
        self.file = LabelFile(sample)
        self.reviewer = reviewer
        """Whose labels these are, unless a request names its reviewer."""
        self.sample = str(sample)
        self.results_path = str(results) if results is not None else None
        self.results = read_results(results) if results is not None else {}
        self.judge_for = judge_for
        self.low_confidence = low_confidence
        self.min_kappa = min_kappa
        self.strict = strict
        self.record_path = Path(record)
        self._snapshot: tuple[tuple[int, int, int], list[dict[str, Any]], list[Case]] | None = None
        self._checks: dict[str, CaseResult] = {}
        self._bound: dict[bool, Judge | RecordRefused] = {}
        self.read()  # a bad sample fails here, before anything is served

    def read(self) -> tuple[list[dict[str, Any]], list[Case]]:
        """The rows and cases as the file holds them now (read again only when it changed)."""
        stat = os.stat(self.file.path)
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        if self._snapshot is None or self._snapshot[0] != key:
            rows, cases = self.file.read()
            self._snapshot = (key, rows, cases)
        return self._snapshot[1], self._snapshot[2]

    def checked(self, case: Case) -> CaseResult:
        if case.id not in self._checks:  # a label never changes what the checks find
            found = check_case(case)  # with the ungrounded values, as the judge is shown them
            self._checks[case.id] = found.model_copy(
                update={"ungrounded_values": ungrounded_values(case, found)}
            )
        return self._checks[case.id]

    def strata(self, case: Case, placed: Placed, state: LabelState) -> Strata:
        """Each stratum's values for a case (a case calls several tools, fails several ways)."""
        return strata_of(case, self.checked(case), placed, state)

    def queue(self, filters: dict[str, str] | None = None) -> dict[str, Any]:
        """The cases in review order with why each is there, narrowed by `filters` (stratum
        -> value), the progress overall and per stratum, and the strata to filter by."""
        filters = filters or {}
        check_filters(filters)
        _, cases = self.read()
        return queue_of(cases, self.results, self.low_confidence, self.strata, filters)

    def case(self, case_id: str) -> dict[str, Any]:
        """A case as the judge saw it: the conversation, the tools, the calls, the structural
        findings and ungrounded values, the judge's verdicts, and the labels so far."""
        rows, cases = self.read()
        index = next((i for i, c in enumerate(cases) if c.id == case_id), None)
        if index is None:
            raise KeyError(case_id)
        case, row = cases[index], rows[index]
        checked = self.checked(case)
        result = self.results.get(case.id)
        return shown_case(case, row, index + 1, checked, result, self.low_confidence)

    def label(
        self,
        case_id: str,
        changes: dict[str, str | None],
        *,
        reviewer: str | None = None,
        seen: str | None = None,
    ) -> dict[str, Any]:
        """Write a case's labels (see `LabelFile.write`) after checking them against what
        the case needs; ValueError says what is wrong, KeyError that there is no such case."""
        _, cases = self.read()
        case = next((c for c in cases if c.id == case_id), None)
        if case is None:
            raise KeyError(case_id)
        wanted = needs(case)
        if changes.get("arguments") in ("correct", "incorrect") and not wanted["arguments"]:
            raise ValueError("the case makes no call: its arguments can only be not_applicable")
        if changes.get("answer") is not None and not wanted["answer"]:
            raise ValueError("the case does not end in a text reply: it has no answer to label")
        written: Written = self.file.write(case_id, changes, reviewer=reviewer, seen=seen)
        self._snapshot = None
        return shown_write(case_id, written)

    def _paired(self) -> tuple[list[Case], list[CaseResult]]:
        _, cases = self.read()
        judged = [c for c in cases if c.id in self.results]
        return judged, [self.results[c.id] for c in judged]

    def agreement(self) -> dict[str, Any]:
        """The labels so far against the judge's verdicts, per dimension, with the
        statistics `judge calibrate` reports; and whether a record can be written."""
        _, all_cases = self.read()
        cases, results = self._paired()
        found: dict[str, Any] = {
            "cases": len(all_cases),
            "judged": len(cases),
            "threshold": self.min_kappa,
            "strict": self.strict,
            "dimensions": {},
            "deterministic": {},
            "passed": None,
        }
        try:
            judge: Judge | None = self._bound_judge(cases, results)
            found["record"] = {"path": str(self.record_path), "writable": True, "reason": None}
        except RecordRefused as exc:
            judge = None
            found["record"] = {"path": str(self.record_path), "writable": False,
                               "reason": str(exc)}  # fmt: skip
        if cases:
            record = self._record(cases, results, judge)
            found["dimensions"] = {
                k: v.model_dump(mode="json") for k, v in record.dimensions.items()
            }
            found["deterministic"] = {
                k: v.model_dump(mode="json") for k, v in record.deterministic.items()
            }
            found["passed"] = record.passed
        return found

    def write_record(self) -> dict[str, Any]:
        """Write the calibration record from the labels given so far: the record `judge
        calibrate` writes, bound to the fingerprint of the judge that gave the results.
        RecordRefused when they come from several judges, or from another than described."""
        cases, results = self._paired()
        judge = self._bound_judge(cases, results)
        record = self._record(cases, results, judge)
        rows = disagreements(cases, results)
        write_rows(record.disagreements, [dumps(r) for r in rows])
        write_atomically(
            self.record_path, (record.model_dump_json(indent=2) + "\n").encode(), durable=True
        )
        return {
            "path": str(self.record_path),
            "disagreements": record.disagreements,
            "passed": record.passed,
            "fingerprint_sha256": record.fingerprint_sha256,
            "dimensions": {k: v.model_dump(mode="json") for k, v in record.dimensions.items()},
        }

    def _record(
        self, cases: list[Case], results: list[CaseResult], judge: Judge | None
    ) -> CalibrationRecord:
        return record_of(
            cases,
            results,
            judge,
            path=self.record_path,
            threshold=self.min_kappa,
            strict=self.strict,
            sample=self.sample,
            results_path=self.results_path,
        )

    def _bound_judge(self, cases: list[Case], results: list[CaseResult]) -> Judge:
        """The judge the results were graded by, as the options describe it (found once
        per answers-or-not: the results never change); RecordRefused when there is none to
        bind the record to."""
        wants_answers = "answer" in dimensions_of(cases)
        if wants_answers not in self._bound:
            try:
                self._bound[wants_answers] = find_judge(
                    self.judge_for, self.results_path, results, wants_answers
                )
            except RecordRefused as exc:
                self._bound[wants_answers] = exc
        found = self._bound[wants_answers]
        if isinstance(found, RecordRefused):
            raise found
        return found
