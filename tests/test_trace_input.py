"""Trace files under bad input (`judge import`, `judge check --from`, `judge serve --from`):
bytes that are not UTF-8 are an error naming their byte offset unless `--encoding-errors
replace`; JSON nested 100,000 deep is a per-record error, not a traceback (nor a 500); a
LangSmith run whose tools are not a list is an error, not `tools: []`; an empty file is exit 2;
an Inspect member that unpacks past a stated bound is refused while it unpacks (zstd without a
declared size, deflate, through the service too); and a seeded fuzz per reader: no traceback,
memory under a bound, every record read or reported."""

from __future__ import annotations

import io
import json
import random
import struct
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from judge.cli import main
from judge.service._app import create_app
from judge.service._body import Limits
from judge.traces import import_traces
from judge.traces._documents import MAX_DEPTH, Problem, Reading, iter_documents
from judge.traces._import import Format
from tests.fuzz import Budget, flip, mutated_lines, retyped, truncate

QUESTION = {"role": "user", "content": "What's the weather in Paris?"}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
REPLY = {"role": "assistant", "content": None, "tool_calls": [CALL]}
DEEP = b"[" * 100_000 + b"]" * 100_000
LOOPBACK = "http://127.0.0.1"  # the service answers only loopback names without a token


def proxy_line(n: int, content: str = "Paris?") -> dict[str, Any]:
    request = {"model": "m", "messages": [{"role": "user", "content": content}], "tools": [TOOL]}
    response = {"id": f"cmpl-{n}", "choices": [{"message": REPLY}]}
    return {"request": request, "response": response}


def langsmith_run(n: int, content: str = "Paris?", **inputs: Any) -> dict[str, Any]:
    return {
        "id": f"run-{n}",
        "run_type": "llm",
        "inputs": {"messages": [{"role": "user", "content": content}], "tools": [TOOL], **inputs},
        "outputs": {"choices": [{"message": REPLY}]},
    }


def otel_span(n: int, content: str = "Paris?") -> dict[str, Any]:
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": content,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Sunny.",
    }
    context = {"trace_id": "0x" + "ab" * 16, "span_id": f"0x{n:016x}"}
    return {"name": "llm", "context": context, "attributes": attributes}


RECORDS: dict[Format, Any] = {"openai": proxy_line, "langsmith": langsmith_run, "otel": otel_span}


def lines(fmt: Format, count: int) -> bytes:
    return b"".join(json.dumps(RECORDS[fmt](n)).encode() + b"\n" for n in range(count))


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


# -- bytes that are not UTF-8 ------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_bytes_that_are_not_utf8_are_an_error_naming_the_offset(
    tmp_path: Path, fmt: Format
) -> None:
    good = json.dumps(RECORDS[fmt](0)).encode() + b"\n"
    marked = json.dumps(RECORDS[fmt](1, content="Sofia@")).encode()
    bad = marked.replace(b"@", b"\xff\xfe")  # two bytes no UTF-8 text holds
    path = tmp_path / "traces.jsonl"
    path.write_bytes(good + bad + b"\n")
    offset = len(good) + marked.index(b"@")
    out = tmp_path / "cases.jsonl"
    done = invoke("import", fmt, str(path), "-o", str(out))
    assert done.exit_code == 0, done.output
    assert f"skipped {path}:2: invalid UTF-8 at byte offset {offset} " in done.stderr
    assert "--encoding-errors replace" in done.stderr
    assert len(out.read_text().splitlines()) == 1  # the good record only, nothing replaced
    replaced = tmp_path / "replaced.jsonl"
    done = invoke("import", fmt, str(path), "-o", str(replaced), "--encoding-errors", "replace")
    assert done.exit_code == 0 and "invalid UTF-8" not in done.stderr, done.output
    cases = [json.loads(line) for line in replaced.read_text().splitlines()]
    assert cases[1]["messages"][0]["content"] == "Sofia\ufffd\ufffd"
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_bytes(bad + b"\n")
    refused = invoke("check", "--from", fmt, str(only_bad))
    assert refused.exit_code == 2, refused.output
    assert f"{only_bad}:1: invalid UTF-8 at byte offset {marked.index(b'@')}" in refused.stderr


def test_a_bom_is_not_counted_in_the_offset(tmp_path: Path) -> None:
    marked = json.dumps(proxy_line(0, content="x@")).encode()
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + marked.replace(b"@", b"\xc3"))  # a cut sequence
    found = import_traces("openai", [path])
    [problem] = found.problems
    assert problem.why.startswith(f"invalid UTF-8 at byte offset {3 + marked.index(b'@')} ")


