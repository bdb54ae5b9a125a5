"""Parquet inputs, nothing lost and nothing changed in silence: a file Arrow cannot read to
the end is an input error naming it (exit 2) that leaves no output behind (and an earlier
one as it was); a value JSON has no form for (bytes, NaN, a timestamp) or JSON text that
does not parse makes its row an `InvalidCase` naming file, row, case, column and pointer,
the other rows read; and a seeded fuzz of the reader."""

from __future__ import annotations

import datetime
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from judge import load_cases
from judge._errors import CaseError, InputError
from judge.cases._case import Case
from judge.cases._loading import iter_stream
from judge.cases._parquet import as_json_lines, jsonl_to_parquet
from tests.chat_server import ChatServer
from tests.fuzz import Budget, flip, retyped, truncate
from tests.helpers import WEATHER, call, case, tool
from tests.review_helpers import clean_env

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "cases.jsonl"


def judge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judge", *args], capture_output=True, text=True, env=clean_env(),
        timeout=300,
    )  # fmt: skip


def _ours(path: Path) -> Path:
    jsonl_to_parquet(EXAMPLES, path)
    return path


def _first_chunk(path: Path) -> tuple[int, int]:
    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    return column.data_page_offset, column.data_page_offset + column.total_compressed_size


def page_flipped(path: Path) -> None:
    """One bit of a data page's values flipped (its checksum no longer matches)."""
    data = bytearray(_ours(path).read_bytes())
    data[_first_chunk(path)[1] - 3] ^= 0x01
    path.write_bytes(bytes(data))


def headers_garbled(path: Path) -> None:
    """The first column's pages overwritten (their headers cannot be read)."""
    data = bytearray(_ours(path).read_bytes())
    start, end = _first_chunk(path)
    for at in range(start, end):
        data[at] ^= 0xA5
    path.write_bytes(bytes(data))


def cut_short(path: Path) -> None:
    data = _ours(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])


def not_parquet(path: Path) -> None:
    path.write_bytes(bytes(random.Random(2).randrange(256) for _ in range(3000)))


CORRUPT = [
    pytest.param(page_flipped, "CRC checksum verification failed", id="a-page-bit-flipped"),
    pytest.param(headers_garbled, "the rows from 1 on cannot be read", id="page-headers-garbled"),
    pytest.param(cut_short, "not a readable Parquet file", id="cut-short"),
    pytest.param(not_parquet, "not a readable Parquet file", id="not-parquet"),
]


@pytest.mark.parametrize("output", ["out.jsonl", "out.parquet"])
@pytest.mark.parametrize(("corrupt", "says"), CORRUPT)
def test_judge_check_refuses_a_corrupt_parquet_input_and_writes_nothing(
    tmp_path: Path, corrupt: Callable[[Path], None], says: str, output: str
) -> None:
    source = tmp_path / "cases.parquet"
    corrupt(source)
    checked = judge("check", str(source), "-o", str(tmp_path / output))
    assert checked.returncode == 2, checked.stderr
    assert checked.stderr.startswith(f"judge check: {source}: not a readable Parquet file")
    assert says in checked.stderr and "cannot write" not in checked.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cases.parquet"]


