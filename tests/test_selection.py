"""Selection and value checks against `expected_calls`, and how they combine."""

from __future__ import annotations

from typing import Any

import pytest

from tests.helpers import call, case, grade, kinds

PARIS = {"name": "get_weather", "arguments": {"city": "Paris"}}
ROME = {"name": "get_weather", "arguments": {"city": "Rome"}}
TIME = {"name": "get_time", "arguments": {}}


@pytest.mark.parametrize(
    ("calls", "expected", "outcome", "failures"),
    [
        pytest.param(
            [call("get_weather", {"city": "Paris"})],
            [PARIS],
            (True, True, True, True),
            [],
            id="exact-match",
        ),
        pytest.param(
            [call("get_time", {}), call("get_weather", {"city": "Paris"})],
            [PARIS, TIME],
            (True, True, True, True),
            [],
            id="parallel-calls-in-any-order",
        ),
        pytest.param(
            [call("get_weather", {"city": "Rome"}), call("get_weather", {"city": "Paris"})],
            [PARIS, ROME],
            (True, True, True, True),
            [],
            id="same-name-parallel-calls-in-any-order",
        ),
        pytest.param(
            [call("get_weather", {"city": "Paris"})] * 2,
            [PARIS],
            (False, True, False, False),
            [(1, "UnexpectedCall")],
            id="duplicated-call",
        ),
        pytest.param(
            [call("get_weather", {"city": "Paris"})],
            [PARIS, TIME],
            (False, True, False, False),
            [(None, "MissingCall")],
            id="missing-call",
        ),
        pytest.param(
            [],
            [PARIS],
            (False, None, False, False),
            [(None, "MissingCall")],
            id="no-calls-but-some-expected",
        ),
        pytest.param(
            [call("get_weather", {"city": "Paris"})],
            [],
            (False, True, None, False),
            [(0, "UnexpectedCall")],
            id="a-call-when-none-expected",
        ),
        pytest.param([], [], (True, None, None, True), [], id="rightly-no-call"),
        pytest.param(
            [call("get_time", {})],
            [PARIS],
            (False, True, False, False),
            [(0, "WrongTool")],
            id="wrong-tool-same-count",
        ),
        pytest.param(
            [call("get_time", {}), call("get_time", {})],
            [PARIS],
            (False, True, False, False),
            [(0, "UnexpectedCall"), (1, "UnexpectedCall"), (None, "MissingCall")],
            id="wrong-count-is-missing-plus-unexpected",
        ),
        pytest.param(
            [call("get_weather", {"city": "Oslo"}), call("get_weather", {"city": "Nice"})],
            [PARIS, ROME],
            (True, True, False, False),
            [(0, "WrongValue"), (1, "WrongValue")],
            id="two-same-name-calls-wrong-content-is-a-value-failure",
        ),
        pytest.param(
            [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": "Paris"})],
            [PARIS, ROME],
            (True, True, False, False),
            [(1, "WrongValue")],
            id="a-duplicate-is-never-counted-twice",
        ),
        pytest.param(
            [call("get_weather", {"city": 3})],
            [{"name": "get_weather", "arguments": {"city": "3"}}],
            (True, False, False, False),
            [(0, "SchemaMismatch"), (0, "WrongValue")],
            id="value-failure-reported-even-when-schema-fails",
        ),
    ],
)
def test_selection_and_values(
    calls: list[dict[str, Any]],
    expected: list[dict[str, Any]],
    outcome: tuple[bool | None, ...],
    failures: list[tuple[int | None, str]],
) -> None:
    result = grade(case(calls, expected))
    assert (
        result.tool_selection,
        result.schema_valid,
        result.argument_values,
        result.passed,
    ) == outcome
    assert kinds(result) == failures


def test_string_three_for_integer_three_is_schema_mismatch_and_wrong_value() -> None:
    result = grade(
        case(
            [call("get_weather", {"city": "Paris", "days": "3"})],
            [{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}],
        )
    )
    assert [(f.kind.value, f.path) for f in result.failures] == [
        ("SchemaMismatch", "/days"),
        ("WrongValue", "/days"),
    ]


def test_assignment_is_optimal_not_greedy() -> None:
    # Greedy pairing would give the first call (which also satisfies the looser expectation)
    # to the first expected call and leave the second call unable to match.
    loose = {"name": "get_weather", "arguments": {"city": "Paris"}}
    tight = {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}
    calls = [
        call("get_weather", {"city": "Paris", "days": 2}),
        call("get_weather", {"city": "Paris"}),
    ]
    result = grade(case(calls, [loose, tight]))
    assert result.argument_values is True
    assert result.failures == ()


def test_missing_call_points_at_the_expected_call() -> None:
    result = grade(case([call("get_weather", {"city": "Paris"})], [PARIS, TIME]))
    assert result.failures[0].path == "/expected_calls/1"


def test_invalid_json_call_still_counts_for_selection() -> None:
    result = grade(case([call("get_weather", "{bad")], [PARIS]))
    assert (result.tool_selection, result.schema_valid, result.argument_values) == (
        True,
        False,
        False,
    )
    assert kinds(result) == [(0, "InvalidJson")]


@pytest.mark.parametrize(
    "arguments, kind",
    [
        pytest.param({"city": 1}, "SchemaMismatch", id="against-the-schema"),
        pytest.param("{bad", "InvalidJson", id="not-json"),
    ],
)
def test_without_expected_calls_a_broken_call_fails(arguments: Any, kind: str) -> None:
    result = grade(case([call("get_weather", arguments)]))
    assert (result.tool_selection, result.schema_valid, result.argument_values, result.passed) == (
        None,
        False,
        None,
        False,
    )
    assert kinds(result) == [(0, kind)]


def test_without_expected_calls_an_unknown_tool_fails() -> None:
    result = grade(case([call("get_wether", {"city": "Paris"})]))
    assert (result.schema_valid, result.passed) == (False, False)
    assert kinds(result) == [(0, "UnknownName")]


def test_without_expected_calls_a_sound_call_is_not_gradable() -> None:
    result = grade(case([call("get_weather", {"city": "Paris"})]))
    assert (result.schema_valid, result.passed, result.needs_judge) == (True, None, False)


def test_expected_behavior_call_leaves_the_deterministic_result_as_it_is() -> None:
    plain = grade(case([call("get_weather", {"city": "Paris"})], [PARIS]))
    tagged = grade(
        case([call("get_weather", {"city": "Paris"})], [PARIS], expected_behavior="call")
    )
    assert tagged == plain
    assert grade(case([], expected_behavior="call")) == grade(case([]))


def test_small_assignments_are_as_optimal_as_scipy() -> None:
    # Up to six same-name calls are paired by trying every pairing (no scipy import); the total
    # cost must equal scipy's optimum on every shape, square or not.
    import random

    from scipy.optimize import linear_sum_assignment

    from judge.checks._pairing import least_cost_pairs as _assign

    rng = random.Random(7)
    for _ in range(500):
        rows, cols = rng.randint(1, 7), rng.randint(1, 7)
        cost = [[rng.randint(0, 4) for _ in range(cols)] for _ in range(rows)]
        pairs = _assign(cost)
        best_rows, best_cols = linear_sum_assignment(cost)
        assert len(pairs) == min(rows, cols)
        assert len({r for r, _ in pairs}) == len({c for _, c in pairs}) == len(pairs)
        assert sum(cost[r][c] for r, c in pairs) == sum(
            cost[r][c] for r, c in zip(best_rows, best_cols, strict=True)
        )


def test_a_tie_goes_to_the_first_least_cost_pairing() -> None:
    """Of equal-cost pairings, `least_cost_pairs` keeps the first in the order of
    `permutations` (the results' stable pairing depends on it), whichever side is longer."""
    import random
    from itertools import permutations

    from judge.checks._pairing import least_cost_pairs as _assign

    rng = random.Random(11)
    for _ in range(300):
        rows, cols = rng.randint(1, 5), rng.randint(1, 5)
        cost = [[rng.randint(0, 2) for _ in range(cols)] for _ in range(rows)]
        if rows <= cols:
            options = list(permutations(range(cols), rows))
            totals = [sum(cost[r][c] for r, c in enumerate(p)) for p in options]
            expected = list(enumerate(options[totals.index(min(totals))]))
        else:
            options = list(permutations(range(rows), cols))
            totals = [sum(cost[r][c] for c, r in enumerate(p)) for p in options]
            expected = [(r, c) for c, r in enumerate(options[totals.index(min(totals))])]
        assert _assign(cost) == expected, cost


def test_rounded_is_round() -> None:
    """The pairing's distances are rounded as `round` rounds them (half to even)."""
    import random

    from judge.checks._pairing import rounded

    rng = random.Random(3)
    halves = [k + 0.5 for k in range(50)] + [k / 8 for k in range(800)]
    for x in halves + [rng.uniform(0, 100) for _ in range(5000)] + [0.0, 100.0, 2.0**52]:
        assert rounded(x) == round(x), x
    for n in range(2, 9):  # the places pairing compares: fractions of a trajectory
        for m in range(2, 9):
            for c in range(n):
                for e in range(m):
                    x = 100 * abs(c / (n - 1) - e / (m - 1))
                    assert rounded(x) == round(x), x
