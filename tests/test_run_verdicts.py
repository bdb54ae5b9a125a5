"""Runs compare something, or refuse; and `regrade` gives the verdicts `run` gave (issue 50):
an agent run is graded by `judge check`'s rules plus the final state where a reference
exists; a run with nothing to compare is refused before any request; a regrade with the same
settings is byte-identical to the run's own grading, the tools a server offered included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.chat_server import serving
from tests.test_mcp import ENV, FAULTY, REFUNDS, SHOP, caller, records
from tests.test_mcp import scripted as scripted  # the fixture: the refunds' scripted agents

GRADE = ("tool_selection", "schema_valid", "argument_values", "passed", "tool_assertions",
         "call_scores", "failures", "judge", "decided_by", "judge_dispute",
         "undecided")  # fmt: skip


def cases_file(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def ask(tool: str, n: int, **fields: Any) -> dict[str, Any]:
    """A case whose user message makes the `caller` candidate call `tool`, then answer."""
    return {"id": f"{tool}-{n}", "messages": [{"role": "user", "content": f"call {tool}"}]} | fields


def invoke(*args: str) -> Any:
    return CliRunner().invoke(main, list(args))


def test_an_mcp_run_without_state_compares_the_calls(tmp_path: Path) -> None:
    """Regression: with --mcp and no --mcp-state nor --match, every run passed (both states
    null, so equal), a no_call case that called a failing tool three times included."""
    cases = cases_file(tmp_path / "c.jsonl", [
        ask("fail", 0, expected_behavior="no_call"),
        ask("note", 1, expected_calls=[{"name": "note", "arguments": {"text": "hello"}}]),
        ask("note", 2, expected_calls=[{"name": "note", "arguments": {"text": "bye"}}]),
    ])  # fmt: skip
    out = tmp_path / "runs.jsonl"
    with serving(caller) as candidate:
        done = invoke("run", str(cases), "--models", "m", "--base-url", candidate.url,
                      "--no-preflight", "--mcp", FAULTY, "-o", str(out),
                      "--format", "json")  # fmt: skip
    assert done.exit_code == 0, done.output
    runs = {case: r for (_, case), r in records(out).items()}
    assert runs["fail-0"]["passed"] is False
    assert [f["kind"] for f in runs["fail-0"]["failures"]] == ["UnexpectedCall"]
    assert runs["note-1"]["passed"] is True
    assert runs["note-2"]["passed"] is False  # "hello" where "bye" was expected
    [model] = json.loads(done.stdout)["models"]
    assert (model["tool_errors"], model["runs_with_tool_errors"]) == (1, 1)


@pytest.mark.parametrize(
    "environment", [["--mcp", FAULTY], ["--env", f"{REFUNDS / 'environment.py'}:make_environment"]]
)
def test_an_agent_run_with_nothing_to_compare_is_refused_before_any_request(
    tmp_path: Path, environment: list[str]
) -> None:
    cases = cases_file(tmp_path / "c.jsonl", [ask("note", 0), ask("note", 1)])
    with serving(caller) as candidate:
        done = invoke("run", str(cases), "--models", "m", "--base-url", candidate.url,
                      "--no-preflight", *environment,
                      "-o", str(tmp_path / "runs.jsonl"))  # fmt: skip
        assert candidate.chat_requests == []
    assert done.exit_code == 2, done.output
    assert "an agent run with nothing to compare" in done.stderr
    for way in ("expected_calls", "assert_tools", "--match", "--judge", "--mcp-state"):
        assert way in done.stderr
    assert not (tmp_path / "runs.jsonl").exists()


def test_a_case_with_nothing_of_its_own_is_undecided_with_the_reason(tmp_path: Path) -> None:
    cases = cases_file(tmp_path / "c.jsonl", [
        ask("note", 0, expected_calls=[{"name": "note", "arguments": {"text": "hello"}}]),
        ask("note", 1),
    ])  # fmt: skip
    out = tmp_path / "runs.jsonl"
    with serving(caller) as candidate:
        done = invoke("run", str(cases), "--models", "m", "--base-url", candidate.url,
                      "--no-preflight", "--mcp", FAULTY, "-o", str(out))  # fmt: skip
    assert done.exit_code == 0, done.output
    runs = {case: r for (_, case), r in records(out).items()}
    assert runs["note-0"]["passed"] is True and "undecided" not in runs["note-0"]
    assert runs["note-1"]["passed"] is None
    assert runs["note-1"]["undecided"].startswith("nothing to compare: the case has no")


def _graded(path: Path) -> dict[Any, dict[str, Any]]:
    return {key: {f: r.get(f) for f in GRADE} for key, r in records(path).items()}


@pytest.mark.parametrize(
    "environment",
    [
        pytest.param(["--mcp", SHOP], id="mcp-without-state"),
        pytest.param(["--mcp", SHOP, "--mcp-state", "shop://orders"], id="mcp-with-state"),
        pytest.param(["--env", ENV], id="env"),
        pytest.param(["--env", ENV, "--match", "unordered"], id="env-unordered"),
    ],
)
def test_regrade_gives_the_verdicts_run_gave(
    scripted: str, tmp_path: Path, environment: list[str]
) -> None:
    """Regression: regrading an --mcp run failed every call `UnknownName` (the server's tools
    were not offered to cases without `tools`), and kept a no_call case passed."""
    cases = tmp_path / "cases.jsonl"  # the shop's cases without their tools: the server's
    rows = [json.loads(line) for line in (REFUNDS / "cases.jsonl").read_text().splitlines()]
    strip = environment[0] == "--mcp"
    cases_file(cases, [{k: v for k, v in r.items() if k != "tools" or not strip} for r in rows])
    ran, regraded = tmp_path / "runs.jsonl", tmp_path / "regraded.jsonl"
    done = invoke("run", str(cases), "--models", "careful,reckless", "--base-url", scripted,
                  *environment, "-o", str(ran))  # fmt: skip
    assert done.exit_code == 0, done.output
    again = invoke("regrade", str(ran), str(cases), *environment, "-o", str(regraded))
    assert again.exit_code == 0, again.output
    assert _graded(regraded) == _graded(ran)
    assert not any(f["kind"] == "UnknownName" for r in records(ran).values() for f in r["failures"])


def test_regrade_of_plain_runs_gives_the_verdicts_run_gave(tmp_path: Path) -> None:
    cases = cases_file(tmp_path / "c.jsonl", [
        ask("note", 0, expected_calls=[{"name": "note", "arguments": {"text": "hello"}}],
            tools=[{"type": "function", "function": {"name": "note", "parameters": {
                "type": "object", "properties": {"text": {"type": "string"}}}}}]),
        ask("nope", 1, expected_behavior="no_call", tools=[]),
    ])  # fmt: skip
    ran, regraded = tmp_path / "runs.jsonl", tmp_path / "regraded.jsonl"
    with serving(caller) as candidate:
        done = invoke("run", str(cases), "--models", "m", "--base-url", candidate.url,
                      "--no-preflight", "-o", str(ran))  # fmt: skip
    assert done.exit_code == 0, done.output
    again = invoke("regrade", str(ran), str(cases), "-o", str(regraded))
    assert again.exit_code == 0, again.output
    assert _graded(regraded) == _graded(ran)
    assert [r["passed"] for r in records(ran).values()] == [True, False]
