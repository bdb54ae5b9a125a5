"""Structural checks of one call: strict JSON arguments, a known name, the tool's own schema."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from jsonschema_rs import Draft7Validator, ValidationError
from jsonschema_rs import ValidationErrorKind as Kind

from judge.cases._json import DecodeError, decoder, dumps, json_kind, pointer
from judge.cases._lean import LeanTool

if TYPE_CHECKING:
    from judge.cases._case import Tool

_CACHE_LIMIT = 4096
_decode = decoder.decode


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str]:
    """Parse argument text strictly (RFC 8259: no NaN, no trailing data). Returns the object,
    or None and the reason it is not a JSON object."""
    try:
        value = _decode(raw)
    except RecursionError:
        return None, "the arguments are not valid JSON: JSON is nested too deeply"
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
        # Keyed by the schema's text as given (a lean tool's, whose key order is the schema's
        # own), or by the sorted text of a `Tool`'s: apart, so each keeps its schema's order.
        self._by_text: dict[bytes, tuple[Draft7Validator | str, dict[str, Any]]] = {}
        self._by_content: dict[bytes, tuple[Draft7Validator | str, dict[str, Any]]] = {}

    def validator(self, schema: dict[str, Any]) -> Draft7Validator | str:
        """The validator for `schema`, or why the schema itself is invalid."""
        key = dumps(schema, sort_keys=True, default=repr)
        return (self._by_content.get(key) or self._add(self._by_content, key, schema))[0]

    def errors(
        self, tool: Tool | LeanTool, arguments: dict[str, Any]
    ) -> tuple[list[tuple[str, str]], str | None]:
        """Validate `arguments` against `tool`'s schema: the `(pointer, message)` of each
        violation, and the reason the schema is unusable (then the list is empty)."""
        if isinstance(tool, LeanTool):  # keyed by the schema's text: nothing to encode
            entry = self._by_text.get(tool.schema_key)
            validator, schema = entry or self._add(self._by_text, tool.schema_key, tool.parameters)
        else:
            schema = tool.parameters  # its own key order, for the order of the errors
            validator = self.validator(schema)
        if isinstance(validator, str):
            return [], validator
        try:
            if validator.is_valid(arguments):  # the common case: no error walk
                return [], None
            found = list(validator.iter_errors(arguments))
            if len(found) > 1:
                found.sort(key=lambda e: _order(schema, arguments, e))
        except ValueError as exc:  # a value the validator cannot take
            return [], f"the tool's schema cannot be applied: {type(exc).__name__}: {exc}"
        if not found:  # invalid, yet no error to show: never a silent pass
            return [], "the tool's schema cannot be applied: invalid, with no error reported"
        for error in found:
            # A pattern too costly to evaluate: the validator cannot say whether the value fits.
            if isinstance(error.kind, (Kind.BacktrackLimitExceeded, Kind.RegexEngineFailure)):
                return [], f"the tool's schema cannot be applied: {error.message}"
        return [(_error_pointer(error), _message(schema, error)) for error in found], None

    @staticmethod
    def _add(
        built: dict[bytes, tuple[Draft7Validator | str, dict[str, Any]]],
        key: bytes,
        schema: dict[str, Any],
    ) -> tuple[Draft7Validator | str, dict[str, Any]]:
        if len(built) >= _CACHE_LIMIT:
            built.clear()
        entry = built[key] = (_build(schema), schema)
        return entry


# Keywords whose next path part names a child schema, and those whose next part indexes one.
_NAMED = frozenset(("properties", "patternProperties", "definitions", "$defs", "dependencies"))
_LISTED = frozenset(("allOf", "anyOf", "oneOf", "items"))
# Keywords that descend into one value of the instance (a property, an item).
_DESCEND = frozenset(
    ("properties", "patternProperties", "additionalProperties", "items", "additionalItems")
)


def _order(schema: Any, arguments: Any, error: ValidationError) -> list[int]:
    """A sort key that lists errors as Python jsonschema did: depth first, each schema's
    keywords in the schema's own order (`then`/`else` with their `if`), a `$ref` where it is
    written, items by index, other keys of the arguments in their order. The validator walks
    keywords in an order of its own; where this walk cannot follow, its order stands."""
    key: list[int] = []
    steps, path = list(error.instance_path), list(error.evaluation_path)
    node, value, i = schema, arguments, 0
    while i < len(path) and isinstance(node, dict) and path[i] in node:
        part = path[i]
        names = list(node)
        key.append(names.index("if" if part in ("then", "else") and "if" in node else part))
        child, i = node[part], i + 1
        if part == "$ref":
            node = _local(schema, child)
            continue
        after = path[i] if i < len(path) else None
        if part in _NAMED and isinstance(child, dict) and isinstance(after, str) and after in child:
            key.append(list(child).index(after))
            child, i = child[after], i + 1
        elif part in _LISTED and isinstance(child, list) and isinstance(after, int):
            if not 0 <= after < len(child):
                break
            key.append(after)
            child, i = child[after], i + 1
        if part in _DESCEND and steps:
            step = steps.pop(0)
            if isinstance(step, int):
                key.append(step)
                value = value[step] if isinstance(value, list) and 0 <= step < len(value) else None
            else:
                if part != "properties" and isinstance(value, dict) and step in value:
                    key.append(list(value).index(step))
                value = value.get(step) if isinstance(value, dict) else None
        node = child
    return key


def _local(schema: Any, ref: Any) -> Any:
    """The schema a local `$ref` (`#`, `#/definitions/x`) points to; None for any other."""
    if not isinstance(ref, str) or not ref.startswith("#"):
        return None
    node = schema
    for part in ref[1:].split("/")[1:] if ref != "#" else []:
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    return node


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
    # Point at a property `required` misses (not one `dependencies` does: the same kind).
    if isinstance(error.kind, Kind.Required) and error.schema_path[-1:] == ["required"]:
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
