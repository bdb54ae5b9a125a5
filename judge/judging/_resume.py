"""Resuming an output file: keep the finished results whose case is unchanged, grade the rest.

A finished result (status `ok` or `skipped`) is reused only while its case hashes the same
(`case_hash`) and the same judge would judge it; a case that changed, or a result written
before results carried a hash, is graded again and its new line replaces the old one."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from judge._errors import CaseError, InputError
from judge.cases._case import Case
from judge.cases._files import write_atomically
from judge.cases._hash import case_hash
from judge.cases._loading import first_error, iter_cases
from judge.checks._kinds import FailureKind
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult

_DONE = ("ok", "skipped")


@dataclass
class Resumed:
    """What an output file held when a run began, and what the run made of it."""

    path: Path
    finished: dict[str, tuple[CaseResult, bytes]] = field(default_factory=dict)
    """Case id -> its finished result and line (a later line of an id replaces an earlier)."""
    held: int = 0
    """The results the file held, one per case id."""
    start: int = 0
    """Where this run's lines begin: the size of the file rewritten to the finished results."""
    reused: set[str] = field(default_factory=set)
    """The ids whose finished result a case of this run reused."""
    changed: set[str] = field(default_factory=set)
    """The ids whose finished result was of another content: graded again."""
    grading: str | None = None
    """The settings beside the judge this run grades with (`Judge.grading`): a result graded
    with others is graded again."""

    @classmethod
    def read(
        cls,
        path: str | Path,
        differs: Callable[[JudgeOutcome], list[str]],
        grading: str | None = None,
    ) -> Resumed | None:
        """The finished results of `path`, the file rewritten to hold only those (so that the
        run appends the rest); None when there is no such file (nothing to resume).

        The file is ours only if every line is a result (the last may be cut short by the
        interruption) and every finished result was judged by this judge (`differs(outcome)`
        names the settings that are not the same): otherwise `InputError`, and the file is
        left as it is."""
        resumed = cls(Path(path), grading=grading)
        try:
            handle = resumed.path.open("rb")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise InputError(f"{path}: cannot read results: {exc.strerror or exc}") from None
        ids: set[str] = set()
        with handle:
            for number, raw in enumerate(handle, start=1):
                result = _result(resumed.path, number, raw)
                if result is None:
                    continue
                ids.add(result.id)
                resumed.finished.pop(result.id, None)  # a later line replaces an earlier one
                if result.judge is None or result.judge.status not in _DONE:
                    continue  # judged again
                if changed := differs(result.judge):
                    raise InputError(
                        f"{path}:{number}: case {result.id!r} was judged by another judge "
                        f"(differs in: {', '.join(changed)}): write to another -o file, "
                        "remove this one or give --fresh to judge every case again"
                    )
                line = raw if raw.endswith(b"\n") else raw + b"\n"
                resumed.finished[result.id] = (result, line)
        resumed.held = len(ids)
        write_atomically(resumed.path, b"".join(line for _, line in resumed.finished.values()))
        resumed.start = os.path.getsize(resumed.path)
        return resumed

    def current(self, case: Case) -> bool:
        """Whether `case` has a finished result of its content."""
        found = self.finished.get(case.id)
        return (
            found is not None
            and found[0].case_hash == case_hash(case)
            and found[0].graded_with == self.grading
        )

    def todo(
        self, source: Any, on_reused: Callable[[CaseResult], None]
    ) -> Iterator[Case | CaseError]:
        """The items of `source` to grade: all but the cases whose finished result is reused,
        which `on_reused` gets in their place."""
        for item in iter_cases(source):
            if isinstance(item, Case) and item.id in self.finished and item.id not in self.reused:
                if self.current(item):
                    self.reused.add(item.id)
                    on_reused(self.finished[item.id][0])
                    continue
                self.changed.add(item.id)
            yield item

    def left(self) -> list[CaseResult]:
        """The finished results no case of the run met: kept as they were."""
        met = self.reused | self.changed
        return [result for key, (result, _) in self.finished.items() if key not in met]

    def finish(self) -> str:
        """Drop the old lines of the changed cases from the file (their new lines are those
        this run appended) and say what was resumed."""
        if self.changed:
            with self.path.open("rb") as handle:
                handle.seek(self.start)
                appended = handle.read()
            kept = (line for key, (_, line) in self.finished.items() if key not in self.changed)
            write_atomically(self.path, b"".join(kept) + appended)
        return resumed_line(len(self.finished) - len(self.changed), self.held, len(self.changed),
                            "results", unfinished=self.held - len(self.finished))  # fmt: skip


def resumed_line(kept: int, held: int, changed: int, noun: str, unfinished: int = 0) -> str:
    """What a command says when it resumes an output: how many of what it held it kept."""
    said = f"resumed {kept} of {held} {noun} ({changed} changed, graded again)"
    if unfinished:
        said += f"; {unfinished} without a verdict, judged again"
    return said


def _result(path: Path, number: int, raw: bytes) -> CaseResult | None:
    """The result on one line of an output file (None: a blank line, or a last line cut
    short); `InputError` when it is not one `judge grade` writes."""
    if not raw.strip():
        return None
    try:
        result = CaseResult.model_validate(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        if raw.endswith(b"\n"):  # a whole line, so not one cut by an interruption
            raise InputError(_not_ours(path, number, f"not JSON: {exc}")) from None
        print(f"judge: {path}:{number}: a last line cut short", file=sys.stderr)
        return None
    except ValidationError as exc:
        raise InputError(_not_ours(path, number, first_error(exc))) from None
    if result.judge is None and not _unreadable_case(result):
        raise InputError(_not_ours(path, number, "no judge verdict: a check result?"))
    return result


def _unreadable_case(result: CaseResult) -> bool:
    # What `judge grade` writes, without a verdict, for a case it could not read.
    return any(f.kind == FailureKind.INVALID_CASE for f in result.failures)


def _not_ours(path: Path, number: int, why: str) -> str:
    return (
        f"{path}:{number}: not a result of `judge grade` ({why}): -o takes a results file "
        "(to resume it) or a new one, and only its last line may be cut short"
    )
