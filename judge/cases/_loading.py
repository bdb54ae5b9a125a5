"""Load cases from JSON Lines files, pandas DataFrames or plain Python objects.

A malformed case never stops the others: iteration yields a `CaseError` in its place. A file
that is one JSON array of cases (or holds cases spread over several lines) is read as its
cases, each named by the line it starts on and its JSON pointer (`_file_form`).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple

from pydantic import ValidationError

from judge._errors import CaseError, InputError, UnknownFieldWarning
from judge.cases._calls import ShapeError
from judge.cases._case import Case
from judge.cases._fields import UnknownField, unknown_fields, without_unknown
from judge.cases._file_form import CaseDocument, CaseInput, CaseText, open_case_input
from judge.cases._json import DecodeError, json_kind, loads
from judge.cases._json import pointer as json_pointer
from judge.cases._parquet import as_json_lines, is_parquet, unreadable_row

if TYPE_CHECKING:
    import pandas as pd


# DataFrame columns that may hold JSON text (a frame read from CSV, say).
_JSON_COLUMNS = ("messages", "tools", "response", "expected_calls", "labels", "match", "meta")
# pydantic names the member of a union that failed in an error's location (`literal['a','b']`,
# `list[str]`, `function-after[...]`, `str`): not a key of the case.
_UNION_TAG = re.compile(r"^[a-z][a-z_-]*(\[.*\])?$")
_TYPE_NAMES = frozenset(("str", "int", "float", "bool", "list", "dict", "none", "callable"))


class LoadedCases(list[Case]):
    """The cases that loaded, in order, with `errors` for those that did not."""

    def __init__(self, cases: Iterable[Case] = (), errors: Iterable[CaseError] = ()) -> None:
        super().__init__(cases)
        self.errors: list[CaseError] = list(errors)

    def to_pandas(self) -> pd.DataFrame:
        """One row per case, with the nested fields as Python objects."""
        import pandas as pd

        rows = [case.model_dump(mode="json", exclude={"tools"}) for case in self]
        for row, case in zip(rows, self, strict=True):
            row["tools"] = [tool.to_openai() for tool in case.tools]
        columns = list(Case.model_fields)
        return pd.DataFrame(rows, columns=columns)


def load_cases(source: Any, *, strict: bool = False) -> LoadedCases:
    """Load every case of a JSONL path, a DataFrame or an iterable of dicts or `Case`s.

    Malformed cases are collected in `.errors` (each names its file, line, case and JSON
    pointer); raises `InputError` only when the source cannot be read at all. A key the case
    format does not know is an `UnknownFieldWarning` (with `strict`, an error).
    """
    loaded = LoadedCases()
    for item in iter_cases(source, strict=strict):
        if isinstance(item, CaseError):
            loaded.errors.append(item)
        else:
            loaded.append(item)
    return loaded


Warn = Callable[[str], None]
"""Where a reader reports a case's unknown fields, one message each."""


def warn_python(message: str) -> None:
    """Report an unknown field as an `UnknownFieldWarning` (the readers' default)."""
    warnings.warn(UnknownFieldWarning(message), stacklevel=4)


def iter_cases(
    source: Any, *, strict: bool = False, warn: Warn | None = None
) -> Iterator[Case | CaseError]:
    """Yield each case of `source` in order, or the `CaseError` that stands in its place. A
    path ending in `.parquet` is read as Parquet (one row per case), any other as JSON Lines.

    A key the case format does not know is reported to `warn` (default: an
    `UnknownFieldWarning`); with `strict`, such a case is a `CaseError` instead."""
    reading = _Reading(strict, warn or warn_python)
    if isinstance(source, str | PathLike):
        return _iter_parquet(source, reading) if is_parquet(source) else _iter_file(source, reading)
    if _is_dataframe(source):
        return _iter_frame(source, reading)
    if isinstance(source, Case | dict):
        source = [source]
    return _iter_objects(source, reading)


class _Reading(NamedTuple):
    strict: bool
    warn: Warn


