"""Tools called and avoided (`assert_tools`) and partial credit (`call_scores`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import Match, check, load_cases
from judge.cli import main
from tests.helpers import call, case, grade, kinds, tool

TOOLS = [tool("lookup"), tool("refund"), tool("delete_account"), tool("get_weather")]


def calls(*names: str) -> list[dict[str, Any]]:
    return [call(name, {}) for name in names]


def asserted(names: list[str], spec: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return case(calls(*names), tools=TOOLS, assert_tools=spec, **extra)


def test_without_expected_calls_the_assertions_alone_decide() -> None:
    ok = grade(
        asserted(["lookup", "refund"], {"called": ["refund"], "avoided": ["delete_account"]})
    )
    assert (ok.tool_assertions, ok.passed, ok.failures) == (True, True, ())
    bad = grade(
        asserted(
            ["lookup", "delete_account"], {"called": ["refund"], "avoided": ["delete_account"]}
        )
    )
    assert (bad.tool_assertions, bad.passed) == (False, False)
    assert kinds(bad) == [(1, "ForbiddenCall"), (None, "RequiredToolMissing")]
    missing = next(f for f in bad.failures if f.kind == "RequiredToolMissing")
    assert missing.path == "/assert_tools/called/0" and "'refund'" in missing.message
    forbidden = next(f for f in bad.failures if f.kind == "ForbiddenCall")
    assert forbidden.path == "/assert_tools/avoided/0" and "'delete_account'" in forbidden.message


def test_a_case_without_assertions_has_none() -> None:
    result = grade(case(calls("lookup"), tools=TOOLS))
    assert (result.tool_assertions, result.passed, result.call_scores) == (None, None, None)


def test_counts_and_max_calls_name_the_first_call_over_the_bound() -> None:
    spec = {"counts": {"lookup": {"min": 1, "max": 2}, "refund": {"min": 1}}, "max_calls": 3}
    result = grade(asserted(["lookup", "lookup", "lookup", "get_weather"], spec))
    assert result.tool_assertions is False
    by_path = {f.path: f for f in result.failures}
    over = by_path["/assert_tools/counts/lookup/max"]
    assert (over.call, over.kind) == (2, "CallCount")  # the third lookup is the first too many
    assert over.message == "'lookup' was called 3 times; at most 2 times allowed"
    under = by_path["/assert_tools/counts/refund/min"]
    assert under.call is None and "at least once" in under.message
    total = by_path["/assert_tools/max_calls"]
    assert total.call == 3 and "4 calls" in total.message and "at most 3" in total.message
    assert grade(asserted(["lookup"], {"counts": {"lookup": {"max": 1}}})).passed is True


def test_both_must_hold_with_expected_calls() -> None:
    expected = [{"name": "lookup", "arguments": {}}]
    right = grade(asserted(["lookup"], {"avoided": ["refund"]}) | {"expected_calls": expected})
    assert (right.passed, right.tool_assertions) == (True, True)
    wrong = grade(asserted(["lookup"], {"called": ["refund"]}) | {"expected_calls": expected})
    assert (wrong.argument_values, wrong.tool_assertions, wrong.passed) == (True, False, False)


def test_a_trajectory_counts_every_assistant_turn() -> None:
    data = asserted(["lookup"], {"avoided": ["delete_account"]})
    data["messages"] += [
        {"role": "assistant", "content": None, "tool_calls": calls("delete_account")},
        {"role": "tool", "tool_call_id": "c_delete_account", "content": "{}"},
    ]
    assert grade(data).tool_assertions is True  # the response alone
    whole = grade(data, match=Match(mode="superset"))
    assert whole.tool_assertions is False
    assert kinds(whole) == [(0, "ForbiddenCall")]  # trajectory call 0: in /messages/1
    assert (
        whole.trajectory is not None
        and whole.trajectory.calls[0].source == "/messages/1/tool_calls/0"
    )


def test_bad_assertions_are_a_clear_case_error(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [
        asserted(["lookup"], {"counts": {"lookup": {"min": 2, "max": 1}}}) | {"id": "bounds"},
        asserted(["lookup"], {"avoid": ["refund"]}) | {"id": "typo"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_cases(path, strict=True)  # strict: the misspelt key is refused, not warned
    errors = [str(e) for e in loaded.errors]
    assert len(errors) == 2 and not list(loaded)
    assert (
        "cases.jsonl:1" in errors[0]
        and "bounds" in errors[0]
        and "/assert_tools/counts/lookup" in errors[0]
    )
    assert "max (1) is below min (2)" in errors[0]
    assert "cases.jsonl:2" in errors[1] and "/assert_tools/avoid" in errors[1]


def test_call_scores_against_hand_computed_values() -> None:
    expected = [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "get_weather", "arguments": {"city": "Oslo"}},
        {"name": "lookup", "arguments": {}},
    ]
    made = [
        call("get_weather", {"city": "Oslo"}),
        call("get_weather", {"city": "Rome"}),  # the right tool, a wrong value: not matched
        call("refund", {}),  # not expected
        call("lookup", {}),
    ]
    result = grade(case(made, expected, tools=TOOLS), match=Match(mode="unordered"))
    assert result.passed is False
    scores = result.call_scores
    assert scores is not None
    # matched 2 (Oslo, lookup) of 4 made and 3 expected: P = 1/2, R = 2/3, F1 = 4/7
    assert (scores.matched, scores.precision) == (2, 0.5)
    assert scores.recall == pytest.approx(2 / 3) and scores.f1 == pytest.approx(4 / 7)
    none_made = grade(case([], expected[:1], tools=TOOLS))
    assert none_made.call_scores is not None
    assert none_made.call_scores.model_dump() == {
        "matched": 0,
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "arguments": None,  # no call paired: no argument to score
    }
    assert grade(case(calls("lookup"), [], tools=TOOLS)).call_scores is None  # nothing expected
    bad_json = grade(case([call("lookup", "{oops")], [{"name": "lookup"}], tools=TOOLS))
    assert bad_json.call_scores is not None and bad_json.call_scores.matched == 0


def test_ignored_tools_count_on_neither_side() -> None:
    expected = [{"name": "lookup", "arguments": {}}, {"name": "get_weather", "arguments": {}}]
    made = calls("get_weather", "lookup")
    result = grade(
        case(made, expected, tools=TOOLS),
        match=Match(mode="unordered", ignore_tools=("get_weather",)),
    )
    assert result.call_scores is not None
    assert (
        result.call_scores.matched,
        result.call_scores.precision,
        result.call_scores.recall,
    ) == (1, 1.0, 1.0)


def test_the_summary_shows_mean_f1_and_assertions(tmp_path: Path) -> None:
    expected = [{"name": "lookup", "arguments": {}}, {"name": "refund", "arguments": {}}]
    rows = [
        case(calls("lookup", "refund"), expected, tools=TOOLS) | {"id": "full"},
        case(calls("lookup"), expected, tools=TOOLS) | {"id": "half"},  # P 1, R 1/2, F1 2/3
        asserted(["delete_account"], {"avoided": ["delete_account"]}) | {"id": "forbidden"},
    ]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(
        main, ["check", str(path), "-o", str(tmp_path / "r.jsonl"), "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["mean_f1"] == pytest.approx((1.0 + 2 / 3) / 2)
    assert summary["checks"]["tool_assertions"] == {"true": 0, "false": 1, "null": 2}
    assert summary["failure_kinds"]["ForbiddenCall"] == 1
    table = CliRunner().invoke(main, ["check", str(path), "-o", str(tmp_path / "r2.jsonl")])
    assert "mean call F1" in table.stdout and "0.833" in table.stdout
    frame = check(str(path)).to_pandas()
    assert list(frame["call_f1"].fillna(-1)) == pytest.approx([1.0, 2 / 3, -1])


def test_a_bad_answer_label_is_refused_on_every_path(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    data = case(calls("lookup"), [{"name": "lookup"}], tools=TOOLS, labels={"answer": "maybe"})
    path.write_text(json.dumps(data) + "\n")
    for extra in ([], ["--match", "strict"]):
        out = tmp_path / "r.jsonl"
        done = CliRunner().invoke(main, ["check", str(path), "-o", str(out), *extra])
        assert done.exit_code == 0, done.output
        [result] = [json.loads(line) for line in out.read_text().splitlines()]
        assert [f["kind"] for f in result["failures"]] == ["InvalidCase"], extra
