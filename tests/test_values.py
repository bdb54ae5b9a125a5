"""Expected argument values: JSON equality, `$any` / `$optional`, and per-argument rules."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest
from click.testing import CliRunner

from judge import ArgumentRule, Rules, check, json_equal
from judge.cli import main
from tests.helpers import call, case, grade, kinds, tool

ANY = {"type": "object"}  # accepts any object: these tests are about values, not the schema


def values(
    actual: dict[str, Any], expected: dict[str, Any], rules: Rules | None = None
) -> list[tuple[str, str]]:
    result = grade(
        case([call("f", actual)], [{"name": "f", "arguments": expected}], tools=[tool("f", ANY)]),
        rules=rules,
    )
    assert result.schema_valid is True
    assert result.argument_values is (not result.failures)
    return [(f.kind.value, f.path) for f in result.failures]


@pytest.mark.parametrize(
    ("actual", "expected", "equal"),
    [
        pytest.param(1, 1.0, True, id="int-equals-float"),
        pytest.param(True, 1, False, id="boolean-never-equals-a-number"),
        pytest.param(0, False, False, id="zero-is-not-false"),
        pytest.param([True], [1], False, id="boolean-in-an-array"),
        pytest.param("Paris", "paris", False, id="no-case-folding"),
        pytest.param(" Paris", "Paris", False, id="no-trimming"),
        pytest.param("Cafe\u0301", "Caf\u00e9", False, id="no-unicode-normalisation"),
        pytest.param({"a": 1, "b": 2}, {"b": 2, "a": 1}, True, id="objects-by-key-set"),
        pytest.param({"a": 1, "b": None}, {"a": 1}, False, id="extra-key-even-if-null"),
        pytest.param([1, 2], [2, 1], False, id="arrays-in-order"),
        pytest.param(None, None, True, id="null-equals-null"),
        pytest.param(None, "", False, id="null-is-not-empty"),
    ],
)
def test_json_equality(actual: Any, expected: Any, equal: bool) -> None:
    assert json_equal(actual, expected) is equal
    assert (values({"x": actual}, {"x": expected}) == []) is equal


@pytest.mark.parametrize(
    ("actual", "expected", "found"),
    [
        pytest.param({"x": 2}, {"x": {"$any": [1, 2]}}, [], id="any-of-several"),
        pytest.param(
            {"x": 3}, {"x": {"$any": [1, 2]}}, [("WrongValue", "/x")], id="none-of-several"
        ),
        pytest.param({}, {"x": {"$any": [1], "$optional": True}}, [], id="optional-left-out"),
        pytest.param({"x": 1}, {"x": {"$any": [1], "$optional": True}}, [], id="optional-given"),
        pytest.param({}, {"x": 1}, [("MissingArgument", "/x")], id="required-left-out"),
        pytest.param(
            {},
            {"x": {"$any": [1, 2]}},
            [("MissingArgument", "/x")],
            id="any-without-optional-is-required",
        ),
        pytest.param({}, {"x": {"$any": [], "$optional": True}}, [], id="must-be-left-out-and-is"),
        pytest.param(
            {"x": 1},
            {"x": {"$any": [], "$optional": True}},
            [("WrongValue", "/x")],
            id="must-be-left-out-but-given",
        ),
        pytest.param({"x": 1, "y": 2}, {"x": 1}, [], id="unlisted-argument-is-fine"),
        pytest.param(
            {"x": {"k": 1, "extra": 2}},
            {"x": {"k": 1}},
            [("WrongValue", "/x")],
            id="extra-nested-key-is-wrong-value",
        ),
        pytest.param(
            {"x": {}},
            {"x": {"k": 1}},
            [("WrongValue", "/x")],
            id="missing-nested-field-is-wrong-value",
        ),
        pytest.param(
            {"x": {"k": 1}}, {"x": {"k": {"$any": [1, 2]}}}, [], id="nested-any-is-a-matcher"
        ),
        pytest.param(
            {"x": {"k": 3}},
            {"x": {"k": {"$any": [1, 2]}}},
            [("WrongValue", "/x/k")],
            id="a-nested-matcher-names-the-nested-place",
        ),
        pytest.param(
            {"x": {"k": {"$any": [1, 2]}}},
            {"x": {"k": {"$any": [1, 2]}}},
            [("WrongValue", "/x/k")],
            id="a-matcher-sent-as-a-value-is-no-option",
        ),
        pytest.param({"a/b": 1}, {"a/b": 2}, [("WrongValue", "/a~1b")], id="pointer-escapes-slash"),
    ],
)
def test_expected_values(
    actual: dict[str, Any], expected: dict[str, Any], found: list[tuple[str, str]]
) -> None:
    assert values(actual, expected) == found


def test_extra_argument_is_a_failure_when_the_schema_forbids_it() -> None:
    strict = {"type": "object", "properties": {"x": {}}, "additionalProperties": False}
    result = grade(
        case(
            [call("f", {"x": 1, "y": 2})],
            [{"name": "f", "arguments": {"x": 1}}],
            tools=[tool("f", strict)],
        )
    )
    assert kinds(result) == [(0, "SchemaMismatch")]
    assert result.argument_values is False


def test_wrong_value_message_says_what_and_what_was_expected() -> None:
    result = grade(
        case(
            [call("f", {"city": "Pariss"})],
            [{"name": "f", "arguments": {"city": {"$any": ["Paris", "paris"]}}}],
            tools=[tool("f", ANY)],
        )
    )
    assert result.failures[0].message == (
        'argument \'city\' is "Pariss", expected one of ["Paris","paris"]'
    )


@pytest.mark.parametrize(
    ("rule", "actual", "expected", "equal"),
    [
        pytest.param(
            ArgumentRule(case_sensitive=False), "PARIS", "paris", True, id="case-insensitive"
        ),
        pytest.param(
            ArgumentRule(case_sensitive=False),
            ["A", "b"],
            ["a", "B"],
            True,
            id="case-insensitive-nested",
        ),
        pytest.param(ArgumentRule(whitespace="strip"), "  Paris ", "Paris", True, id="strip"),
        pytest.param(
            ArgumentRule(whitespace="strip"),
            "New  York",
            "New York",
            False,
            id="strip-keeps-inner-runs",
        ),
        pytest.param(
            ArgumentRule(whitespace="collapse"), " New \t York", "New York", True, id="collapse"
        ),
        pytest.param(
            ArgumentRule(unicode_form="NFC"), "Cafe\u0301", "Caf\u00e9", True, id="unicode-nfc"
        ),
        pytest.param(ArgumentRule(abs_tol=0.01), 3.141, 3.14, True, id="abs-tolerance"),
        pytest.param(ArgumentRule(abs_tol=0.0001), 3.141, 3.14, False, id="outside-tolerance"),
        pytest.param(ArgumentRule(rel_tol=0.05), 102, 100, True, id="rel-tolerance"),
        pytest.param(ArgumentRule(abs_tol=1), True, 1, False, id="tolerance-never-for-booleans"),
        pytest.param(ArgumentRule(int_float_equal=False), 3.0, 3, False, id="int-float-strict"),
        pytest.param(ArgumentRule(), 3.0, 3, True, id="int-float-equal-by-default"),
        pytest.param(ArgumentRule(ignore=True), "anything", "else", True, id="ignore"),
        pytest.param(
            ArgumentRule(compare=lambda a, e: str(a).startswith(e)),
            "Paris, FR",
            "Paris",
            True,
            id="custom-callable",
        ),
    ],
)
def test_argument_rules(rule: ArgumentRule, actual: Any, expected: Any, equal: bool) -> None:
    assert (values({"x": actual}, {"x": expected}, rules={"f": {"x": rule}}) == []) is equal


def test_a_rule_whose_predicate_answers_no_bool_is_refused_naming_it() -> None:
    # Regression (issue 52): `"no"` was a match, by its truthiness.
    def says_no(actual: Any, expected: Any) -> Any:
        return "no"

    rule = ArgumentRule(compare=says_no)
    with pytest.raises(TypeError, match=r"test_values:.*says_no returned 'no' \(str\), not True"):
        values({"x": 1}, {"x": 2}, rules={"f": {"x": rule}})


def test_ignored_argument_may_be_left_out() -> None:
    assert values({}, {"x": 1}, rules={"f": {"x": ArgumentRule(ignore=True)}}) == []


def test_rule_applies_to_each_any_option() -> None:
    rules = {"f": {"x": ArgumentRule(case_sensitive=False)}}
    assert values({"x": "ROME"}, {"x": {"$any": ["paris", "rome"]}}, rules) == []


@pytest.mark.parametrize(
    ("rules", "equal"),
    [
        pytest.param({"f": {"x": ArgumentRule(case_sensitive=False)}}, True, id="this-tool"),
        pytest.param({"*": {"x": ArgumentRule(case_sensitive=False)}}, True, id="any-tool"),
        pytest.param({"f": {"*": ArgumentRule(case_sensitive=False)}}, True, id="any-argument"),
        pytest.param({"g": {"x": ArgumentRule(case_sensitive=False)}}, False, id="other-tool"),
        pytest.param({"f": {"y": ArgumentRule(case_sensitive=False)}}, False, id="other-arg"),
        pytest.param(
            {"*": {"x": ArgumentRule(case_sensitive=False)}, "f": {"x": ArgumentRule()}},
            False,
            id="tool-rule-wins-over-any-tool",
        ),
    ],
)
def test_rules_are_per_tool(rules: Rules, equal: bool) -> None:
    assert (values({"x": "A"}, {"x": "a"}, rules=rules) == []) is equal


BIG = 123456789012345678901234567890  # past 64 bits: orjson would read it as a float


@pytest.mark.parametrize(
    ("sent", "expected", "passed"),
    [
        pytest.param(f'{{"n": {BIG + 1}}}', BIG, False, id="one-more-is-wrong"),
        pytest.param(f'{{"n": {BIG}}}', BIG, True, id="the-same-integer"),
        pytest.param(f'{{"n": {BIG}}}', float(BIG), False, id="not-the-float-it-rounds-to"),
        pytest.param(f'{{"n": {-BIG - 1}}}', -BIG, False, id="negative"),
    ],
)
def test_integers_of_any_size_compare_exactly(
    sent: str, expected: Any, passed: bool, tmp_path: Path
) -> None:
    number = tool("f", {"type": "object", "properties": {"n": {"type": "integer"}}})
    data = case([call("f", sent)], [{"name": "f", "arguments": {"n": expected}}], tools=[number])
    assert grade(data).passed is passed
    # the same case read from a JSON line: expected values are read exactly too
    line = f'{{"id": "big", "tools": [{orjson.dumps(number).decode()}], '
    line += f'"response": [{{"name": "f", "arguments": {sent}}}], '
    line += f'"expected_calls": [{{"name": "f", "arguments": {{"n": {expected}}}}}]}}'
    (tmp_path / "big.jsonl").write_text(line + "\n")
    [result] = check(tmp_path / "big.jsonl")
    assert result.passed is passed, result.failures


def test_a_big_integer_in_a_schema_and_a_call_never_stops_the_batch(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": BIG}}}
    response = [{"name": "f", "arguments": {"n": BIG * 10}}]
    line = {"id": "big", "tools": [tool("f", schema)], "response": response}
    cases = tmp_path / "big.jsonl"
    cases.write_bytes(msgspec.json.encode(line) + b"\n" + msgspec.json.encode(line) + b"\n")
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(main, ["check", str(cases), "-o", str(out)])
    assert result.exit_code == 0, result.output
    for written in out.read_text().splitlines():
        [failure] = orjson.loads(written)["failures"]
        assert failure["kind"] == "SchemaMismatch" and str(BIG) in failure["message"]


def test_value_shortcuts_decide_as_the_general_comparison() -> None:
    # The quick acceptance of common values must never decide otherwise than json_equal.
    from enum import StrEnum

    from judge.cases._case import ExpectedCall
    from judge.checks._arguments import faults

    class Colour(StrEnum):
        RED = "red"

    def kinds(arguments: dict[str, Any], expected: dict[str, Any], compare: Any = "exact") -> Any:
        found = faults(arguments, ExpectedCall(name="f", arguments=expected), compare, None)
        return [f"{fault[0].value}:{'/'.join(fault[1])}" for fault in found or ()]

    assert kinds({"a": "red"}, {"a": {"$any": [Colour.RED]}}) == ["WrongValue:a"]
    assert kinds({"a": True}, {"a": {"$any": [1]}}) == ["WrongValue:a"]
    assert kinds({"a": 1}, {"a": {"$any": [True, 1.0]}}) == []
    assert kinds({"a": [True]}, {"a": [1]}) == ["WrongValue:a"]
    # extras are named in the order the call gives them, whatever the hash seed
    assert kinds({"z": 1, "a": 1, "m": 1}, {}) == ["WrongValue:z", "WrongValue:a", "WrongValue:m"]
    # nested matchers reached by a path override compare as matchers
    assert kinds({"a": {"b": "x"}}, {"a": {"b": {"$any": ["x", "y"]}}}, ["/a/b"]) == []
    assert kinds({"a": {"b": "xy"}}, {"a": {"b": {"$any": ["x", "y"]}}}, ["/a/b"]) == [
        "WrongValue:a/b"
    ]
    assert kinds({"a": {}}, {"a": {"b": {"$optional": True}}}, ["/a/b"]) == []


def test_an_argument_rule_pickles_copies_and_subclasses() -> None:
    """Rules travel to `--jobs` workers and Ray actors, and users extend them: the class stays
    outside the compiled core, where a frozen dataclass could do none of this."""
    rule = ArgumentRule(case_sensitive=False, whitespace="collapse", abs_tol=1)
    assert pickle.loads(pickle.dumps(rule)) == rule
    assert copy.deepcopy(rule) == rule == copy.copy(rule)
    assert dataclasses.replace(rule, ignore=True).ignore

    class Loose(ArgumentRule):
        pass

    assert Loose(case_sensitive=False).matches(" Paris ", "paris") is False
    assert Loose(case_sensitive=False, whitespace="strip").matches(" Paris ", "paris")
    assert rule.matches(3, 3.9) and not rule.matches(3, 4.5)  # an integer tolerance
    rules: Rules = {"*": {"city": rule}}
    assert pickle.loads(pickle.dumps(rules)) == rules


def deep_case(case_id: str, depth: int, leaf: str, expected_leaf: str) -> dict[str, Any]:
    def nest(value: Any) -> Any:
        for _ in range(depth):
            value = [value]
        return value

    return case(
        [call("f", json.dumps({"a": nest(leaf)}))],
        expected=[{"name": "f", "arguments": {"a": nest(expected_leaf)}}],
        tools=[tool("f", {"type": "object"})],
        id=case_id,
    )


@pytest.mark.parametrize("core", ["as built", "source"])
def test_values_nested_as_deep_as_json_goes_are_graded_and_never_stop_the_batch(
    tmp_path: Path, core: str
) -> None:
    """Arguments nested 900 deep (msgspec reads up to about 990): compared without recursion,
    by either core, with or without a rule; the batch goes on."""
    path = tmp_path / "deep.jsonl"
    lines = [
        deep_case("same", 900, "x", "x"),
        deep_case("other", 900, "x", "y"),
        deep_case("after", 2, "x", "x"),
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    env = {k: v for k, v in os.environ.items() if k != "JUDGE_CORE"}
    if core == "source":
        env["JUDGE_CORE"] = "source"
    out = tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "judge", "check", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr  # the whole batch is graded
    passed = [json.loads(line)["passed"] for line in out.read_text().splitlines()]
    assert passed == [True, False, True]
    api = (
        "import sys; from judge import check, ArgumentRule\n"
        "rules = {'*': {'*': ArgumentRule(case_sensitive=False)}}\n"
        "print([r.passed for r in check(sys.argv[1], rules=rules)])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", api, str(path)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "[True, False, True]"
