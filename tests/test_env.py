"""Final-state checks: replaying calls into environments and comparing what they reach."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge import Case, Match, StateEnvironment, ToolFailed, check, replay
from judge.checks._env import load_factory
from tests.helpers import call, kinds, tool

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "refunds"
FACTORY = f"{EXAMPLE / 'environment.py'}:make_environment"


def counter_env() -> StateEnvironment:
    """A tiny world: named counters; `add` changes one, `fail` changes it and then raises."""

    def add(state: dict[str, Any], name: str, by: int = 1) -> int:
        state[name] = state.get(name, 0) + by
        return int(state[name])

    def fail(state: dict[str, Any], name: str) -> None:
        state[name] = -1000  # a half-done write, undone by the environment
        raise ToolFailed(f"{name} is locked")

    def read(state: dict[str, Any], name: str) -> int:
        return int(state.get(name, 0))

    return StateEnvironment({}, {"add": add, "fail": fail, "read": read})


NAMED = {"type": "object", "properties": {"name": {"type": "string"}}}


def counter_case(
    calls: list[tuple[str, dict[str, Any]]], expected: list[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    return {
        "id": "counters",
        "messages": [{"role": "user", "content": "count"}],
        "tools": [tool(name, NAMED) for name in ("add", "fail", "read")],
        "response": {
            "tool_calls": [call(n, a) | {"id": f"c{i}"} for i, (n, a) in enumerate(calls)]
        },
        "expected_calls": [{"name": n, "arguments": a} for n, a in expected],
    }


A: tuple[str, dict[str, Any]] = ("add", {"name": "a"})
B: tuple[str, dict[str, Any]] = ("add", {"name": "b", "by": 2})


def test_two_orders_reach_the_same_state() -> None:
    [result] = check([counter_case([B, A], [A, B])], env=counter_env)
    assert result.passed is True
    assert result.final_state is not None and result.final_state.equal is True
    assert result.tool_selection is None  # only the end state was asked for
    # One message's parallel calls have no order among themselves; two messages' have.
    parallel = counter_case([B, A], [A, B])
    assert check([parallel], env=counter_env, match=Match(mode="strict"))[0].passed is True
    in_turns = counter_case([A], [A, B])
    made = call(*B) | {"id": "c9"}
    in_turns["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": [made]},
        {"role": "tool", "tool_call_id": "c9", "content": "ok"},
    ]
    [strict] = check([in_turns], env=counter_env, match=Match(mode="strict"))
    assert strict.passed is False and strict.final_state is not None
    assert strict.final_state.equal is True and "WrongOrder" in [k for _, k in kinds(strict)]


def test_a_different_state_is_diffed_with_pointers() -> None:
    [result] = check([counter_case([A, A, ("read", {"name": "b"})], [A, B])], env=counter_env)
    assert result.passed is False
    assert result.final_state is not None
    diff = {(d.path, d.change, d.expected, d.actual) for d in result.final_state.diff}
    assert diff == {("/a", "changed", 1, 2), ("/b", "missing", 2, None)}
    assert [(f.kind, f.path) for f in result.failures] == [
        ("StateMismatch", "/a"),
        ("StateMismatch", "/b"),
    ]


def test_a_failing_tool_is_recorded_and_leaves_no_trace() -> None:
    [result] = check([counter_case([("fail", {"name": "a"}), A], [A])], env=counter_env)
    assert result.passed is True  # the refused call changed nothing; the retry did the work
    assert result.final_state is not None
    [error] = result.final_state.errors
    assert (error.call, error.name, error.message) == (0, "fail", "a is locked")


def test_bad_arguments_and_unknown_tools_fail_the_call_not_the_batch() -> None:
    calls: list[tuple[str, Any]] = [("add", {"nme": "a"}), ("nope", {}), ("add", "{not json"), A]
    [result] = check([counter_case(calls, [A])], env=counter_env)
    assert result.final_state is not None and result.final_state.equal  # the retry did the work
    assert result.passed is False  # but a call broken in itself fails the case (issue 50)
    assert {f.kind.value for f in result.failures} == {"UnknownName", "InvalidJson"}
    messages = [e.message for e in result.final_state.errors]
    assert messages[0] == "add: missing a required argument: 'name'"
    assert "unknown tool 'nope'" in messages[1]
    assert messages[2] == "arguments are not JSON"


def test_a_reference_that_cannot_be_replayed_is_an_invalid_case() -> None:
    [result] = check([counter_case([A], [("fail", {"name": "a"})])], env=counter_env)
    assert result.passed is None
    assert kinds(result) == [(None, "InvalidCase")]
    assert "expected call 0 (fail) failed: a is locked" in result.failures[0].message


def test_an_unreplayable_reference_is_unknown_with_a_match_mode_too() -> None:
    data = counter_case([A], [("fail", {"name": "a"})])
    [result] = check([data], env=counter_env, match=Match(mode="unordered"))
    assert result.passed is None
    assert ("InvalidCase", "/expected_calls") in [(f.kind, f.path) for f in result.failures]


def test_a_bug_inside_a_tool_is_not_called_a_wrong_argument() -> None:
    def buggy(state: dict[str, Any], name: str) -> None:
        len(5)  # type: ignore[arg-type]

    def env() -> StateEnvironment:
        return StateEnvironment({}, {"add": buggy})

    [result] = check([counter_case([A], [])], env=env)
    assert result.final_state is not None
    [error] = result.final_state.errors
    assert error.message.startswith("TypeError: object of type 'int' has no len()")


def test_a_broken_environment_fails_its_case_only() -> None:
    def broken() -> object:
        return object()

    rows = [counter_case([A], [A]) | {"id": "one"}, counter_case([A], [A]) | {"id": "two"}]
    results = check(rows, env=broken)  # type: ignore[arg-type]
    assert [r.id for r in results] == ["one", "two"]
    assert all(kinds(r) == [(None, "InvalidCase")] for r in results)
    assert "lacks call(name, arguments) and snapshot()" in results[0].failures[0].message


def test_the_factory_gets_the_case_when_it_takes_one() -> None:
    seen: list[str] = []

    def per_case(case: Case) -> StateEnvironment:
        seen.append(case.id)
        return counter_env()

    check([counter_case([A], [A])], env=per_case)
    assert seen == ["counters", "counters"]  # one fresh environment per replay


def test_replay_directly() -> None:
    case = Case.model_validate(counter_case([], [A, A]))
    report = replay(counter_env, case, case.expected_calls or (), [("add", {"name": "a"})])
    assert report.equal is False
    assert [(d.path, d.expected, d.actual) for d in report.diff] == [("/a", 2, 1)]


def test_reference_matchers_replay_their_first_option() -> None:
    expected = [("add", {"name": {"$any": ["a", "A"]}, "by": {"$any": [], "$optional": True}})]
    [result] = check([counter_case([A], expected)], env=counter_env)
    assert result.passed is True


def test_load_factory_errors_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        load_factory(str(tmp_path / "missing.py") + ":make")
    with pytest.raises(ValueError, match="has no 'nothing'"):
        load_factory(f"{EXAMPLE / 'environment.py'}:nothing")
    with pytest.raises(ValueError, match="expected module:attribute"):
        load_factory("justaname")


# What each example case is meant to show, per way of grading (`examples/refunds/cases.jsonl`).
EXPECTED = {
    "refund-by-the-book": dict(strict=True, unordered=True, superset=True, env=True),
    "refund-lookup-last": dict(strict=False, unordered=True, superset=True, env=True),
    "refund-wrong-order": dict(strict=False, unordered=False, superset=False, env=False),
    "refund-retried-after-refusal": dict(strict=False, unordered=False, superset=True, env=True),
    "two-refunds-swapped": dict(strict=False, unordered=True, superset=True, env=True),
    "refund-without-check": dict(strict=False, unordered=False, superset=False, env=False),
    "ineligible-refund-attempted": dict(strict=False, unordered=False, superset=True, env=True),
    "partial-refund-lookups-ignored": dict(strict=False, unordered=False, superset=True, env=True),
}


def run(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "judge", "check", str(EXAMPLE / "cases.jsonl"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("how", ["strict", "unordered", "superset", "env"])
def test_the_worked_example(how: str) -> None:
    args = ("--env", FACTORY) if how == "env" else ("--match", how)
    results = run(*args)
    assert {r["id"]: r["passed"] for r in results} == {k: v[how] for k, v in EXPECTED.items()}


def test_the_example_by_module_path_and_both_checks_together() -> None:
    results = run("--env", "examples.refunds.environment:make_environment", "--match", "unordered")
    by_id = {r["id"]: r for r in results}
    assert by_id["two-refunds-swapped"]["passed"] is True
    assert by_id["refund-retried-after-refusal"]["passed"] is False  # state ok, path not
    assert by_id["refund-retried-after-refusal"]["final_state"]["equal"] is True
    wrong = by_id["refund-wrong-order"]
    assert {d["path"] for d in wrong["final_state"]["diff"]} == {
        "/ord_1001/status",
        "/ord_1001/refunded",
        "/ord_1002/status",
        "/ord_1002/refunded",
    }


def test_an_environment_that_cannot_load_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "judge", "check", str(EXAMPLE / "cases.jsonl"), "--env", "x:y"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "cannot import 'x'" in done.stderr


def test_published_schemas_cover_trajectory_cases_and_results() -> None:
    import jsonschema

    from judge import json_schema

    case_schema, result_schema = json_schema("case"), json_schema("result")
    cases = jsonschema.validators.validator_for(case_schema)(case_schema)
    results = jsonschema.validators.validator_for(result_schema)(result_schema)
    for line in (EXAMPLE / "cases.jsonl").read_text().splitlines():
        data = json.loads(line)
        for match in ("strict", {"mode": "subset", "overrides": {"a": ["/x"], "b": "ignore"}}):
            assert not list(cases.iter_errors(data | {"match": match}))
        assert list(cases.iter_errors(data | {"match": "sorted"}))
    for result in run("--env", FACTORY, "--match", "strict"):
        assert result["trajectory"] and result["final_state"]
        assert not list(results.iter_errors(result)), result["id"]


@pytest.mark.parametrize(
    "content, passed, needs_judge",
    [
        pytest.param("Which counter?", None, True, id="asks"),
        pytest.param("", False, False, id="says-nothing"),
    ],
)
def test_an_ask_case_is_not_passed_by_its_final_state_alone(
    content: str, passed: bool | None, needs_judge: bool
) -> None:
    data = counter_case([], []) | {"expected_behavior": "ask", "response": {"content": content}}
    data.pop("expected_calls")
    [result] = check([data], env=counter_env)
    assert (result.passed, result.needs_judge) == (passed, needs_judge)
