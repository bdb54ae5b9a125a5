"""The published JSON Schemas (Draft 2020-12) of the three formats: cases in, results out, and
calibration records.

They start from the pydantic models and are then made honest about the wire format: a case is
read through before-validators that accept more shapes than the models hold (tools and responses
in OpenAI, Responses API and Anthropic form, expected calls copied as OpenAI tool calls, `name`
for `id`, no id at all), and a result is written by `CaseResult.to_json_dict`, which leaves
`judge`, `ungrounded_values`, `trajectory` and `final_state` out when they are unset.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from judge.calibrate._record import CalibrationRecord
from judge.cases._case import Case
from judge.cases._form import MATCH_MODES
from judge.cases._tools import LIST_RESULT_KEYS, TOOL_FORMS
from judge.checks._result import CaseResult
from judge.runs._records import RunRecord
from judge.service._matcher_schema import matcher_defs

SchemaName = Literal["case", "result", "run", "calibration"]
SCHEMA_NAMES: tuple[SchemaName, ...] = ("case", "result", "run", "calibration")
DIALECT = "https://json-schema.org/draft/2020-12/schema"

_TEXT_OR_NULL = {"type": ["string", "null"]}
_OBJECT_OR_NULL = {"type": ["object", "null"]}
_CALL_ARGUMENTS = {
    "description": "The arguments: JSON text (kept raw, so invalid JSON can be graded) or a "
    "JSON value (serialised); absent means none."
}


def json_schema(name: SchemaName) -> dict[str, Any]:
    """The JSON Schema of one format: `case`, `result`, `run` or `calibration`."""
    if name == "case":
        schema = _case_schema()
    elif name == "result":
        schema = _result_schema()
    elif name == "run":
        schema = RunRecord.model_json_schema(mode="serialization")
        schema["description"] = (
            "One line of a `judge run` runs file: one (model, case, run), with an agent run's "
            "transcript, steps, stop, final_answer, final_state, tool_errors and requests."
        )
    elif name == "calibration":
        schema = CalibrationRecord.model_json_schema(mode="serialization")
        schema["description"] = (
            "What `judge calibrate` writes and `judge grade --calibration` reads."
        )
    else:
        raise ValueError(f"no schema {name!r}: choose one of {', '.join(SCHEMA_NAMES)}")
    return {"$schema": DIALECT, "$id": f"urn:tool-call-judge:{name}", **schema}


def _result_schema() -> dict[str, Any]:
    schema = CaseResult.model_json_schema(mode="serialization")
    properties = schema["properties"]
    # to_json_dict always writes these, and writes the other fields only when they are set.
    schema["required"] = [
        "id",
        "tool_selection",
        "schema_valid",
        "argument_values",
        "passed",
        "tool_assertions",
        "call_scores",
        "failures",
    ]
    for key in ("judge", "ungrounded_values", "trajectory", "final_state"):
        options = [s for s in properties[key].get("anyOf", []) if s.get("type") != "null"]
        if options:
            properties[key] = {
                **{k: v for k, v in properties[key].items() if k != "anyOf"},
                **options[0],
            }
        properties[key].pop("default", None)
    schema["description"] = "One line of `judge check` / `judge grade` output (one per case)."
    return schema


def _case_schema() -> dict[str, Any]:
    schema = Case.model_json_schema(mode="validation")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    properties = schema["properties"]
    id_types = {"type": ["string", "number", "null"]}
    properties["id"] = {
        **id_types,
        "description": "The case id (numbers become text). Absent (and no `name`): "
        "`<file name>:<line>`.",
    }
    properties["name"] = {**id_types, "description": "Accepted for `id`."}
    schema["required"] = []
    properties["tools"] = {
        "description": "The tools offered, exactly as the model was given them.",
        "anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/ToolInput"}},
            {
                "type": "object",
                "description": "A whole MCP `tools/list` result.",
                "required": ["tools"],
                "properties": {
                    **dict.fromkeys(sorted(LIST_RESULT_KEYS), {}),
                    "tools": {"type": "array", "items": {"$ref": "#/$defs/ToolInput"}},
                },
                "additionalProperties": False,
            },
            {"type": "null"},
        ],
    }
    properties["response"] = {
        "description": "What the candidate returned, in any accepted shape; absent or null: "
        "not run yet.",
        "$ref": "#/$defs/ResponseInput",
    }
    properties["expected_calls"] = {
        "description": "Absent or null: unknown (judge only); []: no tool should be called.",
        "anyOf": [
            {"type": "array", "items": {"$ref": "#/$defs/ExpectedCallInput"}},
            {"type": "null"},
        ],
    }
    properties["match"] = {
        "description": "How strictly the calls must follow `expected_calls`; a mode alone "
        'is short for `{"mode": ...}`.',
        "anyOf": [
            {"$ref": "#/$defs/Match"},
            {"type": "string", "enum": list(MATCH_MODES)},
            {"type": "null"},
        ],
    }
    properties["draft"] = {
        "const": False,
        "description": 'An outline `judge init --from-mcp` writes has `"draft": true`: an '
        "`InvalidCase` until it is filled in and the mark removed (or set to false).",
    }
    defs.pop("Tool", None)
    defs.pop("Response", None)
    defs.pop("ToolCall", None)
    defs.update(_case_defs(defs.pop("ExpectedCall")))
    schema["description"] = (Case.__doc__ or "").strip()
    return schema


def _tool_form(form: str) -> dict[str, Any]:
    """The JSON Schema of one tool form, from the reader's own table of keys."""
    schema_key, keys = TOOL_FORMS[form]
    required = ["name"] if form in ("OpenAI chat", "Responses") else ["name", schema_key]
    properties: dict[str, Any] = dict.fromkeys(sorted(keys), {})
    properties["name"] = {"type": "string"}
    properties["description"] = _TEXT_OR_NULL
    properties[schema_key] = {
        "type": ["object", "null"] if len(required) == 1 else "object",
        "description": "The arguments' JSON Schema (none: the tool takes no arguments).",
    }
    function = {
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": False,
    }
    if form != "OpenAI chat":
        return {"title": form, **function}
    return {
        "title": form,
        "type": "object",
        "required": ["function"],
        "properties": {"type": {}, "function": function},
        "additionalProperties": False,
    }


