"""Parquet beside JSON Lines: cases read from Parquet (ours and others'), results written as
Parquet by `judge check`, `judge grade` and `judge import`, and the round trips exact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from judge import load_cases
from judge.cases._parquet import iter_rows, jsonl_to_parquet
from tests.chat_server import ChatServer
from tests.helpers import WEATHER, call, case, tool
from tests.review_helpers import clean_env

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cases.jsonl"
DATASETS = sorted((REPO.parent / "shared" / "datasets").glob("*.jsonl"))


def judge(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judge", *args], capture_output=True, text=True, env=clean_env(),
        timeout=300,
    )  # fmt: skip


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


@pytest.mark.parametrize("source", [EXAMPLES, *DATASETS[:3]], ids=lambda p: p.name)
def test_cases_round_trip_through_parquet(source: Path, tmp_path: Path) -> None:
    target = tmp_path / "cases.parquet"
    assert jsonl_to_parquet(source, target) == len(lines(source))
    assert list(load_cases(target)) == list(load_cases(str(source)))
    # nested fields are JSON text, and the file says which
    metadata = pq.read_schema(target).metadata[b"judge.json_columns"].decode().split(",")
    assert {"messages", "tools", "response"} <= set(metadata)


def test_integers_past_64_bits_stay_exact(tmp_path: Path) -> None:
    big = 123456789012345678901234567891
    source = tmp_path / "big.jsonl"
    arguments = f'{{"city": "Paris", "days": {big}}}'  # as text: orjson stops at 64 bits
    row = case([call("get_weather", arguments)]) | {
        "id": "big",
        "meta": {"n": big},
    }
    source.write_text(json.dumps(row) + "\n")
    target = tmp_path / "big.parquet"
    jsonl_to_parquet(source, target)
    loaded = load_cases(target)[0]
    assert loaded.meta["n"] == big
    assert json.loads(loaded.tool_calls[0].arguments)["days"] == big


def test_judge_check_reads_and_writes_parquet_with_the_same_results(tmp_path: Path) -> None:
    cases = tmp_path / "cases.parquet"
    jsonl_to_parquet(EXAMPLES, cases)
    plain = judge("check", str(EXAMPLES), "-o", str(tmp_path / "a.jsonl"))
    from_parquet = judge("check", str(cases), "-o", str(tmp_path / "b.jsonl"), "--jobs", "2")
    assert plain.returncode == from_parquet.returncode, from_parquet.stderr
    expected = lines(tmp_path / "a.jsonl")
    assert lines(tmp_path / "b.jsonl") == expected
    written = judge("check", str(cases), "-o", str(tmp_path / "c.parquet"))
    assert written.returncode == plain.returncode, written.stderr
    rows = list(iter_rows(tmp_path / "c.parquet"))
    assert rows == [{k: v for k, v in r.items() if v is not None} for r in expected]
    schema = pq.read_schema(tmp_path / "c.parquet")
    assert schema.field("passed").type == pa.bool_() and schema.field("id").type == pa.string()


def test_judge_grade_writes_parquet_as_it_writes_json_lines(
    server: ChatServer, tmp_path: Path
) -> None:
    options = ["--base-url", server.url, "--model", "m", "--no-cache"]  # both runs ask
    judge("grade", str(EXAMPLES), "-o", str(tmp_path / "a.jsonl"), *options)
    graded = judge("grade", str(EXAMPLES), "-o", str(tmp_path / "a.parquet"), *options)
    assert graded.returncode in (0, 1), graded.stderr
    assert not (tmp_path / "a.parquet.jsonl").exists()  # the spool it resumes from, gone
    expected = {
        r["id"]: {k: v for k, v in r.items() if v is not None} for r in lines(tmp_path / "a.jsonl")
    }
    assert {r["id"]: r for r in iter_rows(tmp_path / "a.parquet")} == expected  # any order


def test_judge_calibrate_reads_a_parquet_sample(server: ChatServer, tmp_path: Path) -> None:
    sample = tmp_path / "sample.parquet"
    jsonl_to_parquet(REPO / "calibration" / "sample.jsonl", sample)
    options = ["--base-url", server.url, "--model", "m", "--cache-dir", str(tmp_path / "cache")]
    run = judge("calibrate", str(sample), "-o", str(tmp_path / "cal.json"), *options)
    assert run.returncode in (0, 1), run.stderr
    record = json.loads((tmp_path / "cal.json").read_text())
    assert record["cases"] == 223 and record["dimensions"]["selection"]["n"] == 223


def test_parquet_from_elsewhere_nested_columns_and_a_bad_row(tmp_path: Path) -> None:
    good = case([call("get_weather", {"city": "Paris"})]) | {"id": "good"}
    table = pa.Table.from_pylist(
        [
            {"id": "good", "messages": good["messages"], "tools": json.dumps(good["tools"]),
             "response": json.dumps(good["response"])},
            {"id": "bad", "messages": [{"role": "user", "content": "hi"}],
             "tools": json.dumps([tool("get_weather", WEATHER)]), "response": "{not json"},
        ]
    )  # fmt: skip
    path = tmp_path / "theirs.parquet"
    pq.write_table(table, path)
    loaded = load_cases(path)
    assert [c.id for c in loaded] == ["good", "bad"]  # plain text is a valid response
    assert loaded[0].tool_calls[0].name == "get_weather"
    pq.write_table(pa.Table.from_pylist([{"id": "x", "messages": "[1, "}]), path)
    loaded = load_cases(path)
    assert not list(loaded) and "theirs.parquet:1" in str(loaded.errors[0])
    # A bad row stands alone: the rows after it are read, and `judge check` grades them.
    rows = [{"id": "x", "messages": "[1, "}, {"id": "good", "messages": json.dumps(
        good["messages"]), "tools": json.dumps(good["tools"]), "response": json.dumps(
        good["response"])}, {"id": "again", "messages": "[]"}]  # fmt: skip
    pq.write_table(pa.Table.from_pylist(rows), path)
    loaded = load_cases(path)
    assert [c.id for c in loaded] == ["good", "again"]
    assert len(loaded.errors) == 1 and "theirs.parquet:1" in str(loaded.errors[0])
    out = tmp_path / "checked.jsonl"
    subprocess.run([sys.executable, "-m", "judge", "check", str(path), "-o", str(out)],
                   capture_output=True, check=True)  # fmt: skip
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()][1:] == [
        "good",
        "again",
    ]


def test_judge_import_writes_parquet(tmp_path: Path) -> None:
    traces = REPO / "examples" / "traces" / "weather.otlp.json"
    judge("import", "otel", str(traces), "-o", str(tmp_path / "a.jsonl"))
    made = judge("import", "otel", str(traces), "-o", str(tmp_path / "a.parquet"))
    assert made.returncode == 0, made.stderr
    assert list(load_cases(tmp_path / "a.parquet")) == list(load_cases(str(tmp_path / "a.jsonl")))


def test_nested_nulls_arrow_fills_in_are_left_out_of_others_parquet(tmp_path: Path) -> None:
    first = case([call("get_weather", {"city": "Paris"})]) | {"id": "a"}
    zone = {"type": "object", "properties": {"tz": {"type": "string"}}}
    second = case([call("get_time", {"tz": "CET"})], tools=[tool("get_time", zone)]) | {"id": "b"}
    path = tmp_path / "theirs.parquet"
    pq.write_table(pa.Table.from_pylist([first, second]), path)  # nested structs, unioned
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    assert list(load_cases(path)) == list(load_cases(str(plain)))


def test_judge_grade_appends_to_a_parquet_output_as_to_json_lines(
    server: ChatServer, tmp_path: Path
) -> None:
    rows = lines(EXAMPLES)
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:4]))
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[4:]))
    options = ["--base-url", server.url, "--model", "m", "--cache-dir", str(tmp_path / "cache")]
    out = str(tmp_path / "all.parquet")
    judge("grade", str(tmp_path / "a.jsonl"), "-o", out, *options)
    judge("grade", str(tmp_path / "b.jsonl"), "-o", out, *options)
    expected = sorted(str(r.get("id", r.get("name"))) for r in rows)
    assert sorted(r["id"] for r in iter_rows(out)) == expected
