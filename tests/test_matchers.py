"""Value matchers at any depth, and the value defaults: what each accepts and refuses, the
same through `judge check` (lean reading first) and `judge.check`, and the messages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import check
from judge.cli import main
from tests.helpers import call, case, tool

ANY = {"type": "object"}

# (given, expected, passes): one line per matcher, nested and composed.
TABLE: list[tuple[str, Any, Any, bool]] = [
    ("number-abs", 3.004, {"$number": 3, "abs": 0.01}, True),
    ("number-abs-out", 3.1, {"$number": 3, "abs": 0.01}, False),
    ("number-rel", 1001, {"$number": 1000, "rel": 0.01}, True),
    ("number-not-a-string", "3", {"$number": 3}, False),
    ("number-a-float", 2.0, {"$number": 2, "int": False}, True),
    ("number-not-an-integer", 2, {"$number": 2.0, "int": False}, False),
    ("int", 3, {"$int": 3}, True),
    ("int-float-fails", 3.0, {"$int": 3}, False),
    ("string-case", "PARIS", {"$string": "Paris", "case": False}, True),
    ("string-case-kept", "PARIS", {"$string": "Paris"}, False),
    ("string-collapse", " New   York ", {"$string": "New York", "space": "collapse"}, True),
    ("string-ignore-space", "NewYork", {"$string": "New York", "space": "ignore"}, True),
    ("string-punct", "St Louis", {"$string": "St. Louis", "punct": "ignore"}, True),
    ("string-bfcl", "april 1,2024", {"$string": "April 1, 2024", "normalise": "bfcl"}, True),
    (
        "string-bfcl-letters",
        "april 2,2024",
        {"$string": "April 1, 2024", "normalise": "bfcl"},
        False,
    ),
    ("regex", "ord_123", {"$regex": "^ord_[0-9]+$"}, True),
    ("regex-out", "ord-123", {"$regex": "^ord_[0-9]+$"}, False),
    ("regex-unicode", "Zoë", {"$regex": "^\\p{L}+$"}, True),
    ("date-iso", "2024-05-01", {"$date": "2024-05-01"}, True),
    ("date-words", "May 1st, 2024", {"$date": "2024-05-01"}, True),
    ("date-words-day-first", "Wednesday, the 1st of May 2024", {"$date": "2024-05-01"}, True),
    ("date-other-day", "May 2, 2024", {"$date": "2024-05-01"}, False),
    ("date-dmy", "01/05/2024", {"$date": "2024-05-01", "order": "dmy"}, True),
    ("date-mdy", "05/01/2024", {"$date": "2024-05-01", "order": "mdy"}, True),
    ("date-two-readings", "01/05/2024", {"$date": "2024-05-01"}, False),
    ("date-one-reading", "25/12/2024", {"$date": "2024-12-25"}, True),
    ("unordered", [3, 1, 2], {"$unordered": [1, 2, 3]}, True),
    ("unordered-multiset", [1, 1, 2], {"$unordered": [1, 2, 2]}, False),
    ("unordered-matchers", ["b", 1.001], {"$unordered": [{"$number": 1, "abs": 0.01}, "b"]}, True),
    ("object-allow", {"a": 1, "b": 2}, {"$object": {"a": 1}, "extra": "allow"}, True),
    ("object-forbid", {"a": 1, "b": 2}, {"$object": {"a": 1}}, False),
    ("any-nested", {"k": "y"}, {"k": {"$any": ["x", "y"]}}, True),
    ("any-of-matchers", "PARIS", {"$any": [{"$string": "paris", "case": False}, "Lyon"]}, True),
    ("absent-nested", {"a": 1}, {"a": 1, "b": {"$absent": True}}, True),
    ("absent-given", {"a": 1, "b": 2}, {"a": 1, "b": {"$absent": True}}, False),
    ("optional-nested", {"a": 1}, {"a": 1, "b": {"$int": 2, "$optional": True}}, True),
    ("optional-alone", {"a": 1, "b": "anything"}, {"a": 1, "b": {"$optional": True}}, True),
    (
        "list-of-objects",
        [{"d": "Science", "s": "Bluebird HS"}],
        [{"d": {"$any": ["Science"]}, "s": {"$any": ["Bluebird High School", "Bluebird HS"]}}],
        True,
    ),
    (
        "deep",
        {"a": [{"b": {"c": 2.0001}}]},
        {"a": [{"b": {"c": {"$number": 2, "abs": 0.001}}}]},
        True,
    ),
]


def _cases(rows: list[tuple[str, Any, Any, bool]]) -> list[dict[str, Any]]:
    out = []
    for name, given, want, _ in rows:
        one = case(
            [call("f", {"v": given})], [{"name": "f", "arguments": {"v": want}}], [tool("f", ANY)]
        )
        out.append({**one, "id": name})
    return out


def _cli(tmp_path: Path, cases: list[dict[str, Any]], *options: str) -> list[dict[str, Any]]:
    source = tmp_path / "cases.jsonl"
    source.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(source), *options])
    assert result.exit_code in (0, 1), result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize(("name", "given", "want", "passes"), TABLE, ids=[r[0] for r in TABLE])
def test_each_matcher_accepts_and_refuses(name: str, given: Any, want: Any, passes: bool) -> None:
    [result] = check(_cases([(name, given, want, passes)]))
    assert result.passed is passes, [f.message for f in result.failures]
    assert result.argument_values is passes


def test_the_command_and_the_library_agree_on_every_matcher(tmp_path: Path) -> None:
    cases = _cases(TABLE)
    by_api = [r.to_json_dict() for r in check(cases)]
    by_cli = _cli(tmp_path, cases)
    assert [r["passed"] for r in by_cli] == [row[3] for row in TABLE]
    assert by_cli == json.loads(json.dumps(by_api))


def test_a_plain_file_still_reads_lean_beside_matchers(tmp_path: Path) -> None:
    plain = _cases([("plain", "Paris", "Paris", True), ("plain-any", "x", {"$any": ["x"]}, True)])
    assert [r["passed"] for r in _cli(tmp_path, plain)] == [True, True]


@pytest.mark.parametrize(
    ("want", "pointer", "message"),
    [
        ({"$anyy": [1]}, "/v", 'unknown matcher key "$anyy" (did you mean "$any"?)'),
        ({"a": [{"$int": 1.5}]}, "/v/a/0", "$int must be an integer"),
        ({"$int": 1, "abs": 1}, "/v", '"abs" is no option of $int'),
        ({"$string": "a", "space": "squash"}, "/v", '$string\'s "space" must be'),
        ({"$regex": "(unclosed"}, "/v", "is no ECMA-262 regular expression"),
        ({"$date": "1 May 2024"}, "/v", "$date must be a day written YYYY-MM-DD"),
        ({"$any": [{"$judge": "x"}]}, "/v/$any/0", "neither left out nor the judge's"),
        ({"$absent": True, "$int": 1}, "/v", "$absent is written"),
        ({"$number": 1, "$int": 1}, "/v", "this one has $number and $int"),
        ({"$object": {"k": {"$unordered": 3}}}, "/v/$object/k", "$unordered must be a list"),
    ],
)
def test_a_malformed_matcher_is_refused_with_its_pointer(
    tmp_path: Path, want: Any, pointer: str, message: str
) -> None:
    [one] = _cases([("bad", 1, want, False)])
    [result] = _cli(tmp_path, [one])
    assert result["passed"] is None
    [failure] = result["failures"]
    assert failure["kind"] == "InvalidCase"
    assert failure["path"] == "/expected_calls/0/arguments" + pointer
    assert message in failure["message"]


def test_a_mismatch_says_how_it_could_have_been_accepted() -> None:
    [result] = check(_cases([("c", "paris", "Paris", False)]))
    assert result.failures[0].message == (
        'argument \'v\' is "paris", expected "Paris" '
        '(strings compare exactly; {"$string":"Paris","case":false} accepts it)'
    )
    [optional] = check(_cases([("o", 3, {"$any": [1, 2], "$optional": True}, False)]))
    assert optional.failures[0].message.endswith("(leaving it out was allowed)")
    [nested] = check(_cases([("n", {"a": {"b": 3}}, {"a": {"b": {"$int": 2}}}, False)]))
    assert (nested.failures[0].path, nested.failures[0].message) == (
        "/v/a/b",
        "argument 'v/a/b' is 3: not the integer 2",
    )


def test_value_defaults_of_a_case_and_of_a_run(tmp_path: Path) -> None:
    rows = [("s", "PARIS", "Paris", False), ("n", 10.0, 10, False), ("f", 10, 10.5, False)]
    cases = _cases(rows)
    assert [r["passed"] for r in _cli(tmp_path, cases)] == [False, True, False]
    loose = _cli(tmp_path, cases, "--values", "strings=casefold,numbers=strict")
    assert [r["passed"] for r in loose] == [True, False, False]
    own = [{**c, "match": {"values": {"strings": "bfcl"}}} for c in cases]
    # a case's own match.values wins over the run's, key by key
    assert [r["passed"] for r in _cli(tmp_path, own, "--values", "numbers=strict")] == [
        True,
        False,
        False,
    ]


def test_a_wrong_values_setting_is_a_usage_error(tmp_path: Path) -> None:
    source = tmp_path / "c.jsonl"
    source.write_text(json.dumps(_cases([("a", 1, 1, True)])[0]) + "\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", str(source), "--values", "strings=loose"])
    assert result.exit_code == 2
    assert "--values 'strings=loose'" in result.output


def test_judge_values_are_never_passed_by_code() -> None:
    [result] = check(_cases([("j", "Paris", {"$judge": "the city the user named"}, False)]))
    assert result.passed is None
    assert result.needs_judge is True
    assert result.argument_values is None
    [failure] = result.failures
    assert (failure.kind.value, failure.path) == ("NeedsJudge", "/v")
    [wrong] = check(_cases([("j2", {"a": 1}, {"a": 2, "b": {"$judge": "x"}}, False)]))
    assert wrong.passed is False  # a value the code disproves fails whatever the judge says


def test_partial_credit_counts_the_argument_leaves_got_right(tmp_path: Path) -> None:
    want = {"a": 1, "b": {"c": 2, "d": {"$int": 3}}, "e": {"$any": ["x", "y"]}}
    rows = [
        ("all", {"a": 1, "b": {"c": 2, "d": 3}, "e": "y"}, want, True),
        ("two-of-four", {"a": 1, "b": {"c": 5, "d": 3.0}, "e": "y"}, want, False),
        ("none", {"b": 7}, want, False),
    ]
    cases = []
    for name, given, expected, _ in rows:
        one = case([call("f", given)], [{"name": "f", "arguments": expected}], [tool("f", ANY)])
        cases.append({**one, "id": name})
    shares = [r.call_scores.arguments for r in check(cases) if r.call_scores is not None]
    assert shares == [1.0, 0.5, 0.0]
    assert [r["call_scores"]["arguments"] for r in _cli(tmp_path, cases)] == shares


def test_leaves_told_from_the_failures_are_those_compared_one_by_one() -> None:
    """`leaves_got` reads the right leaves off a pairing's failures where every expected
    argument is a leaf; it must say what comparing each leaf says."""
    import random

    from judge.checks._arguments import describe, faults
    from judge.checks._credit import leaf_count, leaves_got, leaves_right

    class Expected:
        name = "f"

        def __init__(self, arguments: dict[str, Any]) -> None:
            self.arguments = arguments

    rng = random.Random(51)
    pool: list[Any] = [1, 2, 2.0, "a", "A", True, None, {"$any": [1, "a"]}, {"$int": 2},
                       {"$string": "a", "case": False}, {"$absent": True}, [1, 2],
                       {"k": 1}]  # fmt: skip
    for _ in range(2000):
        keys = rng.sample(["a", "b/c", "d~e", "f"], rng.randint(1, 4))
        want = {k: rng.choice(pool) for k in keys}
        given = {k: rng.choice(pool[:7]) for k in keys if rng.random() < 0.8}
        if rng.random() < 0.3:
            given["extra"] = 1
        found = faults(given, Expected(want), rng.choice(["exact", "superset"]), None) or []
        at = [describe(f)[1] for f in found]
        count = leaf_count(want)
        assert leaves_got("f", given, want, count, at, None, None) == leaves_right(
            "f", given, want, None, None
        ), (want, given)


def test_a_numeric_date_reads_in_the_order_given_or_the_cases_locale(tmp_path: Path) -> None:
    want = {"$date": "2024-05-01"}
    [us] = _cases([("us", "05/01/2024", want, True)])
    [gb] = _cases([("gb", "01/05/2024", want, True)])
    us["meta"], gb["meta"] = {"locale": "en-US"}, {"locale": "en_GB"}
    assert [r.passed for r in check([us, gb])] == [True, True]
    bare = [{k: v for k, v in c.items() if k != "meta"} for c in (us, gb)]
    [one, two] = check(bare)  # no order: 05/01 and 01/05 each read as two days
    assert (one.passed, two.passed) == (False, False)
    assert "it reads as two days" in one.failures[0].message
    assert [r["passed"] for r in _cli(tmp_path, bare, "--values", "dates=mdy")] == [True, False]
    told = [{**us, "match": {"values": {"dates": "dmy"}}}]  # the case's order wins its locale
    assert [r.passed for r in check(told)] == [False]
