"""Trajectories: match modes, argument modes, per-tool overrides, and how the path differs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import Match, UnknownFieldWarning, check, load_cases
from judge.cases._match import parse_override
from judge.checks._pairing import out_of_order
from judge.cli import main
from tests.helpers import WEATHER, call, grade, kinds, tool

TOOLS = [
    tool("lookup", {"type": "object", "properties": {"id": {"type": "string"}}}),
    tool("refund", {"type": "object"}),
    tool("notify", {"type": "object"}),
]


def step(name: str, arguments: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """An assistant turn making one call, and the tool's reply."""
    made = call(name, arguments) | {"id": f"c{n}"}
    return [
        {"role": "assistant", "content": None, "tool_calls": [made]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": "ok"},
    ]


def path_case(
    calls: list[tuple[str, dict[str, Any]]],
    expected: list[tuple[str, dict[str, Any]]],
    **extra: Any,
) -> dict[str, Any]:
    """All calls but the last in earlier turns; the last in the final response."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "refund order 7"}]
    for n, (name, arguments) in enumerate(calls[:-1]):
        messages += step(name, arguments, n)
    last = [call(*calls[-1])] if calls else []
    return {
        "id": "path",
        "messages": messages,
        "tools": TOOLS,
        "response": {"content": None, "tool_calls": last},
        "expected_calls": [{"name": n, "arguments": a} for n, a in expected],
        **extra,
    }


Step = tuple[str, dict[str, Any]]
L: Step = ("lookup", {"id": "7"})
R: Step = ("refund", {"id": "7", "amount": 5})
N: Step = ("notify", {})
REFERENCE = [L, R, N]

MODES: list[tuple[list[Step], str, bool, list[tuple[int | None, str]]]] = [
    # (candidate path, mode, passes, failures)
    ([L, R, N], "strict", True, []),
    ([R, L, N], "strict", False, [(0, "WrongOrder")]),
    ([L, R], "strict", False, [(None, "MissingCall")]),
    ([L, L, R, N], "strict", False, [(1, "UnexpectedCall")]),
    ([R, L, N], "unordered", True, []),
    ([L, R], "unordered", False, [(None, "MissingCall")]),
    ([L, R, N, N], "unordered", False, [(2, "UnexpectedCall")]),
    ([L, R], "subset", True, []),
    ([N], "subset", True, []),
    ([L, R, N, N], "subset", False, [(2, "UnexpectedCall")]),
    ([L, L, R, N], "superset", True, []),
    ([N, R, L], "superset", True, []),
    ([L, R], "superset", False, [(None, "MissingCall")]),
]


@pytest.mark.parametrize(
    ("path", "mode", "passes", "failures"),
    MODES,
    ids=[f"{m}-{'-'.join(c[0] for c in p)}" for p, m, _, _ in MODES],
)
def test_match_modes(
    path: list[tuple[str, dict[str, Any]]],
    mode: str,
    passes: bool,
    failures: list[tuple[int | None, str]],
) -> None:
    result = grade(path_case(path, REFERENCE), match=Match(mode=mode))  # type: ignore[arg-type]
    assert result.passed is passes
    assert kinds(result) == failures
    assert result.trajectory is not None and result.trajectory.mode == mode
    assert [c.name for c in result.trajectory.calls] == [name for name, _ in path]


def test_the_report_says_what_is_missing_extra_and_out_of_order() -> None:
    result = grade(path_case([N, L, L, R], REFERENCE), match=Match(mode="strict"))
    report = result.trajectory
    assert report is not None
    assert report.matched == ((0, 2), (1, 0), (3, 1))
    assert report.extra == (2,)
    assert report.missing == ()
    assert report.out_of_order == (0,)
    sources = [c.source for c in report.calls]
    assert sources[0] == "/messages/1/tool_calls/0"
    assert sources[-1] == "/response/tool_calls/0"
    wrong_order = next(f for f in result.failures if f.kind == "WrongOrder")
    assert "it is step 3 of lookup -> refund -> notify (/expected_calls/2)" in wrong_order.message
    assert result.tool_selection is False and result.passed is False


def test_without_a_mode_only_the_response_is_graded() -> None:
    data = path_case([L, R], [R])
    assert grade(data).passed is True  # the lookup in an earlier turn is not looked at
    assert grade(data).trajectory is None
    assert grade(data, match=Match(mode="unordered")).passed is False


def test_same_calls_pair_in_reference_order() -> None:
    # Two identical calls: the pairing that keeps the order is chosen, so strict passes.
    same: Step = ("notify", {"to": "ana"})
    result = grade(path_case([same, same], [same, same]), match=Match(mode="strict"))
    assert result.passed is True
    # A refused first attempt, then the whole right path: only the retry is extra.
    result = grade(path_case([R, L, R, N], REFERENCE), match=Match(mode="strict"))
    assert kinds(result) == [(0, "UnexpectedCall")]


def test_out_of_order_keeps_the_longest_ordered_run() -> None:
    assert out_of_order([(0, 0), (1, 1), (2, 2)]) == []
    assert out_of_order([(0, 2), (1, 0), (2, 1)]) == [0]
    assert out_of_order([(0, 1), (1, 0)]) == [1] or out_of_order([(0, 1), (1, 0)]) == [0]
    assert len(out_of_order([(0, 3), (1, 2), (2, 1), (3, 0)])) == 3


ARGS = [
    # (candidate arguments, argument mode, passes, failures)
    ({"id": "7", "amount": 5}, "exact", True, []),
    ({"id": "7", "amount": 5, "note": "x"}, "exact", False, [(0, "WrongValue")]),
    ({"id": "7"}, "exact", False, [(0, "MissingArgument")]),
    ({"id": "7", "amount": 5.0}, "exact", True, []),
    ({"id": "7", "amount": 5, "note": "x"}, "superset", True, []),
    ({"id": "7"}, "superset", False, [(0, "MissingArgument")]),
    ({"id": "7"}, "subset", True, []),
    ({"id": "7", "note": "x"}, "subset", False, [(0, "WrongValue")]),
    ({"id": "8"}, "subset", False, [(0, "WrongValue")]),
    ({"id": "8", "zzz": 1}, "ignore", True, []),
]


@pytest.mark.parametrize(("arguments", "args", "passes", "failures"), ARGS)
def test_argument_modes(
    arguments: dict[str, Any], args: str, passes: bool, failures: list[tuple[int, str]]
) -> None:
    data = path_case([("refund", arguments)], [R])
    result = grade(data, match=Match(mode="strict", args=args))  # type: ignore[arg-type]
    assert result.passed is passes
    assert kinds(result) == failures


def test_exact_is_the_default_argument_mode_with_a_match_mode() -> None:
    data = path_case([("refund", {"id": "7", "amount": 5, "note": "x"})], [R])
    assert grade(data, match=Match(mode="strict")).passed is False
    assert grade(data).passed is True  # the plain check leaves extras to the schema


def test_a_mode_set_for_one_tool_overrides_the_run() -> None:
    data = path_case([("lookup", {"id": "9"}), ("refund", {"id": "7", "amount": 5})], [L, R])
    strict = Match(mode="strict")
    assert grade(data, match=strict).passed is False
    assert grade(data, match=Match(mode="strict", overrides={"lookup": "ignore"})).passed


def test_a_list_of_paths_compares_only_those() -> None:
    expected = ("refund", {"id": "7", "amount": 5, "address": {"city": "Oslo", "zip": "1"}})
    given = ("refund", {"id": "7", "amount": 6, "address": {"city": "Oslo", "zip": "2"}})
    data = path_case([given], [expected])
    ok = Match(mode="strict", overrides={"refund": ["id", "/address/city"]})
    assert grade(data, match=ok).passed is True
    bad = Match(mode="strict", overrides={"refund": ["/address/zip"]})
    result = grade(data, match=bad)
    assert result.passed is False
    assert [(f.kind, f.path) for f in result.failures] == [("WrongValue", "/address/zip")]


def test_a_callable_decides_for_its_tool() -> None:
    def close_amount(got: dict[str, Any], want: dict[str, Any]) -> bool:
        return bool(got["id"] == want["id"] and abs(got["amount"] - want["amount"]) <= 1)

    def explodes(got: dict[str, Any], want: dict[str, Any]) -> bool:
        raise KeyError("amount")

    near = path_case([("refund", {"id": "7", "amount": 6})], [R])
    far = path_case([("refund", {"id": "7", "amount": 9})], [R])
    match = Match(mode="strict", overrides={"refund": close_amount})
    assert grade(near, match=match).passed is True
    result = grade(far, match=match)
    assert result.passed is False
    assert "rejected by" in result.failures[0].message
    assert "close_amount" in result.failures[0].message
    result = grade(near, match=Match(mode="strict", overrides={"refund": explodes}))
    assert result.passed is False and "KeyError" in result.failures[0].message


# Regression (issue 52): a predicate that answered "no" passed the call, by its truthiness.
@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        pytest.param("no", "'no' (str)", id="a-string-that-says-no"),
        pytest.param(None, "None (NoneType)", id="none"),
        pytest.param(1, "1 (int)", id="one"),
        pytest.param([], "[] (list)", id="an-empty-list"),
    ],
)
def test_a_predicate_that_answers_no_bool_fails_the_call_naming_it(answer: Any, shown: str) -> None:
    def says(got: dict[str, Any], want: dict[str, Any]) -> Any:
        return answer

    data = path_case([("refund", {"id": "7", "amount": 5})], [R])
    result = grade(data, match=Match(mode="strict", overrides={"refund": says}))
    assert result.passed is False
    [failure] = result.failures
    assert failure.kind == "WrongValue"
    named = f"tests.test_trajectory:{says.__qualname__}"
    assert failure.message.startswith(f"{named} returned {shown}, not True or False")


def test_numpy_booleans_are_a_predicates_verdict() -> None:
    np = pytest.importorskip("numpy")
    data = path_case([("refund", {"id": "7", "amount": 5})], [R])
    for answer, passes in ((np.True_, True), (np.False_, False)):

        def says(got: dict[str, Any], want: dict[str, Any], said: Any = answer) -> Any:
            return said

        match = Match(mode="strict", overrides={"refund": says})
        assert grade(data, match=match).passed is passes


def test_the_command_line_names_a_predicate_as_it_was_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "issue52_predicates.py").write_text("def says_no(got, want):\n    return 'no'\n")
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(path_case([R], [R])) + "\n")
    monkeypatch.chdir(tmp_path)
    for spec, named in (
        ("issue52_predicates:says_no", "issue52_predicates:says_no"),
        ("issue52_predicates.py:says_no", f"{tmp_path / 'issue52_predicates.py'}:says_no"),
    ):
        out = tmp_path / "out.jsonl"
        command = ["check", str(cases), "--override", f"refund={spec}", "-o", str(out)]
        done = CliRunner().invoke(main, command)
        assert done.exit_code == 0, done.output
        [failure] = json.loads(out.read_text())["failures"]
        assert failure["message"].startswith(f"{named} returned 'no' (str), not True or False")


def test_ignored_tools_are_neither_required_nor_extra() -> None:
    data = path_case([L, L, R, N], [R, N])
    assert grade(data, match=Match(mode="strict")).passed is False
    result = grade(data, match=Match(mode="strict", ignore_tools=("lookup",)))
    assert result.passed is True
    assert result.trajectory is not None and result.trajectory.ignored == (0, 1)


def test_a_case_sets_its_own_match_and_wins_field_by_field() -> None:
    data = path_case([R, L, N], REFERENCE, match={"mode": "unordered"})
    assert grade(data).passed is True
    assert grade(data, match=Match(mode="strict")).passed is True  # the case's mode wins
    extra_arg = path_case([("refund", {"id": "7", "amount": 5, "x": 1})], [R], match="strict")
    assert grade(extra_arg).passed is False  # a plain string is the mode; args default exact
    assert grade(extra_arg, match=Match(args="superset")).passed is True  # the run's args


def test_a_bad_match_in_a_case_is_an_invalid_case() -> None:
    [result] = check([path_case([L], [L], match={"mode": "sorted"})])
    assert kinds(result) == [(None, "InvalidCase")]
    assert "/match/mode" in result.failures[0].path


def test_anthropic_assistant_turns_count_too() -> None:
    data = path_case([R], REFERENCE)
    data["messages"][1:1] = [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {"id": "7"}}],
        }
    ]
    data["response"]["tool_calls"].append(call("notify", {}))
    result = grade(data, match=Match(mode="strict"))
    assert result.passed is True, result.failures
    assert result.trajectory is not None
    assert result.trajectory.calls[0].source == "/messages/1"


def test_a_malformed_assistant_turn_is_reported_where_it_is() -> None:
    data = path_case([L, R], [L, R])
    data["messages"][1]["tool_calls"] = "lookup"
    result = grade(data, match=Match(mode="strict"))
    assert kinds(result) == [(None, "InvalidCase")]
    assert result.failures[0].path == "/messages/1/tool_calls"


def test_structural_failures_are_numbered_along_the_path() -> None:
    data = path_case([("lookup", {"id": 7}), R], [L, R])
    result = grade(data, match=Match(mode="unordered"))
    assert (0, "SchemaMismatch") in kinds(result)
    assert result.schema_valid is False and result.passed is False


def test_expected_nothing() -> None:
    # `expected_calls: []` means no call, under superset too (issue 51)
    for mode in ("superset", "subset"):
        result = grade(path_case([L], []), match=Match(mode=mode))
        assert result.passed is False and kinds(result) == [(0, "UnexpectedCall")]


def test_parse_override() -> None:
    assert parse_override("refund=ignore") == ("refund", "ignore")
    assert parse_override("refund=/a/b, id") == ("refund", ["/a/b", "id"])
    tool_name, compare = parse_override("refund=json:dumps")
    assert tool_name == "refund" and compare == json.dumps  # type: ignore[comparison-overlap]
    with pytest.raises(ValueError, match="TOOL=MODE"):
        parse_override("refund")
    with pytest.raises(ValueError, match="cannot import"):
        parse_override("refund=no_such_module_here:f")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "judge", *args], capture_output=True, text=True, cwd=cwd
    )


def lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_cli_match_flags(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    rows = [
        path_case([R, L, N], REFERENCE) | {"id": "swapped"},
        path_case([L, L, R, N], REFERENCE) | {"id": "twice"},
        path_case([("refund", {"id": "7", "amount": 5, "x": 1}), N], [R, N]) | {"id": "extra"},
    ]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    strict = cli("check", str(cases), "--match", "strict")
    assert strict.returncode == 0, strict.stderr
    out = {r["id"]: r for r in lines(strict.stdout)}
    assert not any(r["passed"] for r in out.values())
    assert out["swapped"]["trajectory"]["out_of_order"] == [0]
    assert out["twice"]["trajectory"]["extra"] == [1]
    assert "WrongOrder" in strict.stderr  # the summary counts the new kind

    loose = cli(
        "check",
        str(cases),
        "--match",
        "unordered",
        "--args-match",
        "superset",
        "--ignore-tool",
        "lookup",
    )
    assert [r["passed"] for r in lines(loose.stdout)] == [True, True, True]

    paths = cli("check", str(cases), "--match", "superset", "--override", "refund=id,amount")
    assert [r["passed"] for r in lines(paths.stdout)] == [True, True, True]
    exact = cli(
        "check",
        str(cases),
        "--match",
        "superset",
        "--args-match",
        "superset",
        "--override",
        "refund=exact",
    )
    assert [r["passed"] for r in lines(exact.stdout)] == [True, True, False]

    bad = cli("check", str(cases), "--override", "refund=nowhere_module:f")
    assert bad.returncode == 2 and "cannot import" in bad.stderr
    bad_mode = cli("check", str(cases), "--match", "sorted")
    assert bad_mode.returncode == 2 and "sorted" in bad_mode.stderr


def test_results_keep_the_plain_format_without_a_mode() -> None:
    [result] = check([path_case([R], [R])])
    assert "trajectory" not in result.to_json_dict()


def test_the_default_argument_mode_does_not_depend_on_where_settings_come_from() -> None:
    extra = ("refund", {"id": "7", "amount": 5, "x": 1})
    # No mode, from the case or from the run: the plain check's rule (extras are fine).
    assert grade(path_case([extra], [R], match={"ignore_tools": ["notify"]})).passed is True
    assert grade(path_case([extra], [R]), match=Match(ignore_tools=("notify",))).passed is True
    # A mode from the case: exact, whatever unrelated setting the run brings.
    strict_case = path_case([extra], [R], match="strict")
    assert grade(strict_case).passed is False
    assert grade(strict_case, match=Match(ignore_tools=("notify",))).passed is False


def test_wrong_order_numbers_steps_among_the_compared_reference_calls() -> None:
    data = path_case([N, R], [L, R, N])
    result = grade(data, match=Match(mode="strict", ignore_tools=("lookup",)))
    [late] = [f for f in result.failures if f.kind == "WrongOrder"]
    assert "step 2 of refund -> notify (/expected_calls/2)" in late.message


def test_only_documented_match_keys_are_read() -> None:
    data = path_case([L], [L], match={"trajectory": "strict"})
    with pytest.warns(UnknownFieldWarning, match="unknown field /match/trajectory"):
        [warned] = check([data])
    assert warned.trajectory is None  # the key was not read: no mode
    [refused] = check(load_cases([data], strict=True).errors)
    assert kinds(refused) == [(None, "InvalidCase")]
    assert refused.failures[0].path == "/match/trajectory"


def test_weather_tools_still_work_with_modes() -> None:
    data = {
        "id": "w",
        "messages": [{"role": "user", "content": "weather"}],
        "tools": [tool("get_weather", WEATHER)],
        "response": {"tool_calls": [call("get_weather", {"city": "Paris"})]},
        "expected_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    }
    for mode in ("strict", "unordered", "subset", "superset", "in_order"):
        assert grade(data, match=Match(mode=mode)).passed is True