def test_an_inspect_member_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    log = tmp_path / "log.eval"
    sample = json.dumps(inspect_sample("s", "caf@")).encode().replace(b"@", b"\xe9")
    write_eval(log, {}, {"samples/s_epoch_1.json": zstd_frame(sample)})
    [problem] = import_traces("inspect", [log]).problems
    assert problem.source == f"{log}:samples/s_epoch_1.json"
    assert "invalid UTF-8 at byte offset" in problem.why
    [case] = import_traces("inspect", [log], reading=Reading(errors="replace")).cases
    assert case["messages"][0]["content"] == "caf\ufffd"


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_half_a_surrogate_pair_is_an_error_not_a_crash(tmp_path: Path, fmt: Format) -> None:
    """`"\\ud800"` parses in Python but no UTF-8 output can hold it (a 500 in the service,
    a traceback writing the case): refused as case files refuse it."""
    path = tmp_path / "traces.jsonl"
    record = json.dumps(RECORDS[fmt](1, content="x\ud800"))
    assert "\\ud800" in record
    path.write_bytes(lines(fmt, 1) + record.encode() + b"\n")
    found = import_traces(fmt, [path])
    assert len(found.cases) == 1
    [problem] = found.problems
    assert problem.source == f"{path}:2" and "surrogate" in problem.why
    app = create_app(traces=fmt, token="")
    with TestClient(app, LOOPBACK, raise_server_exceptions=False) as client:
        reply = client.post("/v1/check", content=path.read_bytes())
    assert reply.status_code == 200 and len(reply.json()["results"]) == 1, reply.text


# -- nesting --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(RECORDS))
def test_json_nested_100000_deep_is_a_per_record_error(tmp_path: Path, fmt: Format) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_bytes(DEEP + b"\n" + lines(fmt, 1) + b'{"a": ' * 300 + b"1" + b"}" * 300 + b"\n")
    out = tmp_path / "cases.jsonl"
    done = invoke("import", fmt, str(path), "-o", str(out))
    assert done.exception is None or isinstance(done.exception, SystemExit), done.exception
    assert done.exit_code == 0, done.output
    deep = f"nested more than {MAX_DEPTH} arrays and objects deep"
    assert f"skipped {path}:1: {deep}" in done.stderr
    assert f"skipped {path}:3: {deep}" in done.stderr  # parsed, then refused past the bound
    assert len(out.read_text().splitlines()) == 1
    results = tmp_path / "results.jsonl"
    checked = invoke("check", "--from", fmt, str(path), "-o", str(results))
    assert checked.exit_code == 0 and "Traceback" not in checked.output, checked.output
    assert len(results.read_text().splitlines()) == 1


def test_the_service_answers_a_deep_body_with_422() -> None:
    app = create_app(traces="otel", token="")
    with TestClient(app, LOOPBACK, raise_server_exceptions=False) as client:
        reply = client.post("/v1/check", content=DEEP)
    assert reply.status_code == 422, reply.text
    assert "nested more than" in reply.json()["detail"]


# -- values of the wrong type, empty files ---------------------------------------------------


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        pytest.param({"get_weather": TOOL}, "inputs.tools must be a list of tools, not dict",
                     id="an-object"),
        pytest.param("get_weather", "inputs.tools must be a list of tools, not str", id="text"),
        pytest.param([TOOL, "x"], "inputs.tools[1] must be a tool object, not str",
                     id="an-item-that-is-not-a-tool"),
    ],
)  # fmt: skip
def test_langsmith_tools_that_are_not_a_list_are_an_error(
    tmp_path: Path, tools: Any, said: str
) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(langsmith_run(1, tools=tools)) + "\n")
    found = import_traces("langsmith", [path])
    assert not found.cases
    assert [p.why for p in found.problems] == [f"run run-1: {said}"]


@pytest.mark.parametrize("fmt", ["otel", "langsmith", "openai", "inspect"])
@pytest.mark.parametrize("content", [b"", b"\n \n"], ids=["empty", "blank"])
def test_an_empty_trace_file_is_exit_2(tmp_path: Path, fmt: str, content: bytes) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    done = invoke("import", fmt, str(path))
    assert done.exit_code == 2, done.output
    assert f"nothing could be read from {path}" in done.stderr
    checked = invoke("check", "--from", fmt, str(path))
    assert checked.exit_code == 2, checked.output


