"""BFCL's function documents as the tools a function-calling model is given, the way
`bfcl-eval` gives them: its language hints, its Python-flavoured types as JSON Schema
(`GORILLA_TO_OPENAPI`), and for Java and JavaScript every parameter a string in the language's
syntax. Keywords that JSON Schema enforces but BFCL's checker ignores (`enum`, bounds) move
into the description: BFCL accepts `"celsius"` for an enum of `"Celsius"`, a schema would not."""

from __future__ import annotations

import copy
import json
from typing import Any

GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number",
    "char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
    "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}  # fmt: skip
"""bfcl-eval's `constants/type_mappings.GORILLA_TO_OPENAPI`."""
UNCHECKED = (
    "enum", "const", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
    "minProperties", "maxProperties",
)  # fmt: skip
"""Assertions JSON Schema makes and BFCL's checker does not: said in the description."""
_HINTS = {
    "python": " Note that the provided function is in Python 3 syntax.",
    "java": " Note that the provided function is in Java 8 SDK syntax.",
    "javascript": " Note that the provided function is in JavaScript syntax.",
}
_OBJECT_NAMES = {"java": "Java", "javascript": "JavaScript"}


def function_parameters(function: dict[str, Any], language: str) -> tuple[str, dict[str, Any]]:
    """The description and the JSON Schema of the parameters of one BFCL function."""
    parameters = copy.deepcopy(function.get("parameters") or {})
    properties = parameters.get("properties") or {}
    if not isinstance(properties, dict):
        raise ValueError("the function's `parameters.properties` is not an object")
    if language != "python":
        _as_strings(properties, language)
    parameters["type"] = "object"
    parameters["properties"] = _openapi(properties)
    return str(function.get("description", "")) + _HINTS[language], parameters


def _as_strings(properties: dict[str, Any], language: str) -> None:
    """bfcl-eval's `_func_doc_language_specific_pre_processing`: each parameter a string in
    the language's syntax, its type said in words."""
    name = _OBJECT_NAMES[language]
    for value in properties.values():
        kind = value.get("type")
        if kind == "any":
            note = f" This parameter can be of any type of {name} object in string representation."
        else:
            note = f" This is {name} {kind} type parameter in string representation."
        lists = ("ArrayList", "Array") if language == "java" else ("array",)
        if kind in lists and isinstance(value.get("items"), dict):
            note += (
                f" The list elements are of type {value['items'].get('type')}; they are not in"
                " string representation."
            )
            del value["items"]
        if language == "javascript" and kind == "dict" and "properties" in value:
            note += (
                " The dictionary entries have the following schema; they are not in string "
                f"representation. {json.dumps(value['properties'])}"
            )
            del value["properties"]
        value["description"] = str(value.get("description", "")) + note
        value["type"] = "string"


def _openapi(properties: dict[str, Any]) -> dict[str, Any]:
    """bfcl-eval's `_cast_to_openai_type`, at every level of properties and items."""
    for key, value in properties.items():
        if not isinstance(value, dict):
            raise ValueError(f"parameter {key!r} is not described by an object")
        if value.get("type") == "float":
            value["format"] = "float"
            value["description"] = (
                str(value.get("description", "")) + " This is a float type value."
            )
        _node(value)
    return properties


def _node(value: dict[str, Any]) -> None:
    kind = value.get("type")
    value["type"] = GORILLA_TO_OPENAPI.get(kind, "string") if isinstance(kind, str) else "string"
    if "default" in value and value["default"] is None:
        value["type"] = [value["type"], "null"]  # a parameter whose default is null takes it
    _say_unchecked(value)
    if isinstance(value.get("properties"), dict):
        _openapi(value["properties"])
    elif isinstance(value.get("items"), dict):
        _node(value["items"])


def _say_unchecked(node: dict[str, Any]) -> None:
    said = []
    for key in UNCHECKED:
        if key in node:
            value = node.pop(key)
            if key == "enum" and isinstance(value, list):
                said.append("One of: " + ", ".join(json.dumps(v) for v in value) + ".")
            else:
                said.append(f"{key}: {json.dumps(value)}.")
    if said:
        node["description"] = " ".join([str(node.get("description", "")), *said]).strip()