def _case_defs(expected_call: dict[str, Any]) -> dict[str, Any]:
    tool = {
        "description": 'A tool in OpenAI chat form (`{"type": "function", "function": '
        "{...}}`), Responses form (`name`, `parameters`), Anthropic's (`name`, `input_schema`) "
        "or MCP's (`name`, `inputSchema`); a key the form does not have is refused.",
        "anyOf": [_tool_form(form) for form in TOOL_FORMS],
    }
    body = copy.deepcopy(expected_call)
    arguments = body["properties"]["arguments"]
    arguments.pop("default", None)
    arguments["additionalProperties"] = {"$ref": "#/$defs/ExpectedValue"}
    body["properties"]["arguments"] = {
        "anyOf": [
            arguments,
            {
                "type": "string",
                "pattern": r"^[ \t\n\r]*\{",
                "contentMediaType": "application/json",
                "description": "JSON text of the object.",
            },
        ]
    }
    # Only an object `function` is the OpenAI wrapper; anything else there is ignored.
    wrapped = {"properties": {"function": {"type": "object"}}, "required": ["function"]}
    expected = {
        "description": "An expected call, or an OpenAI tool call copied as is.",
        "anyOf": [
            {"type": "object", "required": ["function"], "properties": {"function": body}},
            {**body, "not": wrapped},
        ],
    }
    return {
        "ToolInput": tool,
        "ExpectedCallInput": expected,
        **matcher_defs(),
        "ResponseInput": _response_input(),
        "ResponseItem": _response_item(),
        "ResponseMessage": _message(),
    }


