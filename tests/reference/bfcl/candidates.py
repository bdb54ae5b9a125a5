"""Candidate answers to a BFCL item: its gold answer as a model would give it (each parameter's
first acceptable value; optional ones left out), and systematic edits of it, each named.

Java and JavaScript values are written as a model gives them there, strings in the language's
syntax (`"5L"`, `new ArrayList<>(Arrays.asList("a"))`, `{limit: 50}`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

Call = tuple[str, dict[str, Any]]
_NUMBERS = (int, float)


@dataclass(frozen=True)
class Candidate:
    kind: str
    """What was done to the gold answer (`gold`, `case`, `int_as_float`, ...)."""
    calls: tuple[Call, ...]
    """The calls, by BFCL's function names, with Python values (before encoding)."""


def pick(key: str, count: int) -> int:
    """A deterministic choice among `count` (the same for every run and machine)."""
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % count


def gold_calls(truth: list[dict[str, Any]], full: bool) -> list[Call]:
    """Each call's first acceptable values; `full` gives optional parameters too."""
    calls = []
    for call in truth:
        [(name, options)] = call.items()
        arguments = {}
        for key, values in options.items():
            given = [v for v in values if v != ""]
            if given and (full or "" not in values):
                arguments[key] = _first(given[0], full)
        calls.append((name, arguments))
    return calls


def _first(value: Any, full: bool) -> Any:
    """A dict option's keys (or a list of them) take their first values in turn."""
    if isinstance(value, dict):
        out = {}
        for key, values in value.items():
            listed = values if isinstance(values, list) else [values]
            given = [v for v in listed if v != ""]
            if given and (full or "" not in listed):
                out[key] = given[0]
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_first(v, full) for v in value]
    return value


def candidates(
    item_id: str, truth: list[dict[str, Any]], functions: list[dict[str, Any]]
) -> list[Candidate]:
    """The gold answer and its edits (each edit applied to one deterministic call and
    parameter; an edit that applies nowhere is left out)."""
    gold = gold_calls(truth, full=False)
    full = gold_calls(truth, full=True)
    found = [Candidate("gold", tuple(gold))]
    if full != gold:
        found.append(Candidate("gold_full", tuple(full)))
    docs = {f["name"]: f for f in functions}
    for kind, edit in _EDITS.items():
        edited = _apply(item_id, kind, edit, full if kind == "drop_optional" else gold, docs)
        if edited is not None:
            found.append(Candidate(kind, tuple(edited)))
    if len(gold) > 1:
        found.append(Candidate("reorder", tuple(reversed(gold))))
        found.append(Candidate("drop_call", tuple(gold[:-1])))
    found.append(Candidate("extra_call", (*gold, gold[0])))
    found.append(Candidate("no_call", ()))
    names = [f["name"] for f in functions if f["name"] != gold[0][0]] if gold else []
    wrong = names[pick(item_id, len(names))] if names else gold[0][0] + "_v2"
    found.append(Candidate("wrong_name", ((wrong, gold[0][1]), *gold[1:])))
    return found


def _apply(
    item_id: str, kind: str, edit: Any, calls: list[Call], docs: dict[str, Any]
) -> list[Call] | None:
    order = sorted(range(len(calls)), key=lambda i: pick(f"{item_id}/{kind}/{i}", 1000))
    for index in order:
        name, arguments = calls[index]
        doc = docs.get(name, {}).get("parameters", {})
        edited = edit(dict(arguments), doc, f"{item_id}/{kind}")
        if edited is not None:
            return [*calls[:index], (name, edited), *calls[index + 1 :]]
    return None


def _one(arguments: dict[str, Any], key: str, test: Any) -> str | None:
    """One argument's name that passes `test`, chosen deterministically."""
    names = sorted(k for k, v in arguments.items() if test(v))
    return names[pick(key, len(names))] if names else None


def _edit_value(change: Any, test: Any) -> Any:
    def edit(arguments: dict[str, Any], doc: dict[str, Any], key: str) -> dict[str, Any] | None:
        name = _one(arguments, key, test)
        if name is None:
            return None
        return arguments | {name: change(arguments[name])}

    return edit


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and any(c.isalpha() for c in value)