@pytest.mark.parametrize("output", ["out.jsonl", "out.parquet"])
@pytest.mark.parametrize(("corrupt", "says"), CORRUPT[:2])
def test_judge_grade_refuses_a_corrupt_parquet_input_and_writes_nothing(
    server: ChatServer, tmp_path: Path, corrupt: Callable[[Path], None], says: str, output: str
) -> None:
    source = tmp_path / "cases.parquet"
    corrupt(source)
    graded = judge("grade", str(source), "-o", str(tmp_path / output), "--base-url",
                   server.url, "--model", "m", "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    assert graded.returncode == 2, graded.stderr
    assert graded.stderr.startswith(f"judge grade: {source}: not a readable Parquet file")
    assert says in graded.stderr and "Traceback" not in graded.stderr
    assert not (tmp_path / output).exists() and not (tmp_path / f"{output}.jsonl").exists()
    assert server.chat_requests == []


def test_an_earlier_output_is_kept_byte_for_byte_when_the_input_is_refused(
    tmp_path: Path,
) -> None:
    source = tmp_path / "cases.parquet"
    headers_garbled(source)
    earlier = tmp_path / "out.jsonl"
    earlier.write_bytes(b'{"id": "from-before"}\n')
    checked = judge("check", str(source), "-o", str(earlier))
    assert checked.returncode == 2, checked.stderr
    assert earlier.read_bytes() == b'{"id": "from-before"}\n'


def _table(column: str, bad: Any, good: Any = None, kind: pa.DataType | None = None) -> pa.Table:
    """Three cases (a, b, c) with `column` holding `bad` in b and `good` in the others, as
    Arrow type `kind` (its own guess without one)."""
    made = case([call("get_weather", {"city": "Paris"})], tools=[tool("get_weather", WEATHER)])
    base = {"messages": json.dumps(made["messages"]), "tools": json.dumps(made["tools"])}
    rows = [{"id": i, **base} for i in "abc"]
    values = [good, bad, good]
    table = pa.Table.from_pylist(rows)
    return table.append_column(column, pa.array(values, type=kind))


ROWS = [
    pytest.param(_table("response", b'{"content": "hi"}', kind=pa.binary()), "/response",
                 "column 'response' (binary) holds bytes, not text", id="binary-response"),
    pytest.param(_table("response", b"hi", kind=pa.large_binary()), "/response",
                 "column 'response' (large_binary) holds bytes, not text",
                 id="large-binary-response"),
    pytest.param(_table("response", {"content": b"hi"}, None,
                        pa.struct([("content", pa.binary())])),
                 "/response/content", "holds bytes, not text", id="binary-inside-a-struct"),
    pytest.param(_table("meta", {"score": float("nan")}, {"score": 1.0}), "/meta/score",
                 "holds a number JSON cannot hold (nan)", id="nan-in-a-struct"),
    pytest.param(_table("meta", {"at": datetime.datetime(2024, 5, 1)}, {"at": None}),
                 "/meta/at", "holds a datetime", id="timestamp-in-a-struct"),
    pytest.param(_table("meta", [("k", 1)], None, pa.map_(pa.string(), pa.int64())),
                 "/meta/0", "holds a map entry", id="a-map-column"),
    pytest.param(_table("expected_calls", "[1, ", "[]"), "/expected_calls",
                 "column 'expected_calls' holds text that is not JSON (", id="text-not-json"),
]  # fmt: skip


@pytest.mark.parametrize(("table", "pointer", "says"), ROWS)
def test_a_row_json_cannot_hold_is_an_invalid_case_and_the_rest_read(
    tmp_path: Path, table: pa.Table, pointer: str, says: str
) -> None:
    path = tmp_path / "theirs.parquet"
    pq.write_table(table, path)
    loaded = load_cases(path)
    assert [c.id for c in loaded] == ["a", "c"]
    [error] = loaded.errors
    assert (error.line, error.case_id, error.pointer) == (2, "b", pointer)
    assert str(error).startswith(f"{path}:2 (case 'b') at {pointer}: ") and says in str(error)


def test_judge_check_says_a_binary_response_row_and_grades_the_others(tmp_path: Path) -> None:
    path = tmp_path / "theirs.parquet"
    pq.write_table(ROWS[0].values[0], path)
    out = tmp_path / "out.jsonl"
    checked = judge("check", str(path), "-o", str(out))
    assert checked.returncode in (0, 1), checked.stderr
    assert (f"judge check: skipped {path}:2 (case 'b') at /response: column 'response' "
            "(binary) holds bytes, not text") in checked.stderr  # fmt: skip
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in results] == ["a", "b", "c"]
    failure = results[1]["failures"][0]
    assert failure["kind"] == "InvalidCase" and failure["path"] == "/response"
    assert not any(r["failures"] for r in (results[0], results[2]))


def _theirs(rows: list[dict[str, Any]], path: Path) -> bool:
    """The rows written as another tool writes Parquet (False: Arrow cannot hold them)."""
    try:
        pq.write_table(pa.Table.from_pylist(rows), path)
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return False
    return True


@pytest.mark.parametrize("seed", [pytest.param(35, id="seed-35")])
def test_fuzzed_parquet_inputs_are_read_or_refused_never_raised(tmp_path: Path, seed: int) -> None:
    """Bytes flipped or cut, and values retyped at random pointers: the file is refused
    with an `InputError` naming it, or each of its rows is a case or an `InvalidCase`."""
    rng = random.Random(seed)
    ours = _ours(tmp_path / "ours.parquet").read_bytes()
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines()]
    path = tmp_path / "fuzz.parquet"
    with Budget(seconds=4.0, peak_bytes=16 * 1024 * 1024).running() as budget:
        while budget.more():
            if rng.random() < 0.6:
                path.write_bytes((flip if rng.random() < 0.8 else truncate)(ours, rng))
            elif not _theirs([rows[0], retyped(rng.choice(rows), rng)[0]], path):
                continue
            try:
                with as_json_lines(path) as stream:
                    items = list(iter_stream(stream, str(path), warn=lambda message: None))
            except InputError as exc:
                assert str(exc).startswith(f"{path}: "), exc
                continue
            assert len(items) == pq.ParquetFile(path).metadata.num_rows
            assert all(isinstance(i, Case | CaseError) for i in items)
