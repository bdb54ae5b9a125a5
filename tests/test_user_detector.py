"""The simulated user's fault detector through whole runs (`judge run --user-model`): the 40
scripted users of `tests.user_scripts` (20 faulty, four of each kind; 20 faithful) served by
a user model on 127.0.0.1, each talking to an agent that replays its script's side (its text
asked of an agent model on 127.0.0.1). At least 18 faulty runs must be marked `user_error`
for their own kind, at most 2 faithful ones at all; the marked runs are out of the pass rate,
counted in the summary and listed in the HTML report. With a judge, its one question per run
names a user that left its brief."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from judge.cli import main
from judge.runs._user import STOP
from tests.chat_server import Reply, answer, completion, serving
from tests.run_helpers import lines
from tests.user_scripts import SCRIPTS, TOOL_NAMES, Script

BY_OPENING = {script.opening: script for script in SCRIPTS}
FAITHFUL = next(
    s for s in SCRIPTS if s.fault is None and any(m["role"] == "user" for m in s.transcript)
)
LEFT = next(m["content"] for m in FAITHFUL.transcript if m["role"] == "user")
"""A faithful user's turn the scripted judge says leaves the brief."""
AGENT = """
from tests.test_user_detector import replayed


async def agent(case, chat):
    reply = await chat(case.messages, tools=None)
    return [*case.messages, *replayed(case.messages, reply)]
"""


def segments(script: Script) -> list[list[dict[str, Any]]]:
    """The agent's side of the script: what it says and does before the first user turn,
    then after each."""
    found: list[list[dict[str, Any]]] = [[]]
    for message in script.transcript:
        if message["role"] == "user":
            found.append([])
        else:
            found[-1].append(message)
    return found


def script_of(messages: list[dict[str, Any]]) -> tuple[Script, int]:
    """The script a conversation is of (by its opening), and how many user turns followed."""
    users = [m for m in messages if m["role"] == "user"]
    return BY_OPENING[users[0]["content"]], len(users) - 1


def replayed(messages: list[dict[str, Any]], reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The agent's turn: the script's calls and results, then the reply the agent model gave."""
    script, turn = script_of(messages)
    part = segments(script)[turn]
    done = (
        part[:-1] if part and part[-1].get("content") and not part[-1].get("tool_calls") else part
    )
    return [*done, reply]


def agent_model(body: dict[str, Any]) -> Reply:
    """Says the text the script's agent says at this turn ("OK." where it says none)."""
    script, turn = script_of(body["messages"])
    part = segments(script)[turn]
    last = part[-1] if part else {}
    text = last.get("content") if not last.get("tool_calls") else None
    return Reply(body=completion(text or "OK."))


def user_model(body: dict[str, Any]) -> Reply:
    """The script's next user turn (a tool call where the script says it made one), then its
    closing line with the stop token."""
    if body["messages"][0]["role"] != "system":  # the request that checks it answers
        return Reply(body=completion("OK"))
    told = body["messages"][-1]["content"].splitlines()
    own = [line.removeprefix("CUSTOMER: ") for line in told if line.startswith("CUSTOMER: ")]
    script = BY_OPENING[own[0]]
    turns = [m["content"] for m in script.transcript if m["role"] == "user"]
    k = len(own)  # the next simulated turn's number
    if k <= len(turns):
        reply = completion(turns[k - 1])
        if k in script.user_calls:
            message = reply["choices"][0]["message"]
            message["tool_calls"] = [{"id": "u1", "type": "function", "function": {
                "name": "lookup_order", "arguments": "{}"}}]  # fmt: skip
        return Reply(body=reply)
    return Reply(body=completion(f"{script.closing or ''} {STOP}"))


def case_of(script: Script) -> dict[str, Any]:
    users = sum(m["role"] == "user" for m in script.transcript)
    scenario = {k: v for k, v in script.scenario.items() if v is not None}
    asserted = (
        {"called": ["lookup_order"]} if script.expects_action else {"avoided": ["issue_refund"]}
    )
    return {
        "id": script.name,
        "messages": script.prompt(),
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in TOOL_NAMES
        ],  # fmt: skip
        "assert_tools": asserted,
        "user": {**scenario, "max_turns": max(1, users + (script.closing is not None))},
    }


