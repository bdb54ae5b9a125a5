"""Resuming a runs file by content: a stored record is reused only while its case hashes the
same (`case_hash`); a record of a changed case, or one written before records carried a hash,
is asked again (`judge run`) or graded again (`judge regrade`), never trusted blindly."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from judge.cases._case import Case
from judge.cases._hash import case_hash
from judge.runs._grading import Grader, needs_judging
from judge.runs._records import Key, RunRecord


def case_hashes(cases: Iterable[Case]) -> dict[str, str]:
    """Each case's content hash, by id."""
    return {case.id: case_hash(case) for case in cases}


def of_its_case(record: RunRecord, hashes: Mapping[str, str]) -> bool:
    """Whether `record` was asked (or graded) with the case `hashes` holds now."""
    return record.case_hash is not None and record.case_hash == hashes.get(record.case_id)


@dataclass
class Regraded:
    """What `judge regrade -o` takes from the output an earlier regrade wrote."""

    reused: dict[Key, RunRecord] = field(default_factory=dict)
    """The records graded already as this regrade would grade them."""
    held: int = 0
    """The records the output held."""
    changed: int = 0
    """Those whose case changed since they were graded (graded again)."""


def regraded(
    earlier: Iterable[RunRecord],
    records: Iterable[RunRecord],
    cases: Mapping[str, Case],
    grader: Grader,
) -> Regraded:
    """The records of an earlier regrade's output (`earlier`) that need no grading again: of
    the same stored answer as the runs file's record (`records`), graded the same way
    (`grader.grading`) against a case of the same content, and judged when a judge is asked
    (a `judge_error` is judged again)."""
    answers = {record.key: _answer(record) for record in records}
    hashes = case_hashes(cases.values())
    found = Regraded()
    for record in earlier:
        found.held += 1
        if record.key not in answers or record.case_id not in hashes:
            continue  # not regraded now: the runs file's record is written as it is
        if not of_its_case(record, hashes):
            found.changed += 1
        elif (
            _answer(record) == answers[record.key]
            and record.graded_with == grader.grading
            and (grader.judge is None or not needs_judging(record))
        ):
            found.reused[record.key] = record
    return found


def _answer(record: RunRecord) -> tuple[Any, ...]:
    """What the candidate gave, and with what settings: what grading reads, not writes."""
    return (record.response, record.transcript, record.final_state, record.settings)
