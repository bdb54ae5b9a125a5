"""Structural checks of one call: strict JSON arguments, a known name, the tool's own schema."""

from __future__ import annotations

from typing import Any

import orjson
from jsonschema import Draft7Validator
from jsonschema.exceptions import SchemaError, ValidationError

from judge.cases._calls import json_kind, pointer

_CACHE_LIMIT = 4096


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """Parse argument text strictly (RFC 8259: no NaN, no trailing data). Returns the object,
    or None and the reason it is not a JSON object."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        text = raw.strip()
        if not text:
            return None, "the arguments are empty; a call without arguments sends {}"
        if text.startswith("```"):
            return None, "the arguments are wrapped in a markdown fence, not bare JSON"
        return None, f"the arguments are not valid JSON: {exc}"
    if isinstance(value, dict):
        return value, ""
    if isinstance(value, str):
        return None, "the arguments are a JSON string, not an object (JSON inside a string?)"
    return None, f"the arguments must be a JSON object, got {json_kind(value)}"


class SchemaCache:
    """Draft 7 validators, built and checked once per distinct schema (keyed by content)."""

    def __init__(self) -> None:
        self._by_content: dict[bytes, Draft7Validator | str] = {}

    def validator(self, schema: dict[str, Any]) -> Draft7Validator | str:
        """The validator for `schema`, or why the schema itself is invalid."""
        key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS, default=repr)
        found = self._by_content.get(key)
        if found is None:
            if len(self._by_content) >= _CACHE_LIMIT:
                self._by_content.clear()
            found = self._by_content[key] = _build(schema)
        return found

    def errors(
        self, schema: dict[str, Any], arguments: dict[str, Any]
    ) -> tuple[list[tuple[str, str]], str | None]:
        """Validate `arguments`: the `(pointer, message)` of each violation, and the reason the
        schema is unusable (then the list is empty)."""
        validator = self.validator(schema)
        if isinstance(validator, str):
            return [], validator
        try:
            found = [(_error_pointer(err), err.message) for err in validator.iter_errors(arguments)]
        except Exception as exc:  # a schema that passed the meta-schema can still fail (bad $ref)
            return [], f"the tool's schema cannot be applied: {type(exc).__name__}: {exc}"
        return found, None


def _error_pointer(error: ValidationError) -> str:
    path = pointer(error.absolute_path)
    required = error.validator_value
    if (
        error.validator == "required"
        and isinstance(error.instance, dict)
        and isinstance(required, list)
    ):
        # Point at the missing property itself, as MissingArgument does.
        for name in required:
            if name not in error.instance and error.message.startswith(repr(name)):
                return path + pointer((name,))
    return path


def _build(schema: dict[str, Any]) -> Draft7Validator | str:
    try:
        Draft7Validator.check_schema(schema)
    except SchemaError as exc:
        where = pointer(exc.absolute_path) or "/"
        return f"the tool's schema is invalid at {where}: {exc.message}"
    except Exception as exc:
        return f"the tool's schema is invalid: {type(exc).__name__}: {exc}"
    return Draft7Validator(schema)
