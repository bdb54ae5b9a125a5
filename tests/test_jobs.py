"""`judge check --jobs N`: worker processes give the results one process gives, in order."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge.cli import _jobs, main
from tests.test_cli import FAILING, PASSING, UNGRADED, write

REFUNDS = Path(__file__).resolve().parents[1] / "examples" / "refunds"
BAD = ["{oops", '{"id": "no-tools", "tools": 3}', "", "[1, 2]"]


def check(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, ["check", *args, "--no-progress"], input=stdin)


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jobs, "CHUNK_LINES", 7)  # many chunks from a small file


def mixed(tmp_path: Path, copies: int = 15) -> Path:
    rows: list[Any] = []
    for i in range(copies):
        rows += [PASSING | {"id": f"p{i}"}, FAILING | {"id": f"f{i}"}, UNGRADED | {"id": f"u{i}"}]
        rows += BAD
    return write(tmp_path / "cases.jsonl", rows)


@pytest.mark.usefixtures("small_chunks")
def test_workers_write_what_one_process_writes_in_the_same_order(tmp_path: Path) -> None:
    cases = mixed(tmp_path)
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    alone = check(str(cases), "-o", str(one), "--jobs", "1", "--format", "json")
    shared = check(str(cases), "-o", str(two), "--jobs", "2", "--format", "json")
    assert alone.exit_code == shared.exit_code == 0, shared.output
    assert one.read_bytes() == two.read_bytes()
    assert len(one.read_text().splitlines()) == 15 * 6  # the blank lines have no result
    assert json.loads(alone.stdout) == json.loads(shared.stdout)  # the summary
    assert sorted(alone.stderr.splitlines()) == sorted(shared.stderr.splitlines())
    assert f"{cases}:4: not valid JSON" in shared.stderr  # bad lines named, file and line


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize(
    ("options", "here"),
    [([], True), (["--env", f"{REFUNDS / 'environment.py'}:make_environment"], False)],
)
def test_this_process_grades_too_unless_an_environment_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: list[str], here: bool
) -> None:
    graded: list[int] = []
    mine = _jobs.InProcess.check_work

    def counted(self: _jobs.InProcess, source: str, work: Any) -> _jobs.Checked:
        graded.append(1)
        return mine(self, source, work)

    monkeypatch.setattr(_jobs.InProcess, "check_work", counted)
    cases = mixed(tmp_path, copies=40)  # 360 lines: 52 chunks
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert check(str(cases), "-o", str(one), "--jobs", "1", *options).exit_code == 0
    graded.clear()
    assert check(str(cases), "-o", str(two), "--jobs", "2", *options).exit_code == 0
    assert one.read_bytes() == two.read_bytes()
    if here:  # the first two chunks always go to the worker
        assert 0 < len(graded) <= 50
    else:
        assert graded == []


@pytest.mark.usefixtures("small_chunks")
def test_fail_under_and_standard_input_with_workers(tmp_path: Path) -> None:
    cases = mixed(tmp_path)
    below = check("-", "--jobs", "2", "--fail-under", "0.9", stdin=cases.read_bytes())
    assert below.exit_code == 1
    assert "<stdin>:4: not valid JSON" in below.stderr
    lines = [json.loads(line) for line in below.stdout.splitlines()]
    assert [r["id"] for r in lines[:3]] == ["p0", "f0", "u0"]


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize(
    "options",
    [
        pytest.param(["--match", "strict"], id="match"),
        pytest.param(["--match", "unordered", "--ignore-tool", "lookup_order"], id="ignore"),
        pytest.param(["--env", f"{REFUNDS / 'environment.py'}:make_environment"], id="env"),
    ],
)
def test_workers_load_the_trajectory_options_themselves(tmp_path: Path, options: list[str]) -> None:
    cases = str(REFUNDS / "cases.jsonl")
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    assert check(cases, "-o", str(one), "--jobs", "1", *options).exit_code == 0
    assert check(cases, "-o", str(two), "--jobs", "2", *options).exit_code == 0
    assert one.read_bytes() == two.read_bytes()


def test_cases_the_trajectory_cannot_read_are_reported_by_workers_too(tmp_path: Path) -> None:
    broken_turn = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": 5}}]}
    shape = {"id": "shape", "messages": [broken_turn], "response": "hi", "expected_calls": []}
    cases = write(tmp_path / "cases.jsonl", [PASSING, shape] * 3)
    alone = check(str(cases), "--jobs", "1", "--match", "strict")
    shared = check(str(cases), "--jobs", "2", "--match", "strict")
    assert alone.stdout == shared.stdout
    assert alone.stderr.count("skipped") == shared.stderr.count("skipped") == 3


def test_a_worker_that_dies_stops_the_run_with_exit_2(tmp_path: Path) -> None:
    killer = tmp_path / "killer.py"
    killer.write_text("import os\n\ndef factory():\n    os._exit(3)\n")
    cases = write(tmp_path / "cases.jsonl", [PASSING])
    result = check(str(cases), "--jobs", "2", "--env", f"{killer}:factory")
    assert result.exit_code == 2
    assert "a worker process stopped" in result.stderr


def test_default_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small = write(tmp_path / "small.jsonl", [PASSING] * 3)
    large = write(tmp_path / "large.jsonl", [PASSING] * 30)
    monkeypatch.setattr(_jobs, "MANY_LINES", 10)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})  # three cores of six
    assert _jobs.default_jobs((str(small),)) == 1
    assert _jobs.default_jobs((str(small), str(large))) == 3
    assert _jobs.default_jobs(("-",)) == 1  # standard input is read as it comes


# Blank, CRLF, whitespace-only and unterminated lines, exact multiples of the chunk and not.
TEXTS = [b"", b"a\n", b"a", b"a\nb\n\n\r\n c \nd", b"x\n" * 21, b"x\n" * 20 + b"tail", b" \n" * 15]


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("text", TEXTS)
def test_a_file_is_cut_into_spans_of_whole_lines(tmp_path: Path, text: bytes) -> None:
    with written(tmp_path, text).open("rb") as handle:
        spans = list(_jobs._spans(handle))
    assert b"".join(text[s.start : s.end] for s in spans) == text
    lines = text.split(b"\n")
    for span in spans:  # each span starts a line, and says which
        assert span.start == 0 or text[span.start - 1 : span.start] == b"\n"
        assert text[span.start :].split(b"\n")[0] == lines[span.first - 1]
    assert all(text[s.start : s.end].count(b"\n") == 7 for s in spans[:-1])


@pytest.mark.usefixtures("small_chunks")
@pytest.mark.parametrize("text", TEXTS)
def test_a_file_mapped_gives_the_lines_a_pipe_gives(tmp_path: Path, text: bytes) -> None:
    with written(tmp_path, text).open("rb") as handle:
        mapped = [[(n, raw.rstrip(b"\n")) for n, raw in c] for c in _jobs._chunks(handle)]
    piped = [[(n, raw.rstrip(b"\n")) for n, raw in c] for c in _jobs._chunks(io.BytesIO(text))]
    assert mapped == piped


def written(tmp_path: Path, text: bytes) -> Path:
    path = tmp_path / "lines.jsonl"
    path.write_bytes(text)
    return path


@pytest.mark.usefixtures("small_chunks")
def test_workers_read_standard_input_redirected_from_a_file(tmp_path: Path) -> None:
    # Standard input is seekable when it is a file, yet the workers cannot open "<stdin>".
    cases = mixed(tmp_path)
    one = check("-", "--jobs", "1", stdin=cases.read_bytes())
    with cases.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "judge", "check", "-", "--jobs", "2", "--no-progress"],
            stdin=stdin,
            capture_output=True,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == one.stdout
