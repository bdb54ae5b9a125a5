"""How `judge` starts, reads and ends a stdio MCP server (issue 52), with the hand-written
server of `tests/mcp_raw_server.py`: a server and the children it forks end with `judge`,
SIGTERM ignored or not, and whether `judge` exits or is killed; a server sees the caller's
environment (`--mcp-env` over it); a banner or a stray line is one line of warning, a result
past the bound "too large", two tools of one name refused, each error one line."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.checks._mcp_stdio import MAX_MESSAGE, Lines
from judge.cli import main
from tests.chat_server import ChatServer, Reply, completion, serving
from tests.review_helpers import clean_env

RAW = f"{sys.executable} {Path(__file__).with_name('mcp_raw_server.py')}"
BIG = 50_000_000  # bytes: the result reported as a server that "did not answer"


def calling(body: dict[str, Any]) -> Reply:
    """A candidate that calls the tool its user message names (`big` for `BIG` bytes), then
    answers."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(body=completion("done"))
    tool = body["messages"][-1]["content"].split()[-1]
    arguments = json.dumps({"size": BIG} if tool == "big" else {})
    reply = completion(None)
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": tool, "arguments": arguments}}
    ]
    return Reply(body=reply)


@pytest.fixture
def candidate() -> Iterator[ChatServer]:
    with serving(calling) as server:
        yield server


def cases(path: Path, tool: str) -> Path:
    row = {"id": tool, "messages": [{"role": "user", "content": f"call {tool}"}],
           "expected_calls": [{"name": tool, "arguments": {}}]}  # fmt: skip
    path.write_text(json.dumps(row) + "\n")
    return path


def run_args(tmp_path: Path, url: str, tool: str, server: str) -> list[str]:
    return ["run", str(cases(tmp_path / "cases.jsonl", tool)), "--models", "m",
            "--base-url", url, "--no-preflight", "--mcp", server,
            "-o", str(tmp_path / "runs.jsonl")]  # fmt: skip


def pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def survivors(path: Path, seconds: float = 30.0) -> list[int]:
    """The processes in `path` still running after up to `seconds` (a loaded machine)."""
    deadline = time.monotonic() + seconds
    while (left := [p for p in pids(path) if alive(p)]) and time.monotonic() < deadline:
        time.sleep(0.2)
    return left


