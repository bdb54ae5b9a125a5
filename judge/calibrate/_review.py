"""What `judge review` serves: a sample's cases in the order that spends a reviewer's time
best, each as the judge saw it, the labels given so far against the judge's verdicts (the
statistics of `judge calibrate`), and the calibration record written from them."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from judge._errors import InputError, JudgeError
from judge.calibrate._labels import (
    NOTE_KEY,
    LabelFile,
    LabelState,
    Written,
    label_state,
    needs,
    note_of,
    revision,
    shown_labels,
    write_rows,
)
from judge.calibrate._record import (
    CalibrationRecord,
    Dimension,
    build_record,
    dimensions_of,
    disagreements,
    judge_verdict,
)
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.cases._json import dumps
from judge.checks._check import check_case
from judge.checks._grounding import ungrounded_values
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult
from judge.judging._grade import Judge
from judge.judging._prompt import rubric_variables

Group = Literal["disagreement", "uncertain", "flipped", "rest"]
GROUPS: tuple[Group, ...] = ("disagreement", "uncertain", "flipped", "rest")
"""The queue's order: cases whose label disagrees with the judge, then those the judge was
unsure of (abstained, low confidence, no verdict), then those whose verdict flipped between
samples, then the rest."""
FILTERS = ("group", "tool", "failure", "state")
"""Besides `meta.KEY`: the strata a queue can be narrowed to."""
_META_VALUES = 20  # a meta key with more distinct values (free text) is not a stratum


class RecordRefused(JudgeError):
    """The calibration record cannot be written from these results; the message says why."""


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


@dataclass(frozen=True)
class Placed:
    """Where a case stands in the queue, and why."""

    group: Group
    reason: str
    confidence: float | None
    """The lowest confidence among its verdicts."""


def place(case: Case, result: CaseResult | None, low_confidence: float) -> Placed:
    """A case's group in the queue: disagreement with its labels first, then the judge's
    doubt, then flips between samples."""
    judged = result.judge if result is not None else None
    if result is None or judged is None or judged.status == "skipped":
        return Placed("rest", "no judge verdict to check", None)
    if judged.status != "ok":
        return Placed(
            "uncertain", f"the judge gave no verdict ({judged.error or 'judge_error'})", 0
        )
    lowest = _lowest_confidence(judged)
    against = []
    for dimension in dimensions_of([case]):
        label = getattr(case.labels, dimension, None) if case.labels else None
        verdict, _ = judge_verdict(result, dimension)
        if label is not None and verdict is not None and label != verdict:
            against.append(f"{dimension}: labelled {label}, judged {verdict}")
    if against:
        return Placed("disagreement", "disagrees with the judge on " + "; ".join(against), lowest)
    dimensions: tuple[Dimension, ...] = ("selection", "arguments", "answer")
    unsure = [d for d in dimensions if judge_verdict(result, d)[1] == "uncertain"]
    if unsure:
        return Placed("uncertain", "the judge abstained on " + ", ".join(unsure), lowest)
    if lowest is not None and lowest < low_confidence:
        return Placed("uncertain", f"low confidence ({lowest:.2f} < {low_confidence})", lowest)
    if judged.flip_rate:
        shown = f"{judged.flip_rate:.2f} over {judged.samples} samples"
        return Placed("flipped", f"the verdict flipped between samples (flip rate {shown})", lowest)
    labelled = label_state(_labels(case), case) == "labelled"
    return Placed("rest", "agrees with the labels" if labelled else "not labelled yet", lowest)


def _lowest_confidence(judged: JudgeOutcome) -> float | None:
    verdicts = [judged.selection, judged.answer, *judged.arguments]
    found = [v.confidence for v in verdicts if v is not None and v.confidence is not None]
    return min(found) if found else None


def _labels(case: Case) -> dict[str, Any] | None:
    # Only the labels given: `arguments: null` is a label ("not applicable"), absence is not.
    if case.labels is None:
        return None
    return case.labels.model_dump(include=case.labels.model_fields_set)


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
                update={"ungrounded_values": ungrounded_values(case)}
            )
        return self._checks[case.id]

    def strata(self, case: Case, placed: Placed, state: LabelState) -> dict[str, list[str]]:
        """Each stratum's values for a case (a case calls several tools, fails several ways)."""
        kinds = sorted({f.kind.value for f in self.checked(case).failures})
        found = {
            "group": [placed.group],
            "tool": sorted({t.name for t in case.tool_calls}) or ["(no call)"],
            "failure": kinds or ["(none)"],
            "state": [state],
        }
        for key, value in case.meta.items():
            if isinstance(value, str | int | float | bool) and key != NOTE_KEY:
                found[f"meta.{key}"] = [str(value)]
        return found

    def queue(self, filters: dict[str, str] | None = None) -> dict[str, Any]:
        """The cases in review order with why each is there, narrowed by `filters` (stratum
        -> value), the progress overall and per stratum, and the strata to filter by."""
        filters = filters or {}
        unknown = [k for k in filters if k not in FILTERS and not k.startswith("meta.")]
        if unknown:
            raise ValueError(
                f"cannot filter by {', '.join(unknown)}: use {', '.join(FILTERS)}, or meta.KEY"
            )
        _, cases = self.read()
        items, progress = [], _Progress()
        for index, case in enumerate(cases):
            placed = place(case, self.results.get(case.id), self.low_confidence)
            state = label_state(_labels(case), case)
            strata = self.strata(case, placed, state)
            progress.add(strata, state)
            if all(value in strata.get(name, ["(none)"]) for name, value in filters.items()):
                items.append(
                    (
                        GROUPS.index(placed.group),
                        state == "labelled",
                        placed.confidence if placed.confidence is not None else 1.0,
                        index,
                        {
                            "id": case.id,
                            "group": placed.group,
                            "reason": placed.reason,
                            "state": state,
                        },
                    )
                )
        items.sort(key=lambda item: item[:4])
        return {
            "cases": [item[4] for item in items],
            "progress": progress.figures(),
            "filters": filters,
        }

    def case(self, case_id: str) -> dict[str, Any]:
        """A case as the judge saw it: the conversation, the tools, the calls, the structural
        findings and ungrounded values, the judge's verdicts, and the labels so far."""
        rows, cases = self.read()
        index = next((i for i, c in enumerate(cases) if c.id == case_id), None)
        if index is None:
            raise KeyError(case_id)
        case, row = cases[index], rows[index]
        checked = self.checked(case)
        variables = rubric_variables(case, checked)
        result = self.results.get(case.id)
        placed = place(case, result, self.low_confidence)
        return {
            "id": case.id,
            "line": index + 1,
            "group": placed.group,
            "reason": placed.reason,
            "state": label_state(_labels(case), case),
            "needs": needs(case),
            "labels": shown_labels(row),
            "note": note_of(row),
            "reviewer": (row.get("labels") or {}).get("reviewer"),
            "labelled_at": (row.get("labels") or {}).get("labelled_at"),
            "revision": revision(row),
            "conversation": variables["conversation"],
            "tools": variables["tools"],
            "response_text": variables["response_text"],
            "calls": variables["calls"],
            "findings": variables["findings"],
            "ungrounded": variables["ungrounded"],
            "checks": {
                "passed": checked.passed,
                "tool_selection": checked.tool_selection,
                "schema_valid": checked.schema_valid,
                "argument_values": checked.argument_values,
                "failures": [f.model_dump(mode="json") for f in checked.failures],
            },
            "expected_calls": None
            if case.expected_calls is None
            else [c.model_dump(mode="json", exclude_defaults=True) for c in case.expected_calls],
            "expected_behavior": case.expected_behavior,
            "expected_answer": case.expected_answer,
            "meta": {k: v for k, v in case.meta.items() if k != NOTE_KEY},
            "judge": None
            if result is None or result.judge is None
            else result.judge.model_dump(mode="json", exclude={"raw"}),
        }

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
        return {
            "id": case_id,
            "labels": shown_labels(written.row),
            "note": note_of(written.row),
            "revision": revision(written.row),
            "state": label_state(_labels(written.case), written.case),
            "conflict": None
            if written.conflict is None
            else {
                "message": "another reviewer changed this case since you opened it; your "
                "answer replaced theirs",
                "replaced": written.conflict,
            },
        }

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
        stem = self.record_path.with_suffix("")
        answers = "answer" in dimensions_of(cases)  # as `judge calibrate` binds its record
        fingerprint = judge.fingerprint(answers=answers) if judge is not None else {}
        return build_record(
            cases=cases,
            results=results,
            fingerprint=fingerprint,
            threshold=self.min_kappa,
            strict=self.strict,
            sample=self.sample,
            results_path=self.results_path or "",
            disagreements_path=f"{stem}.disagreements.jsonl",
            defaults=judge.decision_defaults() if judge is not None else None,
        )

    def _bound_judge(self, cases: list[Case], results: list[CaseResult]) -> Judge:
        """The judge the results were graded by, as the options describe it (found once
        per answers-or-not: the results never change); RecordRefused when there is none to
        bind the record to."""
        wants_answers = "answer" in dimensions_of(cases)
        if wants_answers not in self._bound:
            try:
                self._bound[wants_answers] = self._find_judge(results, wants_answers)
            except RecordRefused as exc:
                self._bound[wants_answers] = exc
        found = self._bound[wants_answers]
        if isinstance(found, RecordRefused):
            raise found
        return found

    def _find_judge(self, results: list[CaseResult], wants_answers: bool) -> Judge:
        if self.results_path is None:
            raise RecordRefused("no --results: a record measures a judge's verdicts")
        judged = [r.judge for r in results if r.judge is not None and r.judge.provenance]
        if not judged:
            raise RecordRefused(f"{self.results_path} holds no judge verdicts for this sample")
        if self.judge_for is None:
            raise RecordRefused("no judge options: the record cannot name the judge")
        first: set[str] = set()
        for answers in (wants_answers, not wants_answers):  # graded with(out) --answers
            judge = self.judge_for(answers)
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
                    f"{self.results_path} mixes judges (they differ in: {', '.join(fields)}): "
                    "a record is bound to one judge, so grade the sample with one"
                )
            first = first or {f for d in differ for f in d}
        raise RecordRefused(
            f"the results were graded by another judge than these options describe (differs "
            f"in: {', '.join(sorted(first))}): start judge review with the options they were "
            "graded with (--model, --base-url, --rubrics, --samples, ...)"
        )


class _Progress:
    """Labelled / total, overall and per stratum value."""

    def __init__(self) -> None:
        self.total = self.labelled = self.partial = 0
        self.strata: dict[str, dict[str, list[int]]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0])
        )

    def add(self, strata: dict[str, list[str]], state: LabelState) -> None:
        self.total += 1
        self.labelled += state == "labelled"
        self.partial += state == "partial"
        for name, values in strata.items():
            for value in values:
                counts = self.strata[name][value]
                counts[0] += state == "labelled"
                counts[1] += 1

    def figures(self) -> dict[str, Any]:
        strata = {
            name: {v: {"labelled": c[0], "total": c[1]} for v, c in sorted(values.items())}
            for name, values in sorted(self.strata.items())
            if not name.startswith("meta.") or 1 < len(values) <= min(_META_VALUES, self.total - 1)
        }
        return {
            "labelled": self.labelled,
            "partial": self.partial,
            "total": self.total,
            "strata": strata,
        }