def run_all(tmp_path: Path, *extra: str) -> tuple[dict[str, dict[str, Any]], Result, Path]:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(case_of(s)) + "\n" for s in SCRIPTS))
    agent = tmp_path / "replay_agent.py"
    agent.write_text(AGENT)
    out, report = tmp_path / "runs.jsonl", tmp_path / "report.html"
    with serving(agent_model) as agents, serving(user_model) as users:
        done = CliRunner(env={"JUDGE_CACHE_DIR": str(tmp_path / "judge-cache")}).invoke(
            main,
            ["run", str(cases), "--models", "scripted", "--base-url", agents.url,
             "--agent", f"{agent}:agent", "--user-model", "user/scripted", "--user-base-url",
             users.url, "--user-cache-dir", str(tmp_path / "cache"), "-o", str(out),
             "--format", "json", "--html", str(report), "--no-preflight", *extra],
        )  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    return {r["case_id"]: r for r in lines(out)}, done, report


def test_faulty_users_are_named_and_faithful_ones_are_not(tmp_path: Path) -> None:
    records, done, report = run_all(tmp_path)
    faulty = [s for s in SCRIPTS if s.fault is not None]
    faithful = [s for s in SCRIPTS if s.fault is None]
    assert len(faulty) == len(faithful) == 20
    kinds = {name: {f["kind"] for f in r["user_faults"]} for name, r in records.items()}
    caught = [s.name for s in faulty if s.fault in kinds[s.name]]
    flagged = [s.name for s in faithful if kinds[s.name]]
    print(f"faulty flagged: {len(caught)}/20; faithful flagged: {len(flagged)}/20 {flagged}")
    assert len(caught) >= 18 and len(flagged) <= 2
    for script in faulty:
        record = records[script.name]
        if script.name in caught:
            assert record["passed"] is None and script.fault in record["user_error"]
    summary = json.loads(done.stdout[done.stdout.index("{") :])
    [model] = summary["models"]
    marked = sum(r["user_error"] is not None for r in records.values())
    assert model["user_errors"] == marked and model["cases"] == 40 - marked
    assert {r["case_id"] for r in model["user_error_runs"]} == {
        n for n, r in records.items() if r["user_error"]
    }
    shown = report.read_text()
    assert "Simulated users' mistakes" in shown and caught[0] in shown


def test_the_judge_names_a_user_that_left_its_brief(tmp_path: Path) -> None:
    """The judge's question (one per run, beside the verdicts) marks the faithful-looking
    run it says no to, and only that one."""

    def judge(body: dict[str, Any]) -> Reply:
        text = json.dumps(body["messages"])
        if "stay within its brief" not in text:
            return answer(body)
        left = f"CUSTOMER: {LEFT}" in text
        return Reply(body=completion("no\nIt asked for a refund its brief does not want."
                                     if left else "yes"))  # fmt: skip

    with serving(judge) as judging:
        records, _, _ = run_all(tmp_path, "--judge", "--judge-base-url", judging.url,
                                "--judge-model", "j")  # fmt: skip
        asked = [r for r in judging.chat_requests if "stay within" in json.dumps(r.body)]
    assert len(asked) == len(SCRIPTS)
    judged = {n for n, r in records.items() if any(f["kind"] == "judge" for f in r["user_faults"])}
    expected = {s.name for s in SCRIPTS if any(m.get("content") == LEFT for m in s.transcript)}
    assert judged == expected
    for name in judged:
        assert "its brief does not want" in records[name]["user_error"]
    for script in SCRIPTS:  # the judge's verdict on the reply to each user turn
        replies = segments(script)
        turns = records[script.name]["turn_verdicts"]
        assert [t["turn"] for t in turns] == list(range(len(turns)))
        assert len(replies) - 1 <= len(turns) <= len(replies)
        assert {t["verdict"] for t in turns} == {"correct"}
