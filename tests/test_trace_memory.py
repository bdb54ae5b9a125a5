"""Trace imports bound what they build, not only what they read (issue 52): JSON that takes
far more memory parsed than its bytes (`[{}, {}, ...]`: 64 bytes an object, 3 bytes of JSON)
is refused before it is parsed, in an Inspect member that a few KB unpack to and in a plain
document alike; the members of one log unpack to `--max-unpacked` in all. Peak memory is
measured in a child process (`judge import`) or with tracemalloc (`judge serve`)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from judge.service._app import create_app
from judge.service._body import Limits
from judge.traces._documents import Problem, iter_documents
from tests.test_trace_input import (
    LOOPBACK,
    RECORDS,
    inspect_sample,
    invoke,
    write_eval,
    zstd_frame,
)

MB = 1 << 20


# `judge ARGS`, its peak memory said last on standard error: the high-water mark of the child's
# own memory (its ru_maxrss would count the parent's, which the child is forked from).
PEAK = """
import atexit, runpy, sys
def peak():
    with open("/proc/self/status") as status:
        said = [line.split()[1] for line in status if line.startswith("VmHWM:")]
    print("peak", int(said[0]) * 1024, file=sys.stderr)
atexit.register(peak)
sys.argv[0] = "judge"
runpy.run_module("judge", run_name="__main__")
"""


@dataclass
class Run:
    code: int
    stderr: str
    peak: int
    """The child's peak resident memory, in bytes."""


def judge_run(*args: str) -> Run:
    """`judge ARGS` in a child process, with its peak memory."""
    if not Path("/proc/self/status").exists():
        pytest.skip("the peak memory of a process is read from /proc")
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    *said, peak = done.stderr.decode().splitlines()
    return Run(done.returncode, "\n".join(said), int(peak.removeprefix("peak ")))


