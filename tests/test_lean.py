"""The lean reading of the check path (`read_lean` + `check_plain`) gives exactly what the full
reading gives (`parse_case` + `check_case`), and falls back for anything else."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge._errors import CaseError
from judge.cases._json import loads
from judge.cases._lean import read_lean
from judge.cases._loading import parse_case, read_line
from judge.checks._check import check_case
from judge.checks._plain import check_plain
from judge.checks._structure import SchemaCache

REPO = Path(__file__).resolve().parent.parent
DATASETS = REPO.parent / "shared" / "datasets"

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
CASE: dict[str, Any] = {
    "id": "w1",
    "messages": [{"role": "user", "content": "Weather in Paris for 3 days?"}],
    "tools": [TOOL, {"type": "function", "function": {"name": "noop"}}],
    "response": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris", "days": 3}'},
            }
        ],
    },
    "expected_calls": [
        {"name": "get_weather", "arguments": {"city": "Paris", "days": {"$any": [3, 4]}}}
    ],
    "expected_behavior": "call",
    "labels": {"selection": "correct"},
    "meta": {"source": "test", "note": "kept"},
}


def full_reading(line: bytes) -> dict[str, Any] | CaseError:
    case = read_line(line, source="t.jsonl", line=1)
    if isinstance(case, CaseError):
        return case
    return check_case(case, schemas=SchemaCache()).to_json_dict()


def assert_same(line: bytes) -> bool:
    """The lean reading agrees with the full one; True when the line was read lean."""
    lean = read_lean(line)
    if lean is None:
        return False
    full = full_reading(line)
    assert not isinstance(full, CaseError), f"read lean, yet not a case: {full}\n{line!r}"
    assert check_plain(lean, SchemaCache()) == full, line
    return True


def dataset_lines() -> Iterator[bytes]:
    files = [*sorted(DATASETS.glob("*.jsonl")), *sorted((REPO / "examples").rglob("*.jsonl"))]
    for path in files:
        yield from (line for line in path.read_bytes().splitlines() if line.strip())


def test_every_dataset_line_reads_the_same_lean() -> None:
    lean = sum(assert_same(line) for line in dataset_lines())
    assert lean > 0


def test_the_sample_case_is_read_lean() -> None:
    assert assert_same(json.dumps(CASE).encode())


@pytest.mark.parametrize(
    "tools",
    [
        [{"name": "get_weather", "input_schema": TOOL["function"]["parameters"]}],
        [{"name": "get_weather", "parameters": TOOL["function"]["parameters"]}, {"name": "x"}],
        [{"type": "function", "function": {"name": "get_weather", "strict": True}}],
        [{"function": {"name": "get_weather", "parameters": None}}],
        [{"name": "get_weather", "inputSchema": TOOL["function"]["parameters"], "title": "W"}],
        None,
    ],
)
def test_tools_in_every_form_case_reads_are_read_lean(tools: Any) -> None:
    assert assert_same(json.dumps({**CASE, "tools": tools}).encode())


def mutations(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """(path, replacement) for every place in the case: other kinds of value, or removal."""
    replacements: tuple[Any, ...] = (None, 1, 2.5, True, "x", "", [], {}, [1], [{}], {"a": 1})
    for replacement in (*replacements, "_DELETE"):
        if path:
            yield path, replacement
    if isinstance(value, dict):
        for key, child in value.items():
            yield from mutations(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from mutations(child, (*path, index))


def mutated(case: dict[str, Any], path: tuple[Any, ...], replacement: Any) -> dict[str, Any]:
    out = copy.deepcopy(case)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    if replacement == "_DELETE":
        del node[path[-1]]
    else:
        node[path[-1]] = replacement
    return out


def test_any_change_to_a_case_reads_the_same_or_falls_back() -> None:
    lean = 0
    for path, replacement in mutations(CASE):
        lean += assert_same(json.dumps(mutated(CASE, path, replacement)).encode())
    assert lean > 20  # many changes stay in the lean form (and agree)


@pytest.mark.parametrize(
    "change",
    [
        {"match": "strict"},
        {"id": 7},
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]},
        {"response": [{"name": "get_weather", "arguments": "{}"}]},
        {"response": {"choices": [{"message": {"content": "hi"}}]}},
        {"response": {"tool_calls": ["text"]}},
        {"response": {"content": [{"type": "text", "text": "hi"}]}},
        {"response": {}},
        {"expected_calls": [{"function": {"name": "get_weather", "arguments": "{}"}}]},
        {"expected_calls": [{"name": "f", "arguments": {"a": {"$any": 1}}}]},
        {"expected_calls": [{"name": "f", "arguments": {"a": {"$any": [1], "$also": 1}}}]},
        {"meta": None},
        {"messages": [1]},
    ],
)
def test_other_shapes_fall_back_to_the_full_reading(change: dict[str, Any]) -> None:
    line = json.dumps({**CASE, **change}).encode()
    assert read_lean(line) is None


def test_big_integers_stay_exact_on_the_lean_path() -> None:
    case = copy.deepcopy(CASE)
    case["tools"][0]["function"]["parameters"]["properties"]["days"] = {}
    case["response"]["tool_calls"][0]["function"]["arguments"] = (
        '{"city": "Paris", "days": 123456789012345678901234567891}'
    )
    case["expected_calls"][0]["arguments"]["days"] = 123456789012345678901234567890
    lean = read_lean(json.dumps(case).encode())
    assert lean is not None
    result = check_plain(lean, SchemaCache())
    assert result["passed"] is False
    assert [f["kind"] for f in result["failures"]] == ["WrongValue"]


def test_the_default_settings_are_those_of_an_empty_match() -> None:
    from judge.cases._match import Match
    from judge.checks._plain import DEFAULT

    empty = Match()
    for settings in (DEFAULT, empty):
        assert settings.mode is None and settings.ignore_tools == () and not settings.overrides
    assert DEFAULT.arguments == empty.arguments
    assert DEFAULT.args_for("any_tool") == empty.args_for("any_tool")


def with_change(path: tuple[Any, ...], value: Any) -> bytes:
    return json.dumps(mutated(CASE, path, value)).encode()


@pytest.mark.parametrize(
    "line",
    [
        # msgspec does not check what it skips: nothing is skipped, so these are read as Cases
        json.dumps(CASE).encode()[:-1] + b', "extra": 1e999}',
        with_change(("meta",), {"n": "x"}).replace(b'"x"', b"1e999"),
        with_change(("messages", 0, "content"), "x").replace(b'"x"', b"-1e400"),
        with_change(("labels", "selection"), "x").replace(b'"x"', b"1e999"),
        with_change(("response", "tool_calls", 0, "id"), "x").replace(b'"x"', b"1e999"),
        with_change(("tools", 0, "function", "parameters", "x"), "x").replace(b'"x"}', b"1e999}"),
        with_change(("meta",), {"n": "x"}).replace(b'"x"', b'"\xff"'),
    ],
)
def test_a_number_out_of_range_or_bad_utf8_anywhere_is_read_as_a_case(line: bytes) -> None:
    assert isinstance(full_reading(line), CaseError)
    assert read_lean(line) is None


def test_errors_list_in_the_order_of_each_lines_own_schema() -> None:
    # A lean line and a Case with the same schema in another key order keep their own orders.
    schema_a = {"type": "object", "required": ["a"], "properties": {"b": {"type": "string"}}}
    schema_b = {"properties": {"b": {"type": "string"}}, "required": ["a"], "type": "object"}
    lines = []
    given: tuple[dict[str, Any], ...] = ({"match": {}}, {})
    for schema, match in zip((schema_a, schema_b), given, strict=True):
        case = copy.deepcopy(CASE) | match
        case["tools"] = [{"function": {"name": "get_weather", "parameters": schema}}]
        case["response"]["tool_calls"][0]["function"]["arguments"] = '{"b": 1}'
        lines.append(json.dumps(case).encode())
    shared = SchemaCache()
    first = check_case(parse_case(loads(lines[0]), source="t", line=1), schemas=shared)
    lean = read_lean(lines[1])
    assert lean is not None and first.failures
    assert check_plain(lean, shared) == full_reading(lines[1])


def test_a_result_line_is_the_json_and_a_line_feed() -> None:
    from judge.cases._json import dumps, dumps_line

    for value in ({"a": [1, None, "é"]}, {"big": 2**70}):
        assert dumps_line(value) == dumps(value) + b"\n"


def test_a_tally_counts_as_adding_each_result() -> None:
    from judge.checks._check import check
    from judge.checks._summary import Summary, Tally

    wrong_days = '{"city": "Paris", "days": 5}'
    wrong = {
        **CASE,
        "id": "w2",
        "response": {
            **CASE["response"],
            "tool_calls": [
                {
                    **CASE["response"]["tool_calls"][0],
                    "function": {"name": "get_weather", "arguments": wrong_days},
                }
            ],
        },
    }
    results = check([CASE, wrong, {**CASE, "id": "w3", "tools": 3}])  # fmt: skip
    one_by_one, tallied, tally = Summary(), Summary(), Tally()
    for result in results:
        one_by_one.add(result)  # from the result itself
        tally.add(result.to_json_dict())  # from the JSON line judge check writes
    tallied.add_tally(tally)
    assert tallied.to_dict() == one_by_one.to_dict()
    # Worked by hand: w1 passes, w2 has the right tool and a wrong value, w3 is unreadable.
    facts = tallied.to_dict()
    assert (facts["cases"], facts["passed"], facts["failed"]) == (3, 1, 1)
    assert tallied.invalid_cases == 1
    counted = {kind: n for kind, n in facts["failure_kinds"].items() if n}
    assert counted == {"WrongValue": 1, "InvalidCase": 1}


def test_the_reader_unpacks_the_members_in_the_structs_order() -> None:
    """`read_lean` reads each struct's members at once, by place: the order it unpacks them in."""
    from judge.cases._lean_form import _Line, _Message

    assert _Line.__struct_fields__ == (
        "id", "messages", "tools", "response", "expected_calls", "expected_behavior", "labels",
        "match", "meta",
    )  # fmt: skip
    fields = _Message.__struct_fields__
    assert fields[:4] == ("role", "content", "tool_calls", "refusal")
    assert fields[-2:] == ("choices", "output")


def test_a_result_counted_as_it_is_built_counts_as_its_json_line() -> None:
    """`judge check` counts a lean result from the parts that built it; the summary is the one
    its JSON line gives (every shape of the sample, the examples and the shared datasets)."""
    from judge.checks._summary import Summary, Tally

    files = [REPO / "calibration" / "sample.jsonl", *sorted((REPO / "examples").glob("*.jsonl"))]
    files += sorted(DATASETS.glob("*.jsonl"))  # (where they are here)
    built, read = Tally(), Tally()
    schemas = SchemaCache()
    lines = 0
    for path in files:
        for raw in path.read_bytes().splitlines():
            lean = read_lean(raw) if raw.strip() else None
            if lean is not None:
                read.add(check_plain(lean, schemas, built))
                lines += 1
    assert lines > 200
    by_parts, by_lines = Summary(), Summary()
    by_parts.add_tally(built)
    by_lines.add_tally(read)
    assert by_parts.to_dict() == by_lines.to_dict()
    assert by_parts.cases == lines and by_parts.failed > 0 and by_parts.passed > 0
