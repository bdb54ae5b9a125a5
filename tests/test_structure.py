"""Structural checks of every call: strict JSON, exact names, the tool's own Draft 7 schema."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft7Validator

from judge.checks._structure import SchemaCache, parse_arguments
from tests.helpers import WEATHER, call, case, grade, kinds, tool


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param('{"city": "Paris"', id="truncated"),
        pytest.param("{'city': 'Paris'}", id="single-quotes"),
        pytest.param('{"city": "Paris",}', id="trailing-comma"),
        pytest.param("", id="empty-string"),
        pytest.param("   ", id="only-whitespace"),
        pytest.param("null", id="null"),
        pytest.param("[]", id="json-array"),
        pytest.param('[{"city": "Paris"}]', id="array-holding-the-object"),
        pytest.param('"{\\"city\\": \\"Paris\\"}"', id="json-string-holding-json"),
        pytest.param('{"city": "Paris"}{"city": "Rome"}', id="two-concatenated-objects"),
        pytest.param('```json\n{"city": "Paris"}\n```', id="markdown-fence"),
        pytest.param('{"city": "Paris", "days": NaN}', id="nan-is-not-json"),
        pytest.param('{"city": "Paris", "days": Infinity}', id="infinity-is-not-json"),
        pytest.param("3", id="a-number"),
        pytest.param("true", id="a-boolean"),
    ],
)
def test_invalid_json_variants(raw: str) -> None:
    result = grade(case([call("get_weather", raw)], [{"name": "get_weather", "arguments": {}}]))
    assert kinds(result) == [(0, "InvalidJson")]
    assert result.schema_valid is False
    assert result.tool_selection is True  # the name is still right
    assert result.argument_values is False
    assert result.passed is False


def test_empty_string_is_invalid_even_for_a_tool_without_parameters() -> None:
    result = grade(case([call("ping", "")], [{"name": "ping"}], tools=[tool("ping")]))
    assert kinds(result) == [(0, "InvalidJson")]
    assert result.schema_valid is False


def test_empty_object_is_valid_for_a_tool_without_parameters() -> None:
    result = grade(case([call("ping", "{}")], [{"name": "ping"}], tools=[tool("ping")]))
    assert result.passed is True


def test_duplicate_keys_are_valid_json_and_the_last_wins() -> None:
    raw = '{"city": "Rome", "city": "Paris"}'
    result = grade(
        case([call("get_weather", raw)], [{"name": "get_weather", "arguments": {"city": "Paris"}}])
    )
    assert result.failures == ()
    assert result.passed is True


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("get_weather ", id="trailing-space"),
        pytest.param("Get_Weather", id="letter-case"),
        pytest.param("get_wether", id="near-miss"),
    ],
)
def test_tool_names_are_exact(name: str) -> None:
    result = grade(case([call(name, {"city": "Paris"})]))
    assert kinds(result) == [(0, "UnknownName")]
    assert result.schema_valid is False


def test_unknown_name_message_points_at_the_whitespace() -> None:
    result = grade(case([call("get_weather ", {"city": "Paris"})]))
    assert "whitespace" in result.failures[0].message


def test_one_call_can_be_both_invalid_json_and_unknown_name() -> None:
    result = grade(case([call("nope", "{oops")]))
    assert kinds(result) == [(0, "InvalidJson"), (0, "UnknownName")]


def test_unknown_name_is_not_schema_checked_and_counts_in_the_names() -> None:
    # Arguments that break every schema: only UnknownName is reported for the call.
    result = grade(
        case(
            [call("get_weathr", {"city": 3})],
            [{"name": "get_weather", "arguments": {"city": "Paris"}}],
        )
    )
    assert kinds(result) == [(0, "UnknownName"), (0, "WrongTool")]
    assert result.schema_valid is False
    assert result.tool_selection is False


def test_every_call_is_checked_not_just_the_first() -> None:
    calls = [call("get_weather", {"city": "Paris"}), call("get_weather", {"city": 7})]
    result = grade(case(calls))
    assert kinds(result) == [(1, "SchemaMismatch")]
    assert result.failures[0].path == "/city"
    assert result.schema_valid is False


@pytest.mark.parametrize(
    ("arguments", "valid"),
    [
        pytest.param({"city": "Paris", "days": 3.0}, True, id="draft7-integer-accepts-3.0"),
        pytest.param({"city": "Paris", "days": 3.5}, False, id="draft7-integer-rejects-3.5"),
        pytest.param({"city": "Paris", "days": True}, False, id="boolean-is-not-an-integer"),
        pytest.param({"city": "Paris", "units": "k"}, False, id="enum"),
        pytest.param({"city": "Paris", "extra": 1}, True, id="extra-allowed-by-default"),
        pytest.param({"days": 3}, False, id="required-missing"),
    ],
)
def test_schema_rules(arguments: dict[str, Any], valid: bool) -> None:
    result = grade(case([call("get_weather", arguments)]))
    assert result.schema_valid is valid
    assert all(f.kind.value == "SchemaMismatch" for f in result.failures)


def test_required_failure_points_at_the_missing_property() -> None:
    result = grade(case([call("get_weather", {"days": 3})]))
    assert [(f.path, f.message) for f in result.failures] == [
        ("/city", "'city' is a required property")
    ]


def test_format_is_not_asserted() -> None:
    schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}
    result = grade(case([call("at", {"when": "next tuesday"})], tools=[tool("at", schema)]))
    assert result.schema_valid is True


def test_nested_schema_failure_has_a_json_pointer() -> None:
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"qty": {"type": "integer"}}},
            }
        },
    }
    result = grade(
        case(
            [call("order", {"items": [{"qty": 1}, {"qty": "two"}]})], tools=[tool("order", schema)]
        )
    )
    assert [(f.kind.value, f.path) for f in result.failures] == [("SchemaMismatch", "/items/1/qty")]


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "string", "pattern": "[a-"}}},
            id="pattern-that-does-not-compile",
        ),
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?P<n>a)"}}},
            id="pattern-in-python-syntax-not-ecma",
        ),
        pytest.param(
            {"type": "object", "properties": {"x": {"type": "strnig"}}}, id="unknown-type"
        ),
        pytest.param({"type": "object", "required": "x"}, id="required-not-a-list"),
        pytest.param(
            {"type": "object", "properties": {"x": {"$ref": "#/definitions/nope"}}},
            id="unresolvable-ref",
        ),
    ],
)
def test_a_broken_tool_schema_never_crashes_the_batch(schema: dict[str, Any]) -> None:
    result = grade(
        case(
            [call("bad", {"x": "ab"}), call("get_weather", {"city": "Paris"})],
            tools=[tool("bad", schema), tool("get_weather", WEATHER)],
        )
    )
    assert kinds(result) == [(0, "InvalidSchema")]
    assert result.schema_valid is False


@pytest.mark.parametrize(
    ("pattern", "value", "valid"),
    [
        pytest.param("^(?=.*[0-9])[a-z0-9]+$", "ab1", True, id="lookahead"),
        pytest.param("^(?=.*[0-9])[a-z0-9]+$", "abc", False, id="lookahead-fails"),
        pytest.param("(?<=\\$)[0-9]+$", "$12", True, id="lookbehind"),
        pytest.param("(?<=a+)b", "aab", True, id="variable-length-lookbehind-is-ecma"),
        pytest.param("^\\p{L}+$", "Zürich", True, id="unicode-letter-class"),
        pytest.param("^\\p{L}+$", "Zürich 8", False, id="unicode-letter-class-fails"),
        pytest.param("^\\d{3}$", "123", True, id="digits"),
    ],
)
def test_patterns_are_ecma_262(pattern: str, value: str, valid: bool) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}
    result = grade(case([call("f", {"x": value})], tools=[tool("f", schema)]))
    assert result.schema_valid is valid
    assert [f.kind.value for f in result.failures] == ([] if valid else ["SchemaMismatch"])


def test_a_pattern_mismatch_names_the_value_and_the_pattern() -> None:
    schema = {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}}}
    result = grade(case([call("f", {"zip": "7501"})], tools=[tool("f", schema)]))
    assert [(f.path, f.message) for f in result.failures] == [
        ("/zip", "'7501' does not match '^[0-9]{5}$'")
    ]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"days": "3"}, ("/days", "'3' is not of type 'integer'"), id="type"),
        pytest.param({"units": "k"}, ("/units", "'k' is not one of ['c', 'f']"), id="enum"),
        pytest.param({"city": 3}, ("/city", "3 is not of type 'string', 'null'"), id="two-types"),
    ],
)
def test_schema_messages_name_the_value_as_before(
    arguments: dict[str, Any], expected: tuple[str, str]
) -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": ["string", "null"], "enum": ["Paris"]},
            "days": {"type": "integer"},
            "units": {"enum": ["c", "f"]},
        },
    }
    result = grade(case([call("f", arguments)], tools=[tool("f", schema)]))
    assert [(f.path, f.message) for f in result.failures][:1] == [expected]


@pytest.mark.parametrize(
    "schema",
    [
        pytest.param(
            {
                "type": "object",
                "definitions": {"city": {"type": "string"}},
                "properties": {"x": {"$ref": "#/definitions/city"}},
            },
            id="local-ref",
        ),
        pytest.param(
            {
                "$id": "http://example.com/root.json",
                "type": "object",
                "definitions": {"city": {"$id": "city.json", "type": "string"}},
                "properties": {"x": {"$ref": "city.json"}},
            },
            id="ref-to-an-embedded-resource",
        ),
    ],
)
def test_a_message_behind_a_ref_names_the_referenced_type(schema: dict[str, Any]) -> None:
    result = grade(case([call("f", {"x": 3})], tools=[tool("f", schema)]))
    assert [(f.path, f.message) for f in result.failures] == [("/x", "3 is not of type 'string'")]


def jsonschema_order(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """The pointers of Python jsonschema's errors, in its order (how judge reported them)."""
    found = []
    for error in Draft7Validator(schema).iter_errors(arguments):
        where = "".join(f"/{p}" for p in error.absolute_path)
        if error.validator == "required":
            where += "/" + error.message.split("'")[1]
        found.append(where)
    return found


