"""Trajectory semantics the peers' tests expect (issue 51): a message's parallel calls have no
order, `in_order`, `expected_calls: []` under every mode, settings that name nothing, a right
no-call reply passing, and a `MissingCall` that names the calls made."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import Match, check, check_case
from judge.checks._pairing import out_of_order
from judge.cli import main
from tests.helpers import call, kinds, tool

TOOLS = [
    tool("lookup", {"type": "object", "properties": {"id": {"type": "string"}}}),
    tool(
        "refund",
        {"type": "object", "properties": {"id": {"type": "string"}, "time": {"type": "object"}}},
    ),
    tool("notify", {"type": "object"}),
]
Step = tuple[str, dict[str, Any]]
L: Step = ("lookup", {"id": "7"})
R: Step = ("refund", {"id": "7"})
N: Step = ("notify", {})


def turns(
    *messages: list[Step], expected: list[Step] | None = None, **extra: Any
) -> dict[str, Any]:
    """A case whose assistant messages make the calls given, one list per message (parallel
    calls within one); the last list is the final response."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "refund order 7"}]
    for m, made in enumerate(messages[:-1]):
        calls = [call(name, args) | {"id": f"c{m}{i}"} for i, (name, args) in enumerate(made)]
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
        history += [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    last = [call(name, args) for name, args in messages[-1]] if messages else []
    data: dict[str, Any] = {
        "id": "t",
        "messages": history,
        "tools": TOOLS,
        "response": {"content": None, "tool_calls": last},
        **extra,
    }
    if expected is not None:
        data["expected_calls"] = [{"name": n, "arguments": a} for n, a in expected]
    return data


def graded(data: dict[str, Any], mode: str | None = None) -> Any:
    return check_case(data, match=None if mode is None else Match(mode=mode))  # type: ignore[arg-type]


# 1 and 2: order between messages, none among one message's parallel calls


ORDERS: list[Any] = [
    pytest.param([[R, L], [N]], "strict", True, [], id="strict-parallel-swapped-passes"),
    pytest.param([[L, R, N]], "strict", True, [], id="strict-all-parallel-in-the-response"),
    pytest.param([[N, R, L]], "strict", True, [], id="strict-all-parallel-reversed"),
    pytest.param([[R], [L], [N]], "strict", False, [(0, "WrongOrder")], id="strict-messages"),
    pytest.param([[N], [L, R]], "strict", False, [(0, "WrongOrder")], id="strict-late-message"),
    pytest.param([[L], [R, N]], "in_order", True, [], id="in-order-exact"),
    pytest.param([[L], [N], [R], [N]], "in_order", True, [], id="in-order-others-between"),
    pytest.param([[R, L], [N]], "in_order", True, [], id="in-order-parallel-swapped"),
    pytest.param([[R], [L], [N]], "in_order", False, [(0, "WrongOrder")], id="in-order-swapped"),
    pytest.param([[L], [N]], "in_order", False, [(None, "MissingCall")], id="in-order-missing"),
    pytest.param([[L], [L], [R, N]], "strict", False, [(1, "UnexpectedCall")], id="strict-extra"),
]


@pytest.mark.parametrize(("messages", "mode", "passes", "failures"), ORDERS)
def test_order_counts_between_messages_not_within_one(
    messages: list[list[Step]], mode: str, passes: bool, failures: list[tuple[int | None, str]]
) -> None:
    result = graded(turns(*messages, expected=[L, R, N]), mode)
    assert (result.passed, kinds(result)) == (passes, failures)
    assert result.trajectory is not None and result.trajectory.mode == mode


def test_in_order_allows_extra_calls_and_reports_them_nowhere() -> None:
    result = graded(turns([L], [N], [R], [N], expected=[L, R, N]), "in_order")
    report = result.trajectory
    assert report is not None
    assert report.extra == () and report.out_of_order == () and len(report.matched) == 3
    assert result.tool_selection is True and result.passed is True
    # the same path under strict: the extra notify is unexpected
    assert kinds(graded(turns([L], [N], [R], [N], expected=[L, R, N]), "strict")) == [
        (1, "UnexpectedCall")
    ]


def test_out_of_order_frees_calls_of_one_group_only() -> None:
    # calls 0 and 1 in one message, call 2 in the next: the message's calls swap freely
    assert out_of_order([(0, 1), (1, 0), (2, 2)], [0, 0, 1]) == []
    assert out_of_order([(0, 1), (1, 0), (2, 2)]) in ([0], [1])
    assert out_of_order([(0, 2), (1, 0), (2, 1)], [0, 1, 1]) == [0]


# 3: `expected_calls: []` means no call under every mode


@pytest.mark.parametrize("mode", [None, "strict", "unordered", "subset", "superset", "in_order"])
@pytest.mark.parametrize(
    "reference",
    [
        pytest.param({"expected_calls": []}, id="empty-expected-calls"),
        pytest.param({"expected_behavior": "no_call"}, id="no-call-behavior"),
    ],
)
def test_no_call_expected_fails_any_call_under_every_mode(
    mode: str | None, reference: dict[str, Any]
) -> None:
    result = graded(turns([L], [N]) | reference, mode)
    assert result.passed is False
    unexpected = [f for f in result.failures if f.kind == "UnexpectedCall"]
    assert unexpected and "no tool call was expected" in unexpected[0].message


# 4: a setting that names nothing is an error naming it


TARGETS: list[Any] = [
    pytest.param(
        {"overrides": {"refund": ["time.start"]}},
        "/match/overrides/refund/0",
        "'time.start' is no JSON pointer: did you mean '/time/start'?",
        id="dotted-path",
    ),
    pytest.param(
        {"overrides": {"refund": ["/tmie/start"]}},
        "/match/overrides/refund/0",
        "'/tmie/start': 'tmie' is no argument of 'refund' (did you mean 'time'?)",
        id="pointer-to-no-argument",
    ),
    pytest.param(
        {"overrides": {"refund": ["order_id"]}},
        "/match/overrides/refund/0",
        "'order_id' is no argument of 'refund'",
        id="name-of-no-argument",
    ),
    pytest.param(
        {"overrides": {"refnud": "ignore"}},
        "/match/overrides/refnud",
        "'refnud' is none of the case's tools (did you mean 'refund'?)",
        id="override-of-no-tool",
    ),
    pytest.param(
        {"ignore_tools": ["notify", "lookpu"]},
        "/match/ignore_tools/1",
        "'lookpu' is none of the case's tools (did you mean 'lookup'?)",
        id="ignored-no-tool",
    ),
]


@pytest.mark.parametrize(("match", "path", "message"), TARGETS)
def test_a_case_setting_that_names_nothing_is_an_invalid_case(
    match: dict[str, Any], path: str, message: str
) -> None:
    data = turns([L], [R], expected=[L, R], match={"mode": "strict", **match})
    result = graded(data)
    assert kinds(result) == [(None, "InvalidCase")] and result.passed is None
    assert result.failures[0].path == path
    assert message in result.failures[0].message


def test_the_runs_setting_that_names_nothing_says_it_came_from_the_run() -> None:
    data = turns([L], [R], expected=[L, R])
    result = check_case(data, match=Match(mode="strict", overrides={"refund": ["time.start"]}))
    [failure] = result.failures
    assert (failure.kind, failure.path) == ("InvalidCase", "")
    assert failure.message.startswith("--override of 'refund':")
    result = check_case(data, match=Match(ignore_tools=("lookpu",)))
    assert result.failures[0].message == (
        "--ignore-tool: 'lookpu' is none of the case's tools (did you mean 'lookup'?)"
    )
    # a run's tool that this case does not offer, and close to none it does: files mix cases
    # with other tools, so it is no fault of this case
    assert check_case(data, match=Match(mode="strict", ignore_tools=("think",))).passed is True
    own = check_case(data | {"match": {"ignore_tools": ["think"]}})
    assert "(they are 'lookup', 'notify', 'refund')" in own.failures[0].message


@pytest.mark.parametrize(
    "override",
    [
        pytest.param(["id", "/time/start"], id="name-and-pointer-of-listed-arguments"),
        pytest.param("exact", id="a-mode"),
    ],
)
def test_settings_that_name_what_exists_still_grade(override: Any) -> None:
    right = ("refund", {"id": "7", "time": {"start": 1}})
    data = turns([L], [right], expected=[L, right])
    match = Match(mode="strict", overrides={"refund": override}, ignore_tools=("notify",))
    assert check_case(data, match=match).passed is True
    # a path into a tool whose schema lists no properties is not questioned
    said = turns([("notify", {"to": "ana"})], expected=[("notify", {"to": "ana"})])
    assert check_case(said, match=Match(overrides={"notify": ["to"]})).passed is True


# 5: a right no-call reply passes; `ask` stays the judge's


REPLIES: list[Any] = [
    pytest.param("no_call", {"content": "Refunds take 5 days."}, True, False, [], id="no-call"),
    pytest.param(None, {"content": "Refunds take 5 days."}, True, False, [], id="empty-expected"),
    pytest.param("ask", {"content": "Which order?"}, None, True, [], id="ask-is-the-judges"),
    pytest.param("no_call", {"content": " "}, False, False, ["EmptyReply"], id="no-call-empty"),
    pytest.param("ask", {"content": ""}, False, False, ["EmptyReply"], id="ask-empty"),
    pytest.param("no_call", None, None, False, [], id="not-run-yet"),
]


@pytest.mark.parametrize(("behavior", "response", "passed", "needs_judge", "failures"), REPLIES)
@pytest.mark.parametrize("mode", [None, "strict", "superset"])
def test_a_reply_without_a_call_where_none_is_expected(
    behavior: str | None,
    response: dict[str, Any] | None,
    passed: bool | None,
    needs_judge: bool,
    failures: list[str],
    mode: str | None,
) -> None:
    data: dict[str, Any] = {"id": "n", "tools": TOOLS, "expected_behavior": behavior}
    if behavior is None:
        data["expected_calls"] = []
    if response is not None:
        data["response"] = response
    result = graded(data, mode)
    assert (result.passed, result.needs_judge) == (passed, needs_judge)
    assert [f.kind.value for f in result.failures] == failures


def test_the_cli_passes_a_right_no_call_reply_on_its_lean_path(tmp_path: Path) -> None:
    rows = [
        {"id": "answers", "tools": TOOLS, "expected_behavior": "no_call",
         "response": {"content": "Refunds take 5 days."}},
        {"id": "asks", "tools": TOOLS, "expected_behavior": "ask",
         "response": {"content": "Which order?"}},
    ]  # fmt: skip
    out = tmp_path / "r.jsonl"
    summary = _check_cli(tmp_path, rows, "-o", str(out))
    results = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert results["answers"]["passed"] is True and "needs_judge" not in results["answers"]
    assert results["asks"]["passed"] is None and results["asks"]["needs_judge"] is True
    assert (summary["passed"], summary["needs_judge"]) == (1, 1)
    assert [r.to_json_dict() for r in check(rows)] == list(results.values())  # the full path


# 6: a MissingCall names the calls made


def test_missing_call_names_the_calls_made_and_their_pairs() -> None:
    data = turns([L, N], expected=[L, ("lookup", {"id": "8"})])
    [missing] = [f for f in graded(data, "superset").failures if f.kind == "MissingCall"]
    assert missing.path == "/expected_calls/1"
    assert missing.message == (
        "expected a call to 'lookup' (/expected_calls/1), none made; "
        "the calls made: lookup (paired with /expected_calls/0), notify"
    )


def test_missing_call_lists_a_few_calls_and_counts_the_rest() -> None:
    data = turns([N] * 7, expected=[L])
    [missing] = [f for f in graded(data, "superset").failures if f.kind == "MissingCall"]
    assert missing.message.endswith("the calls made: " + ", ".join(["notify"] * 5) + " and 2 more")
    nothing = graded(turns(expected=[L]) | {"response": {"content": "ok"}}, "superset")
    assert nothing.failures[0].message.endswith("none made; no call was made")


# The CLI: the new mode, and a run's setting that names nothing


def _check_cli(tmp_path: Path, rows: list[dict[str, Any]], *args: str) -> Any:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = CliRunner().invoke(main, ["check", str(cases), "--format", "json", *args])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def test_the_cli_takes_in_order_and_refuses_a_run_setting_that_names_nothing(
    tmp_path: Path,
) -> None:
    rows = [
        turns([L], [N], [R], expected=[L, R]) | {"id": "between"},
        turns([R], [L], expected=[L, R]) | {"id": "swapped"},
    ]
    out = tmp_path / "r.jsonl"
    _check_cli(tmp_path, rows, "--match", "in_order", "-o", str(out))
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["passed"] for r in results] == [True, False]
    assert [f["kind"] for f in results[1]["failures"]] == ["WrongOrder"]
    _check_cli(tmp_path, rows, "--match", "in_order", "--ignore-tool", "lookpu", "-o", str(out))
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["passed"] is None for r in results)
    [failure] = results[0]["failures"]
    assert failure["kind"] == "InvalidCase"
    assert failure["message"] == (
        "--ignore-tool: 'lookpu' is none of the case's tools (did you mean 'lookup'?)"
    )
