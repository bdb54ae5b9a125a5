"""`judge check`'s path through numbered lines of case JSON, shared by `judge check`
(`judge.cli._jobs`) and `judge.ray`: a line in the common form is read lean and checked
without the result models (`_plain`); any other is read whole, as a `Case`, by the caller
(`check_item` checks it: the models load with the first such line)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from judge._errors import CaseError
from judge.cases._json import dumps_line
from judge.cases._lean import LeanTool, read_lean
from judge.checks._plain import check_plain
from judge.checks._summary import Tally

if TYPE_CHECKING:
    from judge.cases._case import Case
    from judge.cases._match import Match
    from judge.checks._env import EnvironmentFactory
    from judge.checks._result import CaseResult
    from judge.checks._structure import SchemaCache

Raw = TypeVar("Raw", bytes, bytes | None)
"""A line's bytes (None: a row that holds no case JSON)."""


def check_lines(
    lines: Iterable[tuple[int, Raw]],
    schemas: SchemaCache,
    whole: Callable[[int, Raw], dict[str, Any]],
    *,
    plain: bool,
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each line's number and result JSON, in order. With `plain` (no match settings and no
    environment), a line in the common form is checked lean; `whole(number, raw)` checks the
    others."""
    for number, raw in lines:
        lean = read_lean(raw) if plain and raw is not None else None
        yield number, (check_plain(lean, schemas) if lean is not None else whole(number, raw))


def grade_lines(
    lines: Iterable[tuple[int, bytes]],
    schemas: SchemaCache,
    whole: Callable[[int, bytes], dict[str, Any]],
    plain: bool,
    tally: Tally,
    numbers: list[int],
    ids: list[str],
    offered: dict[str, LeanTool] | None = None,
) -> bytes:
    """`judge check`'s loop: each line's result counted in `tally`, its line number and case
    id noted, and the results as JSON lines, in order. A lean case offering no tools is
    offered `offered` (`--tools`; `whole` does the same for the others)."""
    out: list[bytes] = []
    for number, raw in lines:  # (not through `check_lines`: a generator's steps cost)
        lean = read_lean(raw) if plain else None
        if lean is not None:
            if offered is not None and not lean.tools:
                lean.tools = offered
            data = check_plain(lean, schemas, tally)  # counted as it is built
        else:
            data = whole(number, raw)
            tally.add(data)
        numbers.append(number)
        ids.append(data["id"])
        out.append(dumps_line(data))
    return b"".join(out)


def check_item(
    item: Case | CaseError,
    *,
    match: Match | None,
    env: EnvironmentFactory | None,
    schemas: SchemaCache,
) -> CaseResult:
    """The checks of a case read whole, or the `InvalidCase` result of one that could not be
    read."""
    from judge.checks._check import check_case, invalid_case_result  # the result models

    if isinstance(item, CaseError):
        return invalid_case_result(item)
    return check_case(item, schemas=schemas, match=match, env=env)