ITEM = {"type": "object", "properties": {"q": {"type": "integer"}, "p": {"type": "integer"}}}


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        pytest.param(
            {
                "type": "object",
                "properties": {"a": {"type": "array", "items": {"type": "integer"}}},
            },
            {"a": ["x"] * 12},
            id="twelve-items-by-index-not-as-text",
        ),
        pytest.param(
            {
                "$defs": {"X": {"type": "string"}},
                "properties": {"a": {"type": "string"}, "x": {"$ref": "#/$defs/X"}},
            },
            {"a": 1, "x": 1},
            id="a-ref-where-it-is-written",
        ),
        pytest.param(
            {"properties": {"a": {"type": "array", "items": ITEM}}},
            {"a": [{"q": "s", "p": "s"}, {"q": "s", "p": "s"}]},
            id="items-of-objects-item-by-item",
        ),
        pytest.param(
            {"patternProperties": {"^x": {"type": "string"}}},
            {"xb": 1, "xa": 1},
            id="pattern-properties-in-argument-order",
        ),
        pytest.param(
            {
                "if": {"properties": {"k": {"const": 1}}},
                "properties": {"a": {"type": "string"}},
                "then": {"properties": {"b": {"type": "string"}}},
            },
            {"k": 1, "a": 1, "b": 1},
            id="then-with-its-if",
        ),
        pytest.param(
            {
                "type": "object",
                "required": ["z"],
                "properties": {"b": {"type": "integer", "minimum": 3}, "a": {"enum": [1]}},
                "allOf": [{"properties": {"a": {"type": "string"}}}],
            },
            {"a": 2, "b": 1.5},
            id="keywords-in-schema-order",
        ),
    ],
)
def test_errors_come_in_jsonschemas_order(schema: dict[str, Any], arguments: Any) -> None:
    result = grade(case([call("f", arguments)], tools=[tool("f", schema)]))
    assert [f.path for f in result.failures] == jsonschema_order(schema, arguments)


