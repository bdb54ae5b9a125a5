"""MCP servers as environments, with real servers written with the `mcp` SDK: the refunds shop
of `examples/refunds/mcp_server.py` over stdio and streamable HTTP, and a server whose tools
misbehave (`tests/mcp_faulty_server.py`). Agent runs on a server pass or fail exactly as on
`examples/refunds/environment.py`; `judge check --mcp` replays as `--env` does; a server that
cannot start, a tool that hangs, a server that dies each say why; no server outlives `judge`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.chat_server import Reply, completion, serving
from tests.review_helpers import clean_env
from tests.service_process import free_port

ROOT = Path(__file__).resolve().parents[1]
REFUNDS = ROOT / "examples" / "refunds"
SHOP = f"{sys.executable} {REFUNDS / 'mcp_server.py'}"
ENV = f"{REFUNDS / 'environment.py'}:make_environment"
FAULTY = f"{sys.executable} {Path(__file__).with_name('mcp_faulty_server.py')}"


def records(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    rows = (json.loads(line) for line in path.read_text().splitlines())
    return {(r["model"], r["case_id"]): r for r in rows}


@pytest.fixture(scope="module")
def scripted() -> Iterator[str]:
    """The careful and reckless agents of the example, on a loopback endpoint."""
    port = free_port()
    script = REFUNDS / "scripted_agents.py"
    server = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None and "scripted agents" in server.stdout.readline()
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()


def run_pair(url: str, out: Path, *environment: str) -> dict[str, Any]:
    done = CliRunner().invoke(main, [
        "run", str(REFUNDS / "cases.jsonl"), "--models", "careful,reckless", "--base-url", url,
        *environment, "-o", str(out), "--format", "json",
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_agent_runs_on_the_mcp_shop_pass_and_fail_as_on_the_python_shop(
    scripted: str, tmp_path: Path
) -> None:
    on_mcp = run_pair(scripted, tmp_path / "mcp.jsonl", "--mcp", SHOP, "--mcp-state",
                      "shop://orders")  # fmt: skip
    on_env = run_pair(scripted, tmp_path / "env.jsonl", "--env", ENV)
    for report in (on_mcp, on_env):
        rates = {m["model"]: m["pass_rate"]["value"] for m in report["models"]}
        assert rates == {"careful": 1.0, "reckless": 0.125}  # 8 of 8, 1 of 8
    mcp, env = records(tmp_path / "mcp.jsonl"), records(tmp_path / "env.jsonl")
    assert mcp.keys() == env.keys()
    for key, run in mcp.items():
        assert run["passed"] == env[key]["passed"], key
        assert run["final_state"] == env[key]["final_state"], key  # the orders, read as JSON
        assert run["steps"] == env[key]["steps"] and run["stop"] == env[key]["stop"], key
        assert run["settings"]["mcp_state"] == "shop://orders"
        assert len(run["tool_errors"]) == len(env[key]["tool_errors"]), key
    refused = mcp[("reckless", "refund-without-check")]["tool_errors"][0]
    assert refused["name"] == "issue_refund" and "must succeed first" in refused["message"]
    assert not [p for p in _servers() if str(REFUNDS / "mcp_server.py") in p]  # all stopped


def test_judge_check_replays_into_two_fresh_servers_as_env_does(tmp_path: Path) -> None:
    out_mcp, out_env = tmp_path / "mcp.jsonl", tmp_path / "env.jsonl"
    cases = str(REFUNDS / "cases.jsonl")
    for args, out in (
        (["--mcp", SHOP, "--mcp-state", "shop://orders"], out_mcp),
        (["--env", ENV], out_env),
    ):
        done = CliRunner().invoke(main, ["check", cases, *args, "-o", str(out), "--jobs", "1"])
        assert done.exit_code == 0, done.output

    def plain(path: Path) -> list[Any]:  # the SDK prefixes a refusal's text; nothing else differs
        text = path.read_text().replace("Error executing tool issue_refund: ", "")
        return [json.loads(line) for line in text.splitlines()]

    assert plain(out_mcp) == plain(out_env)
    outcomes = [r["passed"] for r in plain(out_mcp)]
    assert outcomes.count(True) == 6 and outcomes.count(False) == 2  # two reach another state


def test_a_case_without_tools_takes_the_servers(tmp_path: Path) -> None:
    case = json.loads((REFUNDS / "cases.jsonl").read_text().splitlines()[0])
    del case["tools"]
    path = tmp_path / "bare.jsonl"
    path.write_text(json.dumps(case) + "\n")
    done = CliRunner().invoke(main, ["check", str(path), "--mcp", SHOP, "--mcp-state",
                                     "shop://orders", "--jobs", "1"])  # fmt: skip
    assert done.exit_code == 0, done.output
    [result] = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert result["passed"] is True and not result["failures"]


def test_a_running_server_over_streamable_http(scripted: str, tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, str(REFUNDS / "mcp_server.py"), "--http", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=clean_env(),
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        _wait_for_port(port)
        out = tmp_path / "runs.jsonl"
        done = CliRunner().invoke(main, [
            "run", str(REFUNDS / "cases.jsonl"), "--models", "careful", "--base-url", scripted,
            "--mcp-url", url, "--mcp-state", "shop://orders", "-o", str(out),
        ])  # fmt: skip
        assert done.exit_code == 0, done.output
        runs = records(out)
        assert len(runs) == 8 and all("error" not in r for r in runs.values())
        assert all(isinstance(r["final_state"], dict) for r in runs.values())  # read, one shop
        refused = CliRunner().invoke(main, ["check", str(REFUNDS / "cases.jsonl"),
                                            "--mcp-url", url])  # fmt: skip
        assert refused.exit_code == 2 and "--mcp-url is for agent runs" in refused.stderr
    finally:
        server.terminate()
        server.wait()


def _wait_for_port(port: int) -> None:
    import socket

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


# -- faults --------------------------------------------------------------------------------


_ARGUMENTS = {"note": {"text": "hello"}}


def caller(body: dict[str, Any]) -> Reply:
    """A candidate that calls the tool its user message names, then answers."""
    if body["messages"][-1]["role"] == "tool":
        return Reply(body=completion("done"))
    tool = body["messages"][-1]["content"].split()[-1]
    arguments = json.dumps(_ARGUMENTS.get(tool, {}))
    reply = completion(None)
    reply["choices"][0]["message"]["tool_calls"] = [
        {"id": "c1", "type": "function", "function": {"name": tool, "arguments": arguments}}
    ]
    return Reply(body=reply)


def fault_cases(path: Path, *tools: str) -> Path:
    """Cases whose user message makes `caller` call `tool`, that call their reference (an
    agent run compares something, or is refused)."""
    rows = [{"id": f"{tool}-{n}", "messages": [{"role": "user", "content": f"call {tool}"}],
             "expected_calls": [{"name": tool, "arguments": _ARGUMENTS.get(tool, {})}]}
            for n, tool in enumerate(tools)]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_a_hung_tool_or_a_dead_server_fails_its_run_and_the_batch_goes_on(
    tmp_path: Path,
) -> None:
    cases = fault_cases(tmp_path / "cases.jsonl", "hang", "die", "fail", "note")
    out = tmp_path / "runs.jsonl"
    with serving(caller) as candidate:
        started = time.monotonic()
        done = CliRunner().invoke(main, [
            "run", str(cases), "--models", "m", "--base-url", candidate.url, "--no-preflight",
            "--mcp", FAULTY, "--mcp-state", "notes://all", "--mcp-timeout", "2", "-o", str(out),
        ])  # fmt: skip
        took = time.monotonic() - started
    assert done.exit_code == 0, done.output
    assert took < 300, took  # the hung call gave up long before its hour (the message: 2 s)
    runs = {case.split("-")[0]: r for (_, case), r in records(out).items()}
    late = "did not answer (tool hang) within 2 s (--mcp-timeout)"
    [hung] = runs["hang"]["tool_errors"]
    assert late in hung["message"] and late in runs["hang"]["error"]  # the run fails with it
    [died] = runs["die"]["tool_errors"]
    assert died["name"] == "die" and "Connection closed" in runs["die"]["error"]
    refused = runs["fail"]  # a tool's own refusal is the agent's to handle, not a failed run
    assert refused["tool_errors"][0]["message"].endswith("refused on purpose")
    assert "error" not in refused
    assert runs["note"]["tool_errors"] == [] and runs["note"]["final_state"] == ["hello"]
    tool_message = runs["note"]["transcript"][1]
    assert tool_message["role"] == "tool" and tool_message["content"].startswith("noted:")
    assert not [p for p in _servers() if "mcp_faulty_server.py" in p]


def test_a_short_call_bound_leaves_a_slow_start_alone(tmp_path: Path) -> None:
    """Regression (issue 56): `--mcp-timeout 2` bounded the start too, so servers slower than
    2 s to start (four at once on two cores) failed every run. The start has its own bound."""
    cases = fault_cases(tmp_path / "cases.jsonl", "note", "note")
    out = tmp_path / "runs.jsonl"
    with serving(caller) as candidate:
        done = CliRunner().invoke(main, [
            "run", str(cases), "--models", "m", "--base-url", candidate.url, "--no-preflight",
            "--mcp", f"{FAULTY} --start-delay 3", "--mcp-state", "notes://all",
            "--mcp-timeout", "1", "-o", str(out),
        ])  # fmt: skip
    assert done.exit_code == 0, done.output
    runs = list(records(out).values())
    assert [r.get("error") for r in runs] == [None, None]
    assert [r["final_state"] for r in runs] == [["hello"], ["hello"]]
    assert runs[0]["settings"]["mcp_timeout"] == 1
    assert runs[0]["settings"]["mcp_start_timeout"] == 60


@pytest.mark.parametrize("command", ["run", "check", "init"])
def test_a_start_past_its_own_bound_is_exit_2_naming_that_bound(
    tmp_path: Path, command: str
) -> None:
    cases = fault_cases(tmp_path / "cases.jsonl", "note")
    slow = f"{FAULTY} --start-delay 600"
    given = {
        "run": ["run", str(cases), "--models", "m", "--base-url", "http://127.0.0.1:9/v1",
                "--no-preflight", "--mcp", slow],
        "check": ["check", str(cases), "--mcp", slow],
        "init": ["init", str(tmp_path / "starter"), "--from-mcp", slow],
    }[command]  # fmt: skip
    started = time.monotonic()
    done = CliRunner().invoke(main, [*given, "--mcp-start-timeout", "1", "--mcp-timeout", "300"])
    assert done.exit_code == 2, done.output
    assert "within 1 s (--mcp-start-timeout)" in done.stderr, done.stderr
    assert time.monotonic() - started < 300  # the server's 600 s sleep was not waited out
    assert not [p for p in _servers() if "--start-delay 600" in p]


def test_a_server_that_cannot_start_is_exit_2_with_what_it_said(tmp_path: Path) -> None:
    cases = fault_cases(tmp_path / "cases.jsonl", "note")
    code = "import sys; sys.stderr.write('no database here'); sys.exit(3)"
    broken = f'{sys.executable} -c "{code}"'
    for command, said in ((broken, "it said: no database here"),
                          ("/no/such/server", "No such file")):  # fmt: skip
        done = CliRunner().invoke(main, ["run", str(cases), "--models", "m", "--base-url",
                                         "http://127.0.0.1:9/v1", "--no-preflight",
                                         "--mcp", command])  # fmt: skip
        assert done.exit_code == 2, done.output
        assert "could not be started" in done.stderr and said in done.stderr


@pytest.mark.parametrize(("command", "said"), [("", "''"), ("'shop", '"\'shop"')])
def test_a_command_that_cannot_be_read_is_exit_2_naming_the_option(
    tmp_path: Path, command: str, said: str
) -> None:
    cases = fault_cases(tmp_path / "cases.jsonl", "note")
    done = CliRunner().invoke(main, ["check", str(cases), "--mcp", command])
    assert done.exit_code == 2, done.output
    assert f"--mcp {said}: " in done.stderr, done.stderr


def test_no_server_outlives_a_killed_judge(tmp_path: Path) -> None:
    cases = fault_cases(tmp_path / "cases.jsonl", "hang", "hang", "hang")
    pids = tmp_path / "pids"
    with serving(caller) as candidate:
        command = [
            sys.executable, "-m", "judge", "run", str(cases), "--models", "m", "--base-url",
            candidate.url, "--no-preflight", "--mcp", f"{FAULTY} --pid-file {pids}",
            "-o", str(tmp_path / "runs.jsonl"),
        ]  # fmt: skip
        judge = subprocess.Popen(command, env=clean_env(), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(_pids(pids)) < 4:  # the first, then 3 runs
            time.sleep(0.1)
        assert len(_pids(pids)) >= 4, "the servers never started"
        judge.send_signal(signal.SIGKILL)
        judge.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and [p for p in _pids(pids) if _alive(p)]:
        time.sleep(0.1)
    assert not [p for p in _pids(pids) if _alive(p)], "a server outlived judge"


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split()[2] == "Z")  # a zombie is gone


def _servers() -> list[str]:
    """The command lines of this user's processes."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return found


def test_a_case_tool_the_server_lacks_is_named(tmp_path: Path) -> None:
    case = json.loads((REFUNDS / "cases.jsonl").read_text().splitlines()[0])
    case["tools"].append({"type": "function", "function": {"name": "cancel_order"}})
    path = tmp_path / "extra.jsonl"
    path.write_text(json.dumps(case) + "\n")
    checked = CliRunner().invoke(main, ["check", str(path), "--mcp", SHOP, "--jobs", "1"])
    [result] = [json.loads(line) for line in checked.stdout.splitlines() if line.startswith("{")]
    [failure] = result["failures"]
    assert failure["kind"] == "InvalidCase" and failure["path"] == "/tools"
    assert "has no tool 'cancel_order'" in failure["message"]
    nowhere = "http://127.0.0.1:9/v1"  # refused before any request
    ran = CliRunner().invoke(main, ["run", str(path), "--models", "m", "--base-url", nowhere,
                                    "--no-preflight", "--mcp", SHOP])  # fmt: skip
    assert ran.exit_code == 2 and "has no tool 'cancel_order'" in ran.stderr