def parse_case(
    data: Any,
    *,
    source: str,
    line: int | None,
    strict: bool = False,
    warn: Warn | None = None,
    at: str = "",
) -> Case:
    """Validate one decoded case; raise `CaseError` saying where it is wrong. Unknown keys go
    to `warn` (default: an `UnknownFieldWarning`), or with `strict` are a `CaseError`. `at`:
    the case's JSON pointer in a file that is one JSON array (`/3`), which begins the pointers
    its errors and warnings name, and the id it is given when it has none."""
    if isinstance(data, Case):
        return data
    if not isinstance(data, dict):
        raise CaseError(
            f"a case must be a JSON object, got {json_kind(data)}",
            source=source, line=line, pointer=at,
        )  # fmt: skip
    case_id = data.get("id", data.get("name"))
    if case_id is None:
        case_id = fallback_id(source, line, at)
        data = {**data, "id": case_id}
    unknown = unknown_fields(data)
    named = [_within(field, at) for field in unknown]  # (from the file, in a JSON array)
    if named and strict:
        first = named[0]
        raise CaseError(
            f"{first} (--strict refuses fields the case format does not know)",
            source=source, line=line, case_id=str(case_id), pointer=first.pointer,
        )  # fmt: skip
    try:
        case = Case.model_validate(without_unknown(data, unknown) if unknown else data)
    except ValidationError as exc:
        error = _from_validation(exc, source=source, line=line, case_id=str(case_id), at=at)
        raise error from None
    for field in named:
        (warn or warn_python)(unknown_message(field, source, line, str(case_id)))
    return case


def _within(field: UnknownField, at: str) -> UnknownField:
    """An unknown field of a case named from the file it is in (at `at` there)."""
    if not at:
        return field
    return UnknownField(at + field.pointer, None if field.nearest is None else at + field.nearest)


def unknown_message(field: UnknownField, source: str, line: int | None, case_id: str) -> str:
    """`cases.jsonl:3 case 'typo2': unknown field /mesages (did you mean /messages?)`"""
    where = source if line is None else f"{source}:{line}"
    return f"{where} case {case_id!r}: {field}"


def fallback_id(source: str, line: int | None, at: str = "") -> str:
    """The id of a case that has none: `<file name>:<line>` (of one in a file that is one
    JSON array, `<file name>/<index>`: several may start on one line)."""
    if at:
        return f"{Path(source).name}{at}"
    return f"{Path(source).name}:{line}" if line is not None else source


def _iter_file(path: str | PathLike[str], reading: _Reading) -> Iterator[Case | CaseError]:
    for _, item in iter_lines(path, strict=reading.strict, warn=reading.warn):
        yield item


def _iter_parquet(path: str | PathLike[str], reading: _Reading) -> Iterator[Case | CaseError]:
    for _, item in iter_numbered(path, strict=reading.strict, warn=reading.warn):
        yield item


def iter_lines(
    path: str | PathLike[str], *, strict: bool = False, warn: Warn | None = None
) -> Iterator[tuple[bytes, Case | CaseError]]:
    """Each non-blank line of a JSONL file (`-`: standard input) with its case, or the
    `CaseError` that stands in its place; the raw line lets a caller copy it verbatim."""
    for _, raw, item in _iter_path(path, _Reading(strict, warn or warn_python)):
        yield raw, item


def iter_numbered(
    path: str | PathLike[str], *, strict: bool = False, warn: Warn | None = None
) -> Iterator[tuple[int, Case | CaseError]]:
    """Each case of a JSONL or Parquet file (`-`: standard input) with its line (or row)
    number, or the `CaseError` that stands in its place."""
    reading = _Reading(strict, warn or warn_python)
    if is_parquet(path):
        name = str(path)
        if not Path(name).is_file():
            raise InputError(f"{name}: no such file")
        with as_json_lines(name) as stream:
            for number, _, item in _iter_lines(stream, name, reading):
                yield number, item
        return
    for number, _, item in _iter_path(path, reading):
        yield number, item


def _iter_path(
    path: str | PathLike[str], reading: _Reading
) -> Iterator[tuple[int, bytes, Case | CaseError]]:
    name = str(path)
    with open_case_input(name) as opened:
        yield from _iter_lines(opened, "<stdin>" if name == "-" else name, reading)


