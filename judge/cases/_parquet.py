"""Parquet as a case and result format, beside JSON Lines. A Parquet file is read as the JSON
Lines it stands for (one row, one line: errors name the row as the line), and JSON Lines are
written as Parquet with one column per top-level field: a column whose values are all text,
all booleans, all integers or all floats keeps that type; any other (objects, lists, mixed
shapes) holds JSON text, and the file's metadata says which, so reading it back gives the
same JSON. Parquet files from elsewhere are read with their own types (nested columns as
objects and lists; the case fields that hold objects may also be JSON text).

Nothing is converted in silence: a value JSON has no form for (bytes, NaN, a timestamp) or
JSON text that does not parse makes its row an error naming the column and the pointer (the
other rows are read), and a file Arrow cannot read to the end is refused whole, before any
case of it is graded."""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, cast

from judge._errors import CaseError, InputError
from judge.cases._json import DecodeError, dumps, loads, pointer

if TYPE_CHECKING:
    import pyarrow.parquet as pq

JSON_COLUMNS_KEY = b"judge.json_columns"
CASE_JSON_COLUMNS = frozenset(
    ("messages", "tools", "response", "expected_calls", "labels", "match", "meta", "assert_tools")
)
"""Case fields that hold objects or lists: JSON text in such a column is decoded."""
_ROWS = 4096  # rows per batch read or written
UNREADABLE_ROW = "\u0000judge.unreadable_row"
"""The one key of the line `as_json_lines` writes for a row that cannot be read, which
`unreadable_row` reads back (it begins with a NUL: no case's key is taken for it)."""
_NO_JSON = {
    bytes: "bytes, not text",
    float: "a number JSON cannot hold",
    tuple: "a map entry",
}


class RowError(InputError, ValueError):
    """A row that cannot be read as JSON: `why`, at `pointer` (its column, and within it)."""

    def __init__(self, why: str, at: str, where: str = "") -> None:
        super().__init__(f"{where} at {at}: {why}" if where else f"{at}: {why}")
        self.why, self.pointer = why, at


def is_parquet(path: str | PathLike[str]) -> bool:
    return str(path).lower().endswith(".parquet")


def iter_rows(path: str | PathLike[str]) -> Iterator[dict[str, Any]]:
    """Each row of a Parquet file as the JSON object it stands for (nulls left out, as a case
    reads them); an unreadable file raises `InputError` at once, a row that cannot be
    decoded (`RowError`) or read when it is reached."""
    encoded, types, raw = _raw_rows(path)

    def rows() -> Iterator[dict[str, Any]]:
        for number, row in enumerate(raw, start=1):
            try:
                yield decoded_row(row, encoded, types)
            except RowError as exc:  # said with the file and the row
                raise RowError(exc.why, exc.pointer, f"{path}:{number}") from None

    return rows()


def _raw_rows(
    path: str | PathLike[str],
) -> tuple[set[str] | None, dict[str, str], Iterator[dict[str, Any]]]:
    """The columns of JSON text, each column's Arrow type, and each row as Arrow gives it;
    `InputError` at once for a file that cannot be opened, and when the rows are reached for
    one whose data cannot be read (a corrupt page, fewer rows than its footer says)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # each page's checksum, where it has one, checked: flipped bits refused, not read
        handle = pq.ParquetFile(str(path), page_checksum_verification=True)
        schema = handle.schema_arrow
        encoded = json_columns(schema.metadata)
    except (OSError, ValueError, pa.ArrowException) as exc:  # (a UnicodeError is a ValueError)
        raise InputError(f"{path}: not a readable Parquet file: {_said(exc)}") from None
    types = {f.name: str(f.type) for f in schema}
    return encoded, types, _read_rows(handle, path)


def _read_rows(handle: pq.ParquetFile, path: str | PathLike[str]) -> Iterator[dict[str, Any]]:
    import pyarrow as pa

    read = 0
    batches = handle.iter_batches(batch_size=_ROWS)
    while True:
        try:
            batch = next(batches, None)
            rows = [] if batch is None else batch.to_pylist()
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise InputError(
                f"{path}: not a readable Parquet file: the rows from {read + 1} on cannot be "
                f"read: {_said(exc)}"
            ) from None
        if batch is None:
            break
        read += len(rows)
        yield from rows
    expected = handle.metadata.num_rows
    if read != expected:  # what Arrow could not find is lost: said, never dropped
        raise InputError(
            f"{path}: not a readable Parquet file: its footer says {expected} rows, "
            f"{read} could be read"
        )


def _said(exc: BaseException) -> str:
    """Arrow's message on one line."""
    return "; ".join(part.strip() for part in str(exc).splitlines() if part.strip()) or repr(exc)