def _response_input() -> dict[str, Any]:
    # The loader reads a completion (`choices`) first, then a whole response (`output`, no
    # `type`), then a message, then an item.
    whole_response = {"required": ["output"], "not": {"required": ["type"]}}
    not_keys = {"not": {"anyOf": [{"required": ["choices"]}, whole_response]}}
    return {
        "description": "An OpenAI chat message or whole chat completion; a list of "
        '`{"name", "arguments"}`; OpenAI Responses API output items or a whole response; '
        "Anthropic content blocks or a whole message; or plain text.",
        "anyOf": [
            {"type": "null"},
            {"type": "string"},
            {"type": "array", "items": {"$ref": "#/$defs/ResponseItem"}},
            {
                "type": "object",
                "required": ["choices"],
                "properties": {
                    "choices": {
                        "type": "array",
                        "minItems": 1,
                        "prefixItems": [
                            {
                                "type": "object",
                                "properties": {"message": {"$ref": "#/$defs/ResponseInput"}},
                            }
                        ],
                    }
                },
                "description": "A whole chat completion: its first choice's message.",
            },
            {
                "type": "object",
                "required": ["output"],
                "not": {"anyOf": [{"required": ["choices"]}, {"required": ["type"]}]},
                "properties": {"output": {"$ref": "#/$defs/ResponseInput"}},
                "description": "A whole Responses API response.",
            },
            {
                "allOf": [
                    {"$ref": "#/$defs/ResponseMessage"},
                    {"anyOf": [{"required": [k]} for k in ("tool_calls", "content", "role")]},
                    not_keys,
                ]
            },
            {
                "allOf": [
                    {"$ref": "#/$defs/ResponseItem"},
                    {"type": "object"},
                    {
                        "not": {
                            "anyOf": [{"required": [k]} for k in ("tool_calls", "content", "role")]
                        }
                    },
                    not_keys,
                ]
            },
        ],
    }


def _message() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "A chat message: text or content parts, and tool calls.",
        "properties": {
            "content": {
                "anyOf": [
                    {"type": ["string", "null"]},
                    {"type": "array", "items": {"$ref": "#/$defs/ResponseItem"}},
                ]
            },
            "tool_calls": {
                "anyOf": [
                    {"type": "null"},
                    {"type": "array", "items": {"$ref": "#/$defs/ResponseItem"}},
                ]
            },
        },
    }


def _response_item() -> dict[str, Any]:
    def typed(kind: Any, required: list[str], **properties: Any) -> dict[str, Any]:
        return {
            "type": "object",
            "required": ["type", *required],
            "properties": {"type": kind, **properties},
        }

    no_function = {
        "not": {"properties": {"function": {"type": "object"}}, "required": ["function"]}
    }
    return {
        "description": "One tool call, text part or message, in any supported form.",
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "required": ["function"],
                "properties": {
                    "function": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "arguments": _CALL_ARGUMENTS},
                    }
                },
                "description": "An OpenAI chat tool call.",
            },
            {
                "allOf": [
                    typed({"const": "function_call"}, ["name"], name={"type": "string"}),
                    no_function,
                ],
                "description": "A Responses API function call (`arguments`, `call_id`).",
            },
            {
                "allOf": [
                    typed({"const": "tool_use"}, ["name"], name={"type": "string"}),
                    no_function,
                ],
                "description": "An Anthropic tool_use block (`input`).",
            },
            {
                "allOf": [
                    typed(
                        {"enum": ["text", "output_text", "input_text"]},
                        ["text"],
                        text={"type": "string"},
                    ),
                    no_function,
                ]
            },
            {"allOf": [typed({"const": "message"}, []), {"$ref": "#/$defs/ResponseMessage"}]},
            {
                "allOf": [
                    typed({"enum": ["reasoning", "thinking", "redacted_thinking", "refusal"]}, []),
                    no_function,
                ]
            },
            {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "type": {"type": "null"},
                    "name": {"type": "string"},
                    "arguments": _CALL_ARGUMENTS,
                },
                **no_function,
                "description": 'A plain `{"name", "arguments"}` call.',
            },
        ],
    }