def _is_int(value: Any) -> bool:
    return type(value) is int


def _nested(change: Any, kinds: tuple[type, ...] = (str, int, float)) -> Any:
    """Change one string or number inside a dict (or a dict in a list) value."""

    def inner(value: Any) -> Any:
        if isinstance(value, list):
            return [inner(value[0]), *value[1:]]
        key = next(k for k, v in value.items() if _kind_in(v, kinds))
        return value | {key: change(value[key])}

    return inner


def _kind_in(value: Any, kinds: tuple[type, ...]) -> bool:
    return type(value) in kinds


def _has_nested(kinds: tuple[type, ...] = (str, int, float)) -> Any:
    def test(value: Any) -> bool:
        if isinstance(value, list) and value and isinstance(value[0], dict):
            value = value[0]
        return isinstance(value, dict) and any(_kind_in(v, kinds) for v in value.values())

    return test


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, _NUMBERS):
        return value + 7
    if isinstance(value, str):
        return value + " extra" if value else "something"
    if isinstance(value, list):
        return value[:-1] if value else ["something"]
    if isinstance(value, dict):
        return _nested(_wrong)(value) if _has_nested()(value) else value | {"extra": 1}
    return "something"


def _drop(which: str) -> Any:
    def edit(arguments: dict[str, Any], doc: dict[str, Any], key: str) -> dict[str, Any] | None:
        required = set(doc.get("required", []))
        names = sorted(k for k in arguments if (k in required) == (which == "required"))
        if not names:
            return None
        name = names[pick(key, len(names))]
        return {k: v for k, v in arguments.items() if k != name}

    return edit


def _add_param(arguments: dict[str, Any], doc: dict[str, Any], key: str) -> dict[str, Any]:
    unused = sorted(k for k in doc.get("properties", {}) if k not in arguments)
    if unused:
        name = unused[pick(key, len(unused))]
        kind = doc["properties"][name].get("type")
        value: Any = {"integer": 1, "float": 1.5, "boolean": True}.get(kind, "value")
        return arguments | {name: value}
    return arguments | {"unexpected_parameter": "value"}


def _as_text(value: Any) -> Any:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _spaced(text: str) -> str:
    return text.replace(" ", "") if " " in text else text[:1] + " " + text[1:]


def _in_list(change: Any, test: Any) -> Any:
    """An edit of a list's first item (where the item passes `test`)."""
    return _edit_value(
        lambda v: [change(v[0]), *v[1:]], lambda v: isinstance(v, list) and bool(v) and test(v[0])
    )


def _integral_float(value: Any) -> bool:
    return type(value) is float and value == int(value)


_EDITS: dict[str, Any] = {
    "case": _edit_value(str.swapcase, _is_text),
    "upper": _edit_value(str.upper, _is_text),
    "space": _edit_value(_spaced, _is_text),
    "punct": _edit_value(lambda s: s.replace(" ", "-") + ".", _is_text),
    "quote": _edit_value(lambda s: f"'{s}'", _is_text),
    "int_as_float": _edit_value(float, _is_int),
    "float_as_int": _edit_value(int, _integral_float),
    "number_as_text": _edit_value(_as_text, lambda v: isinstance(v, (int, float))),
    "text_as_number": _edit_value(lambda s: 1, _is_text),
    "wrong_value": _edit_value(_wrong, lambda v: True),
    "nested_case": _edit_value(_nested(str.swapcase, (str,)), _has_nested((str,))),
    "nested_number": _edit_value(_nested(float, (int,)), _has_nested((int,))),
    "list_case": _in_list(str.upper, _is_text),
    "list_int_as_float": _in_list(float, _is_int),
    "list_float_as_int": _in_list(int, _integral_float),
    "drop_optional": _drop("optional"),
    "drop_required": _drop("required"),
    "extra_param": _add_param,
}
"""The edits, each applied to one argument of one call where it applies."""