def json_columns(metadata: dict[bytes, bytes] | None) -> set[str] | None:
    """The columns this package wrote as JSON text, from a Parquet schema's metadata (None:
    a file from elsewhere)."""
    marked = (metadata or {}).get(JSON_COLUMNS_KEY)
    return set(marked.decode().split(",")) if marked else None


def decoded_row(
    row: dict[str, Any], encoded: set[str] | None, types: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A Parquet (or Arrow) row as the JSON object it stands for. `encoded`: the columns of
    JSON text (None, from elsewhere: JSON text in a case's object fields is decoded, and the
    nulls Arrow fills nested objects with, to give every row the union of all rows' fields,
    are left out). Top-level nulls are left out too. `RowError` for JSON text that does not
    parse, or a value JSON has no form for (`types`: each column's Arrow type, to say so)."""
    found: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        text = key in encoded if encoded is not None else key in CASE_JSON_COLUMNS
        if isinstance(value, str) and text:
            try:
                value = loads(value)
            except DecodeError as exc:
                if encoded is not None or key != "response":  # plain text is a response
                    why = f"column {key!r} holds text that is not JSON ({exc})"
                    raise RowError(why, pointer([key])) from None
        else:
            try:
                value = _plain(value, nulls=encoded is not None)
            except _NoJson as odd:
                raise RowError(_no_json(key, odd.value, types), pointer([key, *odd.at])) from None
        found[key] = value
    return found


class _NoJson(Exception):
    """A value JSON has no form for, and where it is (built as the search unwinds: the path
    costs nothing until a value is refused)."""

    def __init__(self, value: Any) -> None:
        super().__init__()
        self.value = value
        self.at: list[Any] = []


def _plain(value: Any, *, nulls: bool) -> Any:
    """The value as JSON holds it (with `nulls`, nested nulls kept), or `_NoJson`."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if nulls or v is not None:
                try:
                    out[k] = _plain(v, nulls=nulls)
                except _NoJson as odd:
                    odd.at.insert(0, k)
                    raise
        return out
    if isinstance(value, list):
        items = []
        for i, v in enumerate(value):
            try:
                items.append(_plain(v, nulls=nulls))
            except _NoJson as odd:
                odd.at.insert(0, i)
                raise
        return items
    if (
        value is None
        or isinstance(value, str | int)
        or (isinstance(value, float) and math.isfinite(value))
    ):
        return value
    raise _NoJson(value)


def _no_json(column: str, value: Any, types: Mapping[str, str] | None) -> str:
    """Why a column's value is refused, with the column's Arrow type where known."""
    held = _NO_JSON.get(type(value), f"a {type(value).__name__}")
    if isinstance(value, float):
        held += f" ({value})"
    kind = f" ({types[column]})" if types and column in types else ""
    return (
        f"column {column!r}{kind} holds {held}, which JSON has no form for: cast the column "
        "to text (a string column, or JSON text) first"
    )


def unreadable_row(data: Any, source: str, line: int) -> CaseError | None:
    """The error a line `as_json_lines` wrote for a row it could not read stands for (None:
    any other line)."""
    if not (isinstance(data, dict) and len(data) == 1 and UNREADABLE_ROW in data):
        return None
    said = data[UNREADABLE_ROW]
    said = said if isinstance(said, dict) else {}
    case_id = said.get("id")
    return CaseError(
        str(said.get("why", "this row cannot be read")),
        source=source,
        line=line,
        case_id=case_id if isinstance(case_id, str) else None,
        pointer=str(said.get("pointer", "")),
    )


def as_json_lines(path: str | PathLike[str]) -> BinaryIO:
    """The JSON Lines a Parquet file of cases stands for, one line per row, in a temporary
    file (read from the start): what `judge check` and `judge grade` read. A row that cannot
    be decoded becomes a line that `read_line` reports as `InvalidCase` on its own line
    number, with the reason and the pointer; a file that cannot be read to the end raises
    `InputError` here, before any of its cases is read."""
    import tempfile

    encoded, types, rows = _raw_rows(path)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (the caller closes it)
    try:
        for row in rows:  # a row that cannot be decoded stands alone: the rows after it are read
            try:
                line = dumps(decoded_row(row, encoded, types))
            except RowError as exc:
                case_id = row.get("id", row.get("name"))
                said = {"why": exc.why, "pointer": exc.pointer}
                line = dumps({UNREADABLE_ROW: {**said, "id": case_id} if isinstance(case_id, str)
                              else said})  # fmt: skip
            spool.write(line + b"\n")
    except BaseException:  # a file that cannot be read to the end: refused before any case
        spool.close()
        raise
    spool.seek(0)
    return cast(BinaryIO, spool)


def write_parquet(lines: Callable[[], Iterable[bytes]], dest: str | Path) -> int:
    """Write the JSON objects of `lines` (called twice: once to learn the columns, once to
    write) as a Parquet file; returns the rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    kinds: dict[str, set[type]] = {}
    big: set[str] = set()  # integers past 64 bits: kept exact as JSON text
    for line in lines():
        if line.strip():
            for key, value in loads(line).items():
                kinds.setdefault(key, set()).add(type(value))
                if isinstance(value, int) and not -(2**63) <= value < 2**63:
                    big.add(key)
    native = {bool: pa.bool_(), str: pa.string(), int: pa.int64(), float: pa.float64()}
    fields, encoded = [], []
    for key, seen in kinds.items():
        types = seen - {type(None)}
        kind = next(iter(types)) if len(types) == 1 else None
        if kind in native and key not in big:
            fields.append(pa.field(key, native[kind]))
        else:
            fields.append(pa.field(key, pa.string()))
            encoded.append(key)
    schema = pa.schema(fields, metadata={JSON_COLUMNS_KEY: ",".join(encoded).encode()})
    written = 0
    with pq.ParquetWriter(str(dest), schema, write_page_checksum=True) as writer:
        batch: list[dict[str, Any]] = []
        for line in lines():
            if not line.strip():
                continue
            row = loads(line)
            batch.append(
                {k: (dumps(row[k]).decode() if k in encoded and k in row and row[k] is not None
                     else row.get(k)) for k in kinds}
            )  # fmt: skip
            if len(batch) >= _ROWS:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                written += len(batch)
                batch = []
        if batch:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            written += len(batch)
    return written


@contextmanager
def output_sink(output: str | None) -> Iterator[IO[bytes]]:
    """Where JSON Lines go: standard output (None or `-`), the file `output`, or for a
    `.parquet` one a spool written out as Parquet when the block ends without an error."""
    import sys
    import tempfile

    if output in (None, "-"):
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    assert output is not None
    if not is_parquet(output):
        with _OpenedOnWrite(output) as handle:
            yield cast(IO[bytes], handle)
        return
    with tempfile.TemporaryFile() as spool:
        yield spool
        spool.flush()

        def lines() -> IO[bytes]:
            spool.seek(0)
            return spool

        write_parquet(lines, output)


def jsonl_to_parquet(source: str | Path, dest: str | Path) -> int:
    """A JSON Lines file written again as Parquet."""

    def lines() -> Iterator[bytes]:
        with Path(source).open("rb") as handle:
            yield from handle

    return write_parquet(lines, dest)


def parquet_to_jsonl(source: str | Path, dest: str | Path) -> None:
    """A Parquet file's rows written as JSON Lines (what a resumed run appends to); `dest`
    removed when `source` cannot be read to the end (a part would be taken for all of it)."""
    try:
        with Path(dest).open("wb") as handle:
            for row in iter_rows(source):
                handle.write(dumps(row) + b"\n")
    except InputError:
        Path(dest).unlink()
        raise


class _OpenedOnWrite(io.RawIOBase):
    """A file created (or emptied) at its first write, and when closed unwritten after no
    error: a run refused before its first result (an unreadable input) leaves no file, and
    keeps the one it would have written over."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.handle: IO[bytes] | None = None

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        if self.handle is None:
            self.handle = open(self.path, "wb")  # noqa: SIM115 (closed by close)
        return self.handle.write(data)

    def flush(self) -> None:
        if self.handle is not None:
            self.handle.flush()

    def __exit__(self, kind: Any, *rest: Any) -> None:
        if kind is None and self.handle is None:
            self.write(b"")
        self.close()

    def close(self) -> None:
        super().close()  # (which flushes first)
        if self.handle is not None:
            self.handle.close()
