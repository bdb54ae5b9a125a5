"""BFCL's possible answers as the case format's value matchers, so that `judge check` accepts
what `bfcl-eval`'s AST checker accepts (`ast_checker.simple_function_checker`).

The case says `"match": {"args": "exact", "values": {"strings": "bfcl", "numbers": "strict"}}`:
a literal string compares as BFCL's `standardize_string` does, a literal integer wants an
integer (`10.0` fails) and a literal float takes an integer too. Where BFCL compares otherwise,
the matcher says so: Python's `==` inside a dict or a list (`{"$number": 3}` takes `3.0`), and
exact strings where BFCL reads the answer as a variable's name (its type is not the declared
one) or compares a nested list. Java and JavaScript values are strings in those languages'
syntax (`_bfcl_encoded`)."""

from __future__ import annotations

from typing import Any

from judge.cases._bfcl_encoded import Unconvertible, encoded_matcher, option_fields

PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
"""The declared types BFCL's checker knows for Python (its `PYTHON_TYPE_MAPPING`)."""
_ARRAYS = ("array", "tuple")
PYTHON_VALUES = {"strings": "bfcl", "numbers": "strict"}
"""The case's value defaults for a Python category (Java and JavaScript: exact strings)."""


def argument_matcher(
    name: str, options: list[Any], declared: dict[str, Any] | None, required: bool, language: str
) -> Any:
    """The matcher of one parameter: `{"$any": [...]}`, with `"$optional": true` where BFCL
    lets it be left out ("" among the options, and the function does not require it)."""
    if not isinstance(options, list):
        raise ValueError(f"the acceptable values of {name!r} are not a list")
    optional = "" in options and not required
    if declared is None:  # BFCL fails the parameter whenever it is given
        if optional:
            return {"$absent": True}
        accepted = [_exact(o) for o in options if o != ""]
    elif language == "python":
        accepted = _python_options(name, options, declared)
    else:
        accepted = encoded_matcher(name, options, declared, language)
    matcher: dict[str, Any] = {"$any": accepted}
    if optional:
        matcher["$optional"] = True
    return matcher


def _python_options(name: str, options: list[Any], declared: dict[str, Any]) -> list[Any]:
    kind = declared.get("type")
    if kind not in PYTHON_TYPES:
        raise Unconvertible(f"parameter {name!r} has type {kind!r}, which BFCL cannot check")
    want = PYTHON_TYPES[kind]
    items = declared.get("items")
    if kind in _ARRAYS and (not isinstance(items, dict) or items.get("type") not in PYTHON_TYPES):
        inner = items.get("type") if isinstance(items, dict) else None
        raise Unconvertible(f"parameter {name!r} is an array of {inner!r}, which BFCL cannot check")
    given = [o for o in options if o != ""]
    answer_type = type(given[0]) if given else None
    if answer_type is not None and answer_type is not want:
        # BFCL reads such an answer as a variable's name: the value is compared with `==`
        # and may be of the declared type or of the answer's.
        gate = {want, answer_type} | ({int} if want is float else set())
        return [_variable(o, gate) for o in options if o != "" or str in gate]
    if want is str:
        return [o for o in options if isinstance(o, str)]  # "" too: BFCL accepts ""
    if kind in _ARRAYS:
        return _array_options(name, options, declared)
    if want is dict:
        return [_dict_matcher(name, o) for o in given]
    return given  # integers, floats and booleans: the case's strict numbers


def _variable(option: Any, gate: set[type]) -> Any:
    if type(option) is int and float not in gate:
        return option  # an integer, as the case's strict numbers want
    return _exact(option)


def _array_options(name: str, options: list[Any], declared: dict[str, Any]) -> list[Any]:
    inner = declared["items"]["type"]  # (checked by the caller)
    accepted: list[Any] = []
    for option in options:
        if option == "":
            accepted.append([])  # BFCL's list check reads "" as an empty list
        elif not isinstance(option, list):
            accepted.append(_exact(option))
        elif inner == "dict":
            accepted.append([_dict_matcher(name, item) for item in option])
        else:
            # Each item must be of the item type or of the option's first item's (so an
            # integer item takes a float only where one of them is float), unless "" is among
            # the options: then BFCL's type check passes whatever the items are.
            floats = PYTHON_TYPES[inner] is float or (bool(option) and type(option[0]) is float)
            if floats and type(option[0]) is float and "" not in options:
                # BFCL's item type check: each a float, as the answer's first item is
                accepted.append([_float_item(item) for item in option])
                continue
            accepted.append([_listed(item, floats or "" in options) for item in option])
    return accepted


def _float_item(item: Any) -> Any:
    """An item of a list of floats as BFCL checks it: a float (an integer fails its type
    check), equal by value; what is no number is compared as `_listed` compares it."""
    if type(item) in (int, float):
        return {"$number": item, "int": False}
    return _listed(item)


def _listed(item: Any, loose: bool = True) -> Any:
    """An item of a list as BFCL's list check compares it: strings standardised, the rest
    with `==` (an integer item takes a float only where BFCL's type check lets one by)."""
    if type(item) is int and not loose:
        return item  # the case's strict numbers: an integer
    return item if isinstance(item, str) else _exact(item)


def _dict_matcher(name: str, option: Any) -> Any:
    """A dict option as BFCL's `dict_checker`: no key it does not list, each key's value
    among its own options (standardised when a string, else `==`), "" making it optional."""
    if not isinstance(option, dict):
        raise Unconvertible(f"an acceptable value of {name!r} is not an object of options")
    fields = {}
    for key, values in option_fields(option):
        field: dict[str, Any] = {"$any": [_listed(v) for v in values]}
        if "" in values:
            field["$optional"] = True
        fields[key] = field
    return {"$object": fields, "extra": "forbid"}


def _exact(value: Any) -> Any:
    """A value compared as Python's `==` compares it: strings exactly, numbers by value."""
    if isinstance(value, str):
        return {"$string": value, "case": True}  # (an option: not the case's bfcl default)
    if type(value) is int:
        return {"$number": value}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    if isinstance(value, dict):
        return {"$object": {k: _exact(v) for k, v in value.items()}, "extra": "forbid"}
    return value