@pytest.fixture
def reaped(tmp_path: Path) -> Iterator[Path]:
    """The file the servers write their process ids to; whatever of them is left is killed."""
    path = tmp_path / "pids"
    yield path
    for pid in pids(path):
        if alive(pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@needs_proc
@pytest.mark.parametrize("command", ["init", "check", "run"])
def test_a_servers_forked_children_end_with_it_though_they_ignore_sigterm(
    tmp_path: Path, reaped: Path, candidate: ChatServer, command: str
) -> None:
    """Regression (issue 52): a server that exited on the end of its input left the children
    it forked running (PPID 1) after `judge init`, `check` and `run`."""
    server = f"{RAW} --fork --pid-file {reaped}"
    given = {
        "init": ["init", str(tmp_path / "starter"), "--from-mcp", server],
        "check": ["check", str(cases(tmp_path / "cases.jsonl", "whoami")), "--mcp", server],
        "run": run_args(tmp_path, candidate.url, "whoami", server),
    }[command]
    done = CliRunner().invoke(main, [*given, "--mcp-start-timeout", "120"])
    assert done.exit_code == 0, done.output
    assert len(pids(reaped)) >= 2  # a server and its child, at least
    assert survivors(reaped) == []


@needs_proc
def test_no_forking_server_outlives_a_killed_judge(
    tmp_path: Path, reaped: Path, candidate: ChatServer
) -> None:
    """Regression (issue 52): `kill -9` of judge left a server that ignores SIGTERM (the
    parent-death signal it was given) running, and its children."""
    command = [sys.executable, "-m", "judge",
               *run_args(tmp_path, candidate.url, "hang", f"{RAW} --fork --pid-file {reaped}"),
               "--mcp-start-timeout", "120"]  # fmt: skip
    judge = subprocess.Popen(command, env=clean_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(pids(reaped)) < 4:  # the first, then the run's
            time.sleep(0.1)
        assert len(pids(reaped)) >= 4, "the servers never started"
    finally:
        judge.send_signal(signal.SIGKILL)
        judge.wait()
    assert survivors(reaped) == []


@pytest.mark.parametrize(
    ("settings", "seen"),
    [
        pytest.param([], "from-the-shell", id="the-callers-environment"),
        pytest.param(["--mcp-env", "RAW_SERVER_KEY=given"], "given", id="mcp-env-over-it"),
        pytest.param(["--mcp-env", "RAW_SERVER_KEY=a=b"], "a=b", id="a-value-with-equals"),
    ],
)
def test_a_server_sees_the_callers_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: list[str], seen: str
) -> None:
    """Regression (issue 52): a server started by `--mcp` saw only the SDK's few variables
    (PATH, HOME...), never its key or configuration."""
    monkeypatch.setenv("RAW_SERVER_KEY", "from-the-shell")
    starter = tmp_path / "starter"
    done = CliRunner().invoke(main, ["init", str(starter), "--from-mcp", RAW, *settings])
    assert done.exit_code == 0, done.output
    [whoami] = [t for t in json.loads((starter / "tools.json").read_text())
                if t["function"]["name"] == "whoami"]  # fmt: skip
    assert whoami["function"]["description"] == f"key: {seen}"


def test_an_agent_runs_tool_reads_the_variable_mcp_env_sets(
    tmp_path: Path, candidate: ChatServer
) -> None:
    given = run_args(tmp_path, candidate.url, "whoami", RAW)
    done = CliRunner().invoke(main, [*given, "--mcp-env", "RAW_SERVER_KEY=given"])
    assert done.exit_code == 0, done.output
    [run] = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert run["transcript"][1] == {"role": "tool", "tool_call_id": "c1", "content": "given"}
    assert run["settings"]["mcp_env"] == ["RAW_SERVER_KEY"]  # its name; a value may be a key


@pytest.mark.parametrize(
    ("given", "said"),
    [
        pytest.param(["--mcp-env", "RAW_SERVER_KEY"], "--mcp-env 'RAW_SERVER_KEY': expected "
                     "KEY=VALUE", id="not-key-value"),
        pytest.param(["--mcp-env", "=x"], "--mcp-env '=x': expected KEY=VALUE", id="no-key"),
    ],
)  # fmt: skip
def test_a_setting_that_is_not_key_value_is_exit_2(
    tmp_path: Path, given: list[str], said: str
) -> None:
    done = CliRunner().invoke(main, ["init", str(tmp_path), "--from-mcp", RAW, *given])
    assert done.exit_code == 2 and said in done.stderr, done.output


def test_mcp_env_without_a_server_to_start_is_exit_2(tmp_path: Path) -> None:
    path = cases(tmp_path / "cases.jsonl", "whoami")
    alone = CliRunner().invoke(main, ["check", str(path), "--mcp-env", "A=1"])
    assert alone.exit_code == 2 and "add --mcp COMMAND" in alone.stderr, alone.output
    url = ["run", str(path), "--models", "m", "--base-url", "http://127.0.0.1:9/v1",
           "--no-preflight", "--mcp-url", "http://127.0.0.1:9/mcp", "--mcp-env", "A=1"]  # fmt: skip
    remote = CliRunner().invoke(main, url)
    assert remote.exit_code == 2 and "not a URL" in remote.stderr, remote.output


def test_a_bannered_server_is_one_line_each_not_a_traceback(tmp_path: Path) -> None:
    """Regression (issue 52): each line of a server's output that is not JSON-RPC printed the
    SDK's traceback (a dozen lines, for a banner)."""
    server = f"{RAW} --say 'Starting raw v1' --say '{{\"hello\": 1}}'"
    done = subprocess.run(
        [sys.executable, "-m", "judge", "init", str(tmp_path / "starter"), "--from-mcp", server],
        env=clean_env(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"the MCP server {server}: line 1 of its output is not JSON-RPC, skipped: "
        "'Starting raw v1'",
        f"the MCP server {server}: line 2 of its output is not JSON-RPC, skipped: "
        "'{\"hello\": 1}'",
    ]


def test_a_tools_list_that_is_not_mcp_is_one_line(tmp_path: Path) -> None:
    done = CliRunner().invoke(main, ["init", str(tmp_path), "--from-mcp", f"{RAW} --no-schema"])
    assert done.exit_code == 2, done.output
    [said] = done.stderr.splitlines()
    assert said.endswith(
        "ListToolsResult is not valid: tools.0.inputSchema: Field required; "
        "tools.1.inputSchema: Field required; tools.2.inputSchema: Field required"
    ), said


def test_two_tools_of_one_name_are_refused_and_init_writes_neither(tmp_path: Path) -> None:
    starter = tmp_path / "starter"
    done = CliRunner().invoke(main, ["init", str(starter), "--from-mcp", f"{RAW} --twice"])
    assert done.exit_code == 2, done.output
    assert "lists two tools named 'whoami' (numbers 1 and 4 of its tools/list)" in done.stderr
    assert not (starter / "tools.json").exists()


def test_a_result_past_the_bound_is_too_large_not_unanswered(
    tmp_path: Path, candidate: ChatServer
) -> None:
    """Regression (issue 52): a 50 MB result was reported as a server that "did not answer"
    (its line read in ever longer pieces until the request's bound ran out)."""
    given = run_args(tmp_path, candidate.url, "big", RAW)
    done = CliRunner().invoke(main, [*given, "--mcp-timeout", "60"])
    assert done.exit_code == 0, done.output
    [run] = [json.loads(line) for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    said = re.search(r"too large \((\d+) bytes, the bound is (\d+)\)", run["error"])
    assert said and "did not answer" not in run["error"], run["error"]
    assert BIG < int(said[1]) < BIG + 200 and int(said[2]) == MAX_MESSAGE  # the text, in JSON
    assert said[0] in run["tool_errors"][0]["message"]


@pytest.mark.parametrize(
    ("chunks", "lines", "too_large"),
    [
        pytest.param([b"ab\ncd\n"], [b"ab", b"cd"], None, id="two-lines-in-a-chunk"),
        pytest.param([b"a", b"b\nc", b"d\n"], [b"ab", b"cd"], None, id="lines-across-chunks"),
        pytest.param([b"abcd\n"], [b"abcd"], None, id="a-line-at-the-bound"),
        pytest.param([b"ab\nabc", b"de", b"f\ngh\n"], [b"ab"], 6, id="past-it-counted-whole"),
        pytest.param([b"abc"], [], None, id="an-unended-line-waits"),
    ],
)
def test_lines_are_cut_within_the_bound(
    chunks: list[bytes], lines: list[bytes], too_large: int | None
) -> None:
    reader = Lines(bound=4)
    read = [line for chunk in chunks for line in reader.feed(chunk)]
    assert (read, reader.too_large) == (lines, too_large)
