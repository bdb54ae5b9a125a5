"""Parquet as a case and result format, beside JSON Lines. A Parquet file is read as the JSON
Lines it stands for (one row, one line: errors name the row as the line), and JSON Lines are
written as Parquet with one column per top-level field: a column whose values are all text,
all booleans, all integers or all floats keeps that type; any other (objects, lists, mixed
shapes) holds JSON text, and the file's metadata says which, so reading it back gives the
same JSON. Parquet files from elsewhere are read with their own types (nested columns as
objects and lists; the case fields that hold objects may also be JSON text)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from os import PathLike
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from judge._errors import InputError
from judge.cases._json import DecodeError, dumps, loads

JSON_COLUMNS_KEY = b"judge.json_columns"
CASE_JSON_COLUMNS = frozenset(
    ("messages", "tools", "response", "expected_calls", "labels", "match", "meta", "assert_tools")
)
"""Case fields that hold objects or lists: JSON text in such a column is decoded."""
_ROWS = 4096  # rows per batch read or written


def is_parquet(path: str | PathLike[str]) -> bool:
    return str(path).lower().endswith(".parquet")


def iter_rows(path: str | PathLike[str]) -> Iterator[dict[str, Any]]:
    """Each row of a Parquet file as the JSON object it stands for (nulls left out, as a case
    reads them); an unreadable file raises `InputError` at once, a row that
    cannot be decoded when it is reached."""
    encoded, raw = _raw_rows(path)
    return (decoded_row(row, encoded) for row in raw)


def _raw_rows(path: str | PathLike[str]) -> tuple[set[str] | None, Iterator[dict[str, Any]]]:
    """The columns of JSON text, and each row as Arrow gives it; `InputError` at once for a
    file that cannot be read."""
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(str(path))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable Parquet file: {exc}") from None
    rows = (row for batch in handle.iter_batches(batch_size=_ROWS) for row in batch.to_pylist())
    return json_columns(handle.schema_arrow.metadata), rows


def json_columns(metadata: dict[bytes, bytes] | None) -> set[str] | None:
    """The columns this package wrote as JSON text, from a Parquet schema's metadata (None:
    a file from elsewhere)."""
    marked = (metadata or {}).get(JSON_COLUMNS_KEY)
    return set(marked.decode().split(",")) if marked else None


def decoded_row(row: dict[str, Any], encoded: set[str] | None) -> dict[str, Any]:
    """A Parquet (or Arrow) row as the JSON object it stands for. `encoded`: the columns of
    JSON text (None, from elsewhere: JSON text in a case's object fields is decoded, and the
    nulls Arrow fills nested objects with, to give every row the union of all rows' fields,
    are left out). Top-level nulls are left out too."""
    found: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        text = key in encoded if encoded is not None else key in CASE_JSON_COLUMNS
        if isinstance(value, str) and text:
            try:
                value = loads(value)
            except DecodeError:
                if encoded is not None or key != "response":  # plain text is a response
                    raise InputError(f"column {key!r} holds text that is not JSON") from None
        elif encoded is None:
            value = _without_nulls(value)
        found[key] = value
    return found


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def as_json_lines(path: str | PathLike[str]) -> BinaryIO:
    """The JSON Lines a Parquet file of cases stands for, one line per row, in a temporary
    file (read from the start): what `judge check` and `judge grade` read. A row that cannot
    be decoded becomes a line that is not a case object, so it is reported as `InvalidCase`
    on its own line number."""
    import tempfile

    encoded, rows = _raw_rows(path)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (the caller closes it)
    for row in rows:  # a row that cannot be decoded stands alone: the rows after it are read
        try:
            line = dumps(decoded_row(row, encoded))
        except InputError as exc:
            line = dumps(f"unreadable row: {exc}")
        spool.write(line + b"\n")
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
    with pq.ParquetWriter(str(dest), schema) as writer:
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
        with open(output, "wb") as handle:
            yield handle
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