def test_a_dependency_is_not_pointed_at_as_a_missing_required_property() -> None:
    schema = {"type": "object", "dependencies": {"a": ["z"]}}
    result = grade(case([call("f", {"a": 1})], tools=[tool("f", schema)]))
    assert [(f.kind.value, f.path) for f in result.failures] == [("SchemaMismatch", "")]


def test_errors_come_in_the_order_of_the_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}},
        "required": ["z"],
        "additionalProperties": False,
    }
    result = grade(case([call("f", {"a": "x", "b": "y", "q": 1})], tools=[tool("f", schema)]))
    assert [f.path for f in result.failures] == ["/b", "/a", "/z", ""]


def test_a_pattern_too_costly_to_evaluate_is_undecided_not_a_mismatch() -> None:
    pattern = "^((a|aa)+)\\1$"  # backtracks past the engine's limit on this value
    schema = {"type": "object", "properties": {"x": {"type": "string", "pattern": pattern}}}
    result = grade(case([call("f", {"x": "a" * 30 + "!"})], tools=[tool("f", schema)]))
    assert kinds(result) == [(0, "InvalidSchema")]
    assert "cannot be applied" in result.failures[0].message
    assert result.schema_valid is False and result.passed is not True


def test_a_remote_ref_is_never_fetched() -> None:
    schema = {"type": "object", "properties": {"x": {"$ref": "http://127.0.0.1:9/s.json"}}}
    result = grade(case([call("f", {"x": 1})], tools=[tool("f", schema)]))
    assert kinds(result) == [(0, "InvalidSchema")]


def test_validators_are_built_once_per_distinct_schema() -> None:
    cache = SchemaCache()
    first = cache.validator({"type": "object", "required": ["a"]})
    same_content = cache.validator({"required": ["a"], "type": "object"})  # other key order
    other = cache.validator({"type": "object"})
    assert first is same_content
    assert other is not first


def test_parse_arguments_returns_the_object() -> None:
    assert parse_arguments('{"a": [1, 2.5, null]}') == ({"a": [1, 2.5, None]}, "")
