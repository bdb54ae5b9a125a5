"""Structural checks of one call: strict JSON arguments, a known name, the tool's own schema."""

from __future__ import annotations

from typing import Any

from jsonschema_rs import Draft7Validator, ValidationError
from jsonschema_rs import ValidationErrorKind as Kind

from judge.cases._calls import json_kind, pointer
from judge.cases._json import DecodeError, dumps, loads

_CACHE_LIMIT = 4096


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """Parse argument text strictly (RFC 8259: no NaN, no trailing data). Returns the object,
    or None and the reason it is not a JSON object."""
    try:
        value = loads(raw)
    except DecodeError as exc:
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
    """Draft 7 validators (jsonschema-rs), built and checked once per distinct schema (keyed by
    content). `pattern` is ECMA-262, as JSON Schema specifies; `format` is not asserted; a
    remote `$ref` is never fetched."""

    def __init__(self) -> None:
        self._by_content: dict[bytes, Draft7Validator | str] = {}

    def validator(self, schema: dict[str, Any]) -> Draft7Validator | str:
        """The validator for `schema`, or why the schema itself is invalid."""
        key = dumps(schema, sort_keys=True, default=repr)
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
            if validator.is_valid(arguments):  # the common case: no error walk
                return [], None
            found = sorted(validator.iter_errors(arguments), key=lambda e: _order(schema, e))
        except ValueError as exc:  # a value the validator cannot take
            return [], f"the tool's schema cannot be applied: {type(exc).__name__}: {exc}"
        for error in found:
            # A pattern too costly to evaluate: the validator cannot say whether the value fits.
            if isinstance(error.kind, Kind.BacktrackLimitExceeded | Kind.RegexEngineFailure):
                return [], f"the tool's schema cannot be applied: {error.message}"
        return [(_error_pointer(error), _message(schema, error)) for error in found], None


def _order(schema: Any, error: ValidationError) -> tuple[list[int], list[str | int]]:
    """Errors in the order of the schema's own keywords (as jsonschema reports them), then by
    place in the arguments."""
    places: list[int] = []
    node = schema
    for part in error.schema_path:
        if isinstance(node, dict) and part in node:
            places.append(list(node).index(part))
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            places.append(part)
            node = node[part]
        else:
            break
    return places, [str(p) for p in error.instance_path]


def _message(schema: dict[str, Any], error: ValidationError) -> str:
    """The message jsonschema writes for the common keywords (a value as Python shows it),
    and the validator's own for the rest."""
    match error.kind:
        case Kind.Required(property=name):
            return f"{name!r} is a required property"
        case Kind.Type(types=types):
            listed = _types_in_schema_order(schema, error.schema_path, types)
            return f"{error.instance!r} is not of type {', '.join(repr(t) for t in listed)}"
        case Kind.Enum(options=options):
            return f"{error.instance!r} is not one of {options!r}"
        case Kind.Constant(expected_value=value):
            return f"{value!r} was expected"
        case Kind.Pattern(pattern=pattern):
            return f"{error.instance!r} does not match {pattern!r}"
    return error.message


def _types_in_schema_order(schema: Any, path: list[str | int], types: list[str]) -> list[str]:
    """The validator lists a `type` keyword's types in its own order; the schema's order reads
    better, when the path leads to that same keyword."""
    for part in path:
        try:
            schema = schema[part]
        except (KeyError, IndexError, TypeError):
            return types
    listed = schema if isinstance(schema, list) else [schema]
    return listed if sorted(map(str, listed)) == sorted(types) else types


def _error_pointer(error: ValidationError) -> str:
    path = pointer(error.instance_path)
    if isinstance(error.kind, Kind.Required):  # point at the missing property itself
        return path + pointer((error.kind.property,))
    return path


def _build(schema: dict[str, Any]) -> Draft7Validator | str:
    try:
        return Draft7Validator(schema, validate_formats=False, offline=True)
    except ValidationError as exc:  # the schema fails the meta-schema, or a $ref is unresolvable
        where = pointer(exc.instance_path) or "/"
        return f"the tool's schema is invalid at {where}: {exc.message}"
    except Exception as exc:
        return f"the tool's schema is invalid: {type(exc).__name__}: {exc}"