def objects(size: int) -> bytes:
    """A zstd frame (that declares no size) of a JSON array of `size` bytes of empty objects:
    a few KB, never held whole."""
    import zstandard

    out = io.BytesIO()
    packer = zstandard.ZstdCompressor(write_content_size=False)
    with packer.stream_writer(out, closefd=False) as writer:
        writer.write(b"[")
        for _ in range(size // MB):
            writer.write(b"{}," * (MB // 3))
        writer.write(b"{}]")
    return out.getvalue()


def good_frame(sample_id: str, pad: int = 0) -> bytes:
    return zstd_frame(json.dumps(inspect_sample(sample_id, "Paris?", pad=pad)).encode())


def test_an_eval_member_of_empty_objects_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    log = write_eval(tmp_path / "objects.eval", {}, {
        "samples/good_epoch_1.json": good_frame("good"),
        "samples/objects_epoch_1.json": objects(24 * MB),
    })  # fmt: skip
    assert log.stat().st_size < 16 << 10  # 8 million objects: about 600 MB parsed
    out = tmp_path / "cases.jsonl"
    run = judge_run("import", "inspect", str(log), "-o", str(out), "--max-unpacked", "32M")
    assert run.peak < 160 * MB, f"peak {run.peak >> 20} MB"  # before: 1.2 GB, and 40 s
    assert run.code == 0, run.stderr
    said = f"{log}:samples/objects_epoch_1.json: a sample that cannot be read: its JSON would take "
    assert f"{said}more than {4 * 32 * MB} bytes parsed" in run.stderr, run.stderr
    assert "4 times --max-unpacked" in run.stderr
    [case] = map(json.loads, out.read_text().splitlines())
    assert case["id"].startswith("good:")


def test_the_members_of_one_log_unpack_to_max_unpacked_in_all(tmp_path: Path) -> None:
    frames = {f"samples/s{n}_epoch_1.json": good_frame(f"s{n}", pad=5 * MB) for n in range(6)}
    log = write_eval(tmp_path / "six.eval", {}, frames)
    out = tmp_path / "cases.jsonl"
    tracemalloc.start()
    try:
        done = invoke("import", "inspect", str(log), "-o", str(out), "--max-unpacked", "16M")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert done.exit_code == 0, done.output
    cases = [json.loads(line) for line in out.read_text().splitlines()]
    assert [case["id"].split(":")[0] for case in cases] == ["s0", "s1", "s2"]  # 15 MB of 16
    fourth, rest = done.stderr.splitlines()[:2]
    assert f"{log}:samples/s3_epoch_1.json: a sample that cannot be read: one member may " in fourth
    assert "a log's members as many in all, and this one unpacks past the " in fourth
    assert rest.endswith(f"{log}: 2 more samples not read: the log's members unpacked past the "
                         f"{16 * MB} bytes they may unpack to in all (raise the bound with "
                         "--max-unpacked)")  # fmt: skip
    assert peak < 48 * MB, f"peak {peak >> 20} MB"


def test_the_service_refuses_a_small_inspect_body_of_empty_objects(tmp_path: Path) -> None:
    # The body of issue 52: 3 KB that unpack to 32 MB (the default bound) of empty objects.
    frames = {"samples/objects_epoch_1.json": objects(32 * MB)}
    body = write_eval(tmp_path / "objects.eval", {}, frames).read_bytes()
    assert len(body) < 8 << 10
    app = create_app(traces="inspect", token="", limits=Limits())
    tracemalloc.start()
    try:
        with TestClient(app, LOOPBACK, raise_server_exceptions=False) as client:
            reply = client.post("/v1/check", content=body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 96 * MB, f"peak {peak >> 20} MB"  # before: 1.7 GB, and 90 s
    assert reply.status_code == 422, reply.text
    assert f"would take more than {4 * 32 * MB} bytes parsed" in reply.json()["detail"]


# -- plain documents: otel, langsmith, openai ----------------------------------------------


def empty_objects_line(size: int) -> bytes:
    return b"[" + b"{}," * (size // 3) + b"{}]\n"


def test_a_document_of_empty_objects_is_refused_and_the_next_one_read(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    good = json.dumps(RECORDS["otel"](1)).encode() + b"\n"
    path.write_bytes(empty_objects_line(8 * MB) + good)  # 8 MB: about 200 MB parsed
    out = tmp_path / "cases.jsonl"
    run = judge_run("import", "otel", str(path), "-o", str(out), "--max-unpacked", "1M")
    assert run.peak < 160 * MB, f"peak {run.peak >> 20} MB"
    assert run.code == 0, run.stderr
    said = f"skipped {path}:1: a document whose JSON would take more than {16 * MB} bytes parsed"
    assert said in run.stderr and "16 times --max-unpacked" in run.stderr, run.stderr
    assert len(out.read_text().splitlines()) == 1  # the span on line 2


def test_the_service_refuses_a_body_of_empty_objects() -> None:
    body = empty_objects_line(4 * MB)
    app = create_app(traces="otel", token="", limits=Limits(max_request_bytes=4 * MB + 8))
    tracemalloc.start()
    try:
        with TestClient(app, LOOPBACK, raise_server_exceptions=False) as client:
            reply = client.post("/v1/check", content=body)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 * MB, f"peak {peak >> 20} MB"
    assert reply.status_code == 422, reply.text
    assert "would take more than" in reply.json()["detail"]


def test_documents_around_a_long_one_and_one_past_the_bound_are_read_in_place() -> None:
    """A document read in growing windows (cut many times), and one past the bound, give the
    text after them back: what follows is read whole, on its own lines."""
    small = [{"n": n, "list": [1, {"k": "v"}]} for n in range(20)]
    long = {"text": "x" * 300_000, "items": list(range(5_000))}  # about 650 KB parsed
    text = "".join(json.dumps(d) + "\n" for d in small[:5])
    text += json.dumps(long) + "\n" + "".join(json.dumps(d) + "\n" for d in small[5:10])
    text += "[" + "{}," * 100_000 + "{}]\n"  # 300 KB: more than 12 MB parsed
    text += "".join(json.dumps(d, indent=2) + "\n" for d in small[10:])
    problems: list[Problem] = []
    found = list(iter_documents(io.BytesIO(text.encode()), "f.jsonl", problems, max_parsed=MB))
    assert [value for _, value in found] == [*small[:5], long, *small[5:]]
    assert [line for line, _ in found][:12] == list(range(1, 12)) + [13]
    assert [p.source for p in problems] == ["f.jsonl:12"]
    assert "a document whose JSON would take more than 1048576 bytes parsed" in problems[0].why