def test_an_empty_case_file_is_exit_2_once_the_others_are_written(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    case = {"id": "a", "messages": [QUESTION], "tools": [TOOL], "response": REPLY}
    cases.write_text(json.dumps(case) + "\n")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = tmp_path / "results.jsonl"
    done = invoke("check", str(cases), str(empty), "-o", str(out))
    assert done.exit_code == 2, done.output
    assert f"no case in {empty} (an empty input)" in done.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["a"]
    grade = ["grade", "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    for command in (["check"], grade):
        for alone in (tmp_path / "alone.jsonl", tmp_path / "alone.parquet"):
            refused = invoke(*command, str(empty), "-o", str(alone))
            assert refused.exit_code == 2 and "(an empty input)" in refused.stderr, refused.output
            assert not list(tmp_path.glob("alone*"))  # a refused run leaves no file behind


def test_proxy_logs_that_reuse_a_response_id_give_unique_ids(tmp_path: Path) -> None:
    path = tmp_path / "proxy.jsonl"
    path.write_text("".join(json.dumps(proxy_line(7)) + "\n" for _ in range(3)))
    ids = [case["id"] for case in import_traces("openai", [path]).cases]
    assert ids == ["cmpl-7", "cmpl-7#2", "cmpl-7#3"]


def test_spans_without_ids_give_unique_ids(tmp_path: Path) -> None:
    span = otel_span(0)
    span["context"] = {}
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(span) + "\n" + json.dumps(span) + "\n")
    ids = [case["id"] for case in import_traces("otel", [path]).cases]
    assert len(set(ids)) == 2, ids


# -- Inspect members past the bound ------------------------------------------------------------


def inspect_sample(sample_id: str, content: str, pad: int = 0) -> dict[str, Any]:
    return {
        "id": sample_id,
        "epoch": 1,
        "messages": [{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}],
        "metadata": {"pad": "x" * pad},
    }


def write_eval(
    path: Path, members: dict[str, bytes], frames: dict[str, bytes] | None = None
) -> Path:
    """An Inspect `.eval` zip: `members` deflated, and `frames` (zstd frames) stored as
    Inspect stores them, with the zip declaring 0 bytes unpacked for them."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, frame in (frames or {}).items():
            archive.writestr(name, frame, zipfile.ZIP_STORED)
        for name, member in members.items():
            archive.writestr(name, member, zipfile.ZIP_DEFLATED)
    data = bytearray(buffer.getvalue())
    zstd = (93).to_bytes(2, "little")
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as archive:
        for info in archive.infolist():
            if info.filename in (frames or {}):  # the local header: method, unpacked size
                at = info.header_offset
                data[at + 8 : at + 10], data[at + 22 : at + 26] = zstd, bytes(4)
    at = data.index(b"PK\x01\x02")
    while data[at : at + 4] == b"PK\x01\x02":  # the central directory's entries likewise
        name_size, extra, comment = struct.unpack_from("<3H", data, at + 28)
        if data[at + 46 : at + 46 + name_size].decode() in (frames or {}):
            data[at + 10 : at + 12], data[at + 24 : at + 28] = zstd, bytes(4)
        at += 46 + name_size + extra + comment
    path.write_bytes(bytes(data))
    return path


def zstd_frame(data: bytes = b"", zeros: int = 0) -> bytes:
    """A zstd frame of `data` (or of `zeros` zero bytes, never held) that does not declare
    its size."""
    import zstandard

    out = io.BytesIO()
    packer = zstandard.ZstdCompressor(write_content_size=False)
    with packer.stream_writer(out, closefd=False) as writer:
        writer.write(data)
        for _ in range(zeros >> 20):
            writer.write(bytes(1 << 20))
    return out.getvalue()


def eval_with_bomb(path: Path, size: int) -> Path:
    """A log whose first sample is good and whose second unpacks to `size` zero bytes (the
    bound is on all its members: one after the bomb would not be read)."""
    good = zstd_frame(json.dumps(inspect_sample("good", "Paris?")).encode())
    return write_eval(path, {}, {"samples/good_epoch_1.json": good,
                                 "samples/bomb_epoch_1.json": zstd_frame(zeros=size)})  # fmt: skip


def test_a_zstd_member_without_a_size_is_refused_as_it_unpacks(tmp_path: Path) -> None:
    log = eval_with_bomb(tmp_path / "bomb.eval", 64 << 20)
    assert log.stat().st_size < 64 << 10  # a few KB that would unpack to 64 MB
    tracemalloc.start()
    try:
        found = import_traces("inspect", [log], reading=Reading(max_unpacked=4 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"peak {peak} bytes"
    [case] = found.cases  # the good sample is read
    assert case["id"].startswith("good:")
    [problem] = found.problems
    assert problem.source == f"{log}:samples/bomb_epoch_1.json"
    assert f"one member may unpack to {4 << 20} bytes" in problem.why
    assert "--max-unpacked" in problem.why
    out = tmp_path / "cases.jsonl"
    done = invoke("import", "inspect", str(log), "-o", str(out), "--max-unpacked", "4M")
    assert done.exit_code == 0 and "--max-unpacked" in done.stderr, done.output
    raised = invoke("import", "inspect", str(log), "-o", str(out), "--max-unpacked", "128M")
    assert raised.exit_code == 0 and "skipped" in raised.stderr  # zeros: read, not JSON


def test_a_deflate_member_past_the_bound_is_refused(tmp_path: Path) -> None:
    log = tmp_path / "big.eval"
    big = json.dumps(inspect_sample("big", "Paris?", pad=3 << 20)).encode()
    write_eval(log, {"samples/big_epoch_1.json": big})
    small = import_traces("inspect", [log], reading=Reading(max_unpacked=1 << 20))
    assert not small.cases and "declares" in small.problems[0].why
    assert len(import_traces("inspect", [log]).cases) == 1  # under the default bound


def test_the_service_bounds_what_an_inspect_body_unpacks() -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        body = eval_with_bomb(Path(folder) / "bomb.eval", 64 << 20).read_bytes()
    app = create_app(traces="inspect", token="", limits=Limits(max_request_bytes=2 << 20))
    tracemalloc.start()
    try:
        with TestClient(app, LOOPBACK, raise_server_exceptions=False) as client:
            reply = client.post("/v1/check", content=body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert reply.status_code == 200, reply.text
    assert len(reply.json()["results"]) == 1
    assert "one member may unpack to 2097152 bytes" in reply.headers["X-Judge-Skipped-First"]
    assert peak < 24 << 20, f"peak {peak} bytes"


# -- fuzz ----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(RECORDS))
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzzed_trace_lines_are_read_or_reported(tmp_path: Path, fmt: Format, seed: int) -> None:
    """Bytes flipped or cut, lines dropped, doubled or garbage, values retyped: no exception,
    and every JSON document of the file is made a case, reported, or counted as a record of
    another kind (what is not JSON is reported by the document reader)."""
    rng = random.Random(seed)
    valid = lines(fmt, 6)
    path = tmp_path / "fuzz.jsonl"
    with Budget(seconds=3.0, peak_bytes=32 << 20).running() as budget:
        while budget.more():
            data = mutated_lines(valid, rng)
            path.write_bytes(data)
            found = import_traces(fmt, [path])
            unread: list[Problem] = []
            starts = {line for line, _ in iter_documents(io.BytesIO(data), str(path), unread)}
            sources = {int(c["meta"]["source"].rsplit(":", 1)[1]) for c in found.cases}
            reported = {p.source for p in found.problems}
            assert {p.source for p in unread} <= reported
            unaccounted = {n for n in starts - sources if f"{path}:{n}" not in reported}
            assert len(unaccounted) <= sum(found.skipped.values()), (data, found.problems)
            assert found.cases or found.problems


@pytest.mark.parametrize("seed", [1, 2])
def test_fuzzed_inspect_logs_are_read_or_reported(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    samples = [inspect_sample(f"s{n}", "Paris?") for n in range(3)]
    path = tmp_path / "log.eval"

    def write(samples: list[Any]) -> None:  # one zstd member, the others deflated
        members = {f"samples/s{n}_epoch_1.json": json.dumps(s).encode()
                   for n, s in enumerate(samples)}  # fmt: skip
        frame = members.pop("samples/s1_epoch_1.json")
        write_eval(path, members, {"samples/s1_epoch_1.json": zstd_frame(frame)})

    write(samples)
    valid = path.read_bytes()
    with Budget(seconds=3.0, peak_bytes=32 << 20).running() as budget:
        while budget.more():
            how = rng.randrange(3)
            if how == 0:
                path.write_bytes(flip(valid, rng))
            elif how == 1:
                path.write_bytes(truncate(valid, rng))
            else:
                write([retyped(s, rng)[0] for s in samples])
            found = import_traces("inspect", [path])
            assert found.cases or found.problems
            assert len(found.cases) + len(found.problems) <= len(samples) + 1


@pytest.mark.parametrize("fmt", ["otel", "inspect"])
def test_fuzzed_trace_bodies_are_never_a_500(fmt: str) -> None:
    rng = random.Random(3)
    valid = lines("otel", 4)
    app = create_app(traces=fmt, token="")
    with (
        TestClient(app, LOOPBACK, raise_server_exceptions=False) as client,
        Budget(seconds=3.0, peak_bytes=64 << 20).running() as budget,
    ):
        while budget.more():
            body = mutated_lines(valid, rng) if rng.random() < 0.7 else flip(DEEP[:4096], rng)
            reply = client.post("/v1/check", content=body)
            assert reply.status_code in (200, 422), reply.text
