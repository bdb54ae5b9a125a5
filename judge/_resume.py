"""Resuming an interrupted run: keep the finished results of an output file, redo the rest."""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import ValidationError

from judge._files import write_atomically
from judge._result import CaseResult

_DONE = ("ok", "skipped")


def finished_results(path: str | Path) -> list[CaseResult]:
    """The results in `path` that need no new judging (status `ok` or `skipped`), and rewrite
    the file to hold only those, so that the run appends the rest. A missing file has none."""
    path = Path(path)
    if not path.is_file():
        return []
    kept: list[CaseResult] = []
    lines: list[bytes] = []
    with path.open("rb") as handle:
        for raw in handle:
            try:
                result = CaseResult.model_validate(orjson.loads(raw))
            except (orjson.JSONDecodeError, ValidationError):
                continue  # a line cut short by the interruption: judged again
            if result.judge is not None and result.judge.status in _DONE:
                kept.append(result)
                lines.append(raw if raw.endswith(b"\n") else raw + b"\n")
    write_atomically(path, b"".join(lines))
    return kept