def iter_stream(
    stream: BinaryIO, name: str, *, strict: bool = False, warn: Warn | None = None
) -> Iterator[Case | CaseError]:
    """Each case of a JSON Lines byte stream, or the `CaseError` (naming `name` and the line)
    that stands in its place."""
    for _, _, item in _iter_lines(stream, name, _Reading(strict, warn or warn_python)):
        yield item


def _iter_lines(
    opened: CaseInput, name: str, reading: _Reading
) -> Iterator[tuple[int, bytes, Case | CaseError]]:
    if isinstance(opened, CaseDocument):
        lines: Iterable[tuple[int, bytes]] = opened.numbered()  # (each a `CaseText`, as it is)
    else:
        lines = ((n, raw.rstrip(b"\r\n")) for n, raw in enumerate(opened, 1) if raw.strip())
    for number, line in lines:
        item = read_line(line, source=name, line=number, strict=reading.strict,
                         warn=reading.warn)  # fmt: skip
        yield number, line, item


def read_line(
    raw: bytes, *, source: str, line: int, strict: bool = False, warn: Warn | None = None
) -> Case | CaseError:
    """The case of one non-blank JSON line (or one case of a file that is one JSON document,
    a `CaseText`, named by its place there), or the `CaseError` that stands in its place."""
    at = raw.pointer if isinstance(raw, CaseText) else ""
    try:
        data = loads(raw)
    except DecodeError as exc:
        return CaseError(f"not valid JSON: {exc}", source=source, line=line, pointer=at)
    unreadable = unreadable_row(data, source, line)  # a Parquet row, said where and why
    if unreadable is not None:
        return unreadable
    try:
        return parse_case(data, source=source, line=line, strict=strict, warn=warn, at=at)
    except CaseError as exc:
        return exc


def _iter_frame(frame: pd.DataFrame, reading: _Reading) -> Iterator[Case | CaseError]:
    for position, record in enumerate(frame.to_dict("records"), start=1):
        data: dict[str, Any] = {}
        for key, value in record.items():
            if _is_missing(value):
                continue
            if key in _JSON_COLUMNS and isinstance(value, str | bytes):
                try:
                    value = loads(value)
                except DecodeError:
                    if key != "response":  # plain text is a valid response
                        yield CaseError(
                            f"column {key!r} holds text that is not JSON",
                            source="<dataframe>",
                            line=position,
                            pointer=f"/{key}",
                        )
                        break
            data[str(key)] = value
        else:
            try:
                yield parse_case(data, source="<dataframe>", line=position,
                                 strict=reading.strict, warn=reading.warn)  # fmt: skip
            except CaseError as exc:
                yield exc


def _iter_objects(items: Iterable[Any], reading: _Reading) -> Iterator[Case | CaseError]:
    for position, item in enumerate(items, start=1):
        if isinstance(item, CaseError):  # read (and named) already by the caller
            yield item
            continue
        try:
            yield parse_case(item, source="<objects>", line=position, strict=reading.strict,
                             warn=reading.warn)  # fmt: skip
        except CaseError as exc:
            yield exc


def _from_validation(
    exc: ValidationError, *, source: str, line: int | None, case_id: str, at: str = ""
) -> CaseError:
    errors = exc.errors(include_url=False)
    first = errors[0]
    pointer = at + error_pointer(first["loc"])
    message = first["msg"].removeprefix("Value error, ")
    cause = (first.get("ctx") or {}).get("error")
    if isinstance(cause, ShapeError):
        pointer += cause.pointer
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return CaseError(message, source=source, line=line, case_id=case_id, pointer=pointer)


def error_pointer(location: Iterable[str | int]) -> str:
    """The JSON pointer of a pydantic error location (union member names left out)."""
    return json_pointer(part for part in location if not _is_union_tag(part))


def first_error(exc: ValidationError) -> str:
    """`/pointer: message` of a validation error's first problem."""
    error = exc.errors(include_url=False)[0]
    return f"{error_pointer(error['loc']) or '/'}: {error['msg']}"


def _is_union_tag(part: str | int) -> bool:
    return isinstance(part, str) and (
        part in _TYPE_NAMES or ("[" in part and _UNION_TAG.match(part) is not None)
    )


def _is_dataframe(value: Any) -> bool:
    module = type(value).__module__
    return module.startswith("pandas") and type(value).__name__ == "DataFrame"


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
