"""Loading cases: JSON Lines, DataFrames, Python objects, and every accepted response shape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from judge import Case, CaseError, InputError, ToolCall, check, load_cases
from tests.helpers import WEATHER, case, tool

OPENAI_CHAT = {
    "role": "assistant",
    "content": "Checking.",
    "tool_calls": [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
        }
    ],
}
EXPECTED = (ToolCall(name="get_weather", arguments='{"city": "Paris"}', id="c1"),)


@pytest.mark.parametrize(
    ("response", "content", "calls"),
    [
        pytest.param(OPENAI_CHAT, "Checking.", EXPECTED, id="openai-chat-message"),
        pytest.param(
            {"choices": [{"message": OPENAI_CHAT, "finish_reason": "tool_calls"}]},
            "Checking.",
            EXPECTED,
            id="openai-chat-completion",
        ),
        pytest.param(
            [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "c1"}],
            None,
            (ToolCall(name="get_weather", arguments='{"city":"Paris"}', id="c1"),),
            id="plain-list-with-object-arguments",
        ),
        pytest.param(
            [{"name": "get_weather", "arguments": '{"city": "Paris"}', "id": "c1"}],
            None,
            EXPECTED,
            id="plain-list-with-raw-arguments",
        ),
        pytest.param(
            [
                {"type": "reasoning", "summary": []},
                {
                    "type": "function_call",
                    "call_id": "c1",
                    "name": "get_weather",
                    "arguments": '{"city": "Paris"}',
                },
            ],
            None,
            EXPECTED,
            id="responses-api-items",
        ),
        pytest.param(
            {
                "output": [
                    {"type": "message", "content": [{"type": "output_text", "text": "Checking."}]},
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "get_weather",
                        "arguments": '{"city": "Paris"}',
                    },
                ]
            },
            "Checking.",
            EXPECTED,
            id="responses-api-object",
        ),
        pytest.param(
            [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
            "Checking.",
            (ToolCall(name="get_weather", arguments='{"city":"Paris"}', id="c1"),),
            id="anthropic-blocks",
        ),
        pytest.param(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "c1",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    }
                ],
            },
            None,
            (ToolCall(name="get_weather", arguments='{"city":"Paris"}', id="c1"),),
            id="anthropic-message",
        ),
        pytest.param(
            {"content": "It is sunny.", "tool_calls": None}, "It is sunny.", (), id="text-only"
        ),
        pytest.param("It is sunny.", "It is sunny.", (), id="bare-text"),
        pytest.param(
            {
                "content": None,
                "tool_calls": [
                    {
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": "{'city': 'Paris'"},
                    }
                ],
            },
            None,
            (ToolCall(name="get_weather", arguments="{'city': 'Paris'"),),
            id="raw-invalid-arguments-kept",
        ),
    ],
)
def test_response_shapes_normalise_to_one_form(
    response: Any, content: str | None, calls: tuple[ToolCall, ...]
) -> None:
    loaded = Case.model_validate(case([], response=response) | {"response": response})
    assert loaded.response is not None
    assert loaded.response.content == content
    assert loaded.response.tool_calls == calls


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        pytest.param(tool("f", WEATHER), "f", id="openai-chat"),
        pytest.param(
            {"type": "function", "name": "f", "parameters": WEATHER}, "f", id="responses-api"
        ),
        pytest.param({"name": "f", "input_schema": WEATHER}, "f", id="anthropic"),
    ],
)
def test_tool_shapes(spec: dict[str, Any], name: str) -> None:
    loaded = Case.model_validate({"id": "t", "tools": [spec]})
    assert loaded.tools[0].name == name
    assert loaded.tools[0].parameters == WEATHER


@pytest.mark.parametrize(
    "expected",
    [
        pytest.param({"name": "f", "arguments": {"x": 1}}, id="plain"),
        pytest.param({"name": "f", "arguments": '{"x": 1}'}, id="arguments-as-text"),
        pytest.param(
            {"type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            id="openai-tool-call",
        ),
    ],
)
def test_expected_call_shapes(expected: dict[str, Any]) -> None:
    loaded = Case.model_validate({"id": "t", "expected_calls": [expected]})
    assert loaded.expected_calls is not None
    assert loaded.expected_calls[0].model_dump() == {"name": "f", "arguments": {"x": 1}}


def test_name_is_accepted_for_id() -> None:
    assert Case.model_validate({"name": "seed-1"}).id == "seed-1"


def test_missing_id_falls_back_to_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"messages": []}) + "\n")
    assert load_cases(path)[0].id == "cases.jsonl:1"


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("line", "pointer", "reason"),
    [
        pytest.param('{"id": "a", "tools": [', "", "not valid JSON", id="not-json"),
        pytest.param("[1, 2]", "", "must be a JSON object", id="not-an-object"),
        pytest.param(
            '{"id": "a", "expected_calls": [{"arguments": {}}]}',
            "/expected_calls/0/name",
            "Field required",
            id="expected-call-without-name",
        ),
        pytest.param(
            '{"id": "a", "response": {"tool_calls": [{"type": "function", '
            '"function": {"arguments": "{}"}}]}}',
            "/response/tool_calls/0/function/name",
            "needs a name",
            id="tool-call-without-name",
        ),
        pytest.param(
            '{"id": "a", "tools": [{"type": "function", "function": {}}]}',
            "/tools/0/function/name",
            "a tool needs a name",
            id="tool-without-name",
        ),
        pytest.param(
            '{"id": "a", "labels": {"selection": "right"}}',
            "/labels/selection",
            "'correct' or 'incorrect'",
            id="off-menu-label",
        ),
        pytest.param(
            '{"id": "a", "expected_calls": [{"name": "f", "arguments": {"x": {"$any": 1}}}]}',
            "/expected_calls/0/arguments/x",
            "$any must be a list",
            id="any-not-a-list",
        ),
    ],
)
def test_a_bad_line_names_file_line_case_and_pointer(
    tmp_path: Path, line: str, pointer: str, reason: str
) -> None:
    good = json.dumps(case([], []) | {"id": "good"})
    path = write_lines(tmp_path / "cases.jsonl", [good, line, good.replace("good", "good2")])
    loaded = load_cases(path)
    assert [c.id for c in loaded] == ["good", "good2"]  # the other lines still load
    [error] = loaded.errors
    assert (error.source, error.line, error.pointer) == (str(path), 2, pointer)
    assert reason in error.reason
    assert f"{path}:2" in str(error)
    # and still grade: the bad line becomes a result in its place
    results = check(path)
    assert [r.id for r in results][::2] == ["good", "good2"]
    assert [f.kind.value for f in results[1].failures] == ["InvalidCase"]
    assert results[1].passed is None
    assert results[0].passed is True


def test_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "c.jsonl", ["", json.dumps(case([])), "   "])
    assert len(load_cases(path)) == 1


def test_unreadable_input_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read cases"):
        load_cases(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match="is a directory"):
        load_cases(tmp_path)


def test_plain_python_objects() -> None:
    loaded = load_cases([case([]), Case(id="x"), {"bad": "no id", "tools": 3}])
    assert [c.id for c in loaded] == ["t", "x"]
    assert loaded.errors[0].line == 3
    assert isinstance(loaded.errors[0], CaseError)


def test_dataframe_in_and_out() -> None:
    frame = pd.DataFrame(
        [
            case(
                [{"name": "get_weather", "arguments": {"city": "Paris"}}],
                [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            ),
            # a frame read from CSV holds JSON text; a missing value is NaN
            {
                "id": "csv",
                "tools": json.dumps([tool("get_weather", WEATHER)]),
                "response": json.dumps([{"name": "get_weather", "arguments": {"city": 1}}]),
                "expected_calls": float("nan"),
            },
        ]
    )
    results = check(frame)
    assert [(r.id, r.passed, r.schema_valid) for r in results] == [
        ("t", True, True),
        ("csv", False, False),  # a call against its schema fails without a reference
    ]
    table = results.to_pandas()
    assert list(table.columns) == [
        "id",
        "tool_selection",
        "schema_valid",
        "argument_values",
        "passed",
        "tool_assertions",
        "decided_by",
        "call_f1",
        "failures",
        "failure_kinds",
        "value_origins",
        "injection",
        "judge_status",
        "judge_passed",
        "judge_selection",
        "judge_arguments",
        "judge_dispute",
    ]
    assert table.loc[0, "call_f1"] == 1.0
    assert str(table["passed"].dtype) == "boolean"
    assert table.loc[1, "failure_kinds"] == ["SchemaMismatch"]


def test_cases_round_trip_through_a_dataframe() -> None:
    loaded = load_cases(
        [
            case(
                [{"name": "get_weather", "arguments": '{"city": "Paris"}'}],
                [{"name": "get_weather", "arguments": {"city": "Paris"}}],
            )
        ]
    )
    again = load_cases(loaded.to_pandas())
    assert not again.errors
    assert list(again) == list(loaded)


def test_a_match_column_read_from_csv_holds_json_text() -> None:
    data = case(
        [{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}],
        [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    )
    frame = pd.DataFrame([data | {"match": json.dumps({"mode": "strict"})}])
    [result] = check(frame)
    assert result.trajectory is not None and result.trajectory.mode == "strict"
    assert result.passed is False  # exact arguments: `days` was not expected


@pytest.mark.parametrize(
    ("field", "pointer"),
    [
        ({"match": {"mode": "strict", "overrides": {"a/b": "nope"}}}, "/match/overrides/a~1b"),
        ({"match": {"modes": "strict"}}, "/match/modes"),
    ],
)
def test_error_pointers_are_json_pointers(field: dict[str, Any], pointer: str) -> None:
    loaded = load_cases([case([]) | field], strict=True)  # strict: an unknown key refused too
    assert [e.pointer for e in loaded.errors] == [pointer]


def test_a_line_nested_too_deeply_is_a_bad_line_not_a_crash(tmp_path: Path) -> None:
    deep = "[" * 3000 + "]" * 3000
    arguments = json.dumps({"x": "PLACE"}).replace('"PLACE"', deep)
    calls = [{"name": "f", "arguments": arguments}]
    lines = [
        '{"id": "ok"}',
        deep,
        json.dumps({"id": "deep-args", "response": calls}),
        '{"id": "b"}',
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    results = list(check(path))
    assert [r.id for r in results] == ["ok", "deep.jsonl:2", "deep-args", "b"]
    assert "nested too deeply" in results[1].failures[0].message
    assert [f.kind.value for f in results[2].failures] == ["InvalidJson", "UnknownName"]


def test_a_case_nested_too_deeply_in_a_json_array_file_is_that_cases_error(
    tmp_path: Path,
) -> None:
    deep = '{"id": "deep", "meta": {"x": ' + "[" * 1000 + "]" * 1000 + "}}"
    path = tmp_path / "deep.json"
    path.write_text(f'[{{"id": "ok"}},\n {deep},\n {{"id": "b"}}]')
    with pytest.warns(UserWarning, match="one JSON array"):
        results = list(check(path))
    assert [r.id for r in results] == ["ok", "deep.json:2", "b"]
    [failure] = results[1].failures
    assert failure.path == "/1" and failure.message.endswith("JSON is nested too deeply")
    path.write_text(f'[{deep}, {{"id": oops}}]')  # the rest of the array must still be JSON
    with pytest.raises(InputError, match="cannot be read: JSON is malformed"):
        list(check(path))


def test_a_cases_match_values_is_a_known_field_and_applies() -> None:
    # Regression: `match.values` was missing from the case format's known keys, so a case's
    # value defaults were warned about as an unknown field and dropped before grading.
    data = case(
        [{"name": "get_weather", "arguments": {"city": "paris"}}],
        [{"name": "get_weather", "arguments": {"city": "Paris"}}],
        match={"values": {"strings": "casefold"}},
    )
    loaded = load_cases([data], strict=True)
    assert loaded.errors == []
    [result] = check([data])
    assert result.passed is True
