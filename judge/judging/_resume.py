"""Resuming an interrupted run: keep the finished results of an output file, redo the rest."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import orjson
from pydantic import ValidationError

from judge._errors import InputError
from judge.cases._files import write_atomically
from judge.cases._loading import first_error
from judge.checks._kinds import FailureKind
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CaseResult

_DONE = ("ok", "skipped")


def finished_results(
    path: str | Path, differs: Callable[[JudgeOutcome], list[str]]
) -> list[CaseResult]:
    """The results in `path` that need no new judging (status `ok` or `skipped`), and rewrite
    the file to hold only those, so that the run appends the rest. A missing file has none.

    The file is ours only if every line is a result (the last may be cut short by the
    interruption) and every finished result was judged by this judge (`differs(outcome)`
    names the settings that are not the same): otherwise `InputError`, and the file is
    left as it is."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"{path}: cannot read results: {exc.strerror or exc}") from None
    kept: list[CaseResult] = []
    lines: list[bytes] = []
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                result = CaseResult.model_validate(orjson.loads(raw))
            except orjson.JSONDecodeError as exc:
                if raw.endswith(b"\n"):  # a whole line, so not one cut by an interruption
                    raise InputError(_not_ours(path, number, f"not JSON: {exc}")) from None
                print(f"judge: {path}:{number}: a last line cut short", file=sys.stderr)
                continue
            except ValidationError as exc:
                raise InputError(_not_ours(path, number, first_error(exc))) from None
            if result.judge is None and not _unreadable_case(result):
                raise InputError(_not_ours(path, number, "no judge verdict: a check result?"))
            if result.judge is None or result.judge.status not in _DONE:
                continue  # judged again
            if changed := differs(result.judge):
                raise InputError(
                    f"{path}:{number}: case {result.id!r} was judged by another judge "
                    f"(differs in: {', '.join(changed)}): write to another -o file, or "
                    "remove this one to judge every case again"
                )
            kept.append(result)
            lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
    write_atomically(path, b"".join(lines))
    return kept


def _unreadable_case(result: CaseResult) -> bool:
    # What `judge grade` writes, without a verdict, for a case it could not read.
    return any(f.kind == FailureKind.INVALID_CASE for f in result.failures)


def _not_ours(path: Path, number: int, why: str) -> str:
    return (
        f"{path}:{number}: not a result of `judge grade` ({why}): -o takes a results file "
        "(to resume it) or a new one, and only its last line may be cut short"
    )
