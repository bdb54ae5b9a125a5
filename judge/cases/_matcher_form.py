"""The value matchers of an expected value, as the case format writes them, and what is wrong
with one: `{"$number": 3.5, "abs": 0.01}`, `{"$string": "Paris", "case": false}`, `{"$any":
[...], "$optional": true}`, at any depth. The checks compare with them (`checks/_matchers`);
this module only reads them (free of the checks, as the case reader is)."""

from __future__ import annotations

from datetime import date
from functools import lru_cache
from typing import Any

from jsonschema_rs import Draft7Validator

from judge.cases._fields import nearest
from judge.cases._json import dumps

HEADS = (
    "$any", "$number", "$int", "$string", "$regex", "$date", "$unordered", "$object", "$judge",
)  # fmt: skip
"""The keys that say what a matcher accepts: a matcher has one of them at most."""
FLAGS = ("$optional", "$absent")
"""The keys that say whether the value may (`$optional`) or must (`$absent`) be left out."""
MATCHER_KEYS = frozenset((*HEADS, *FLAGS))
OPTIONS: dict[str, dict[str, tuple[Any, ...] | None]] = {
    "$number": {"abs": None, "rel": None, "int": (True, False)},
    "$string": {
        "case": (True, False),
        "space": ("exact", "collapse", "ignore"),
        "punct": ("exact", "ignore"),
        "normalise": ("bfcl",),
    },
    "$date": {"order": ("dmy", "mdy")},
    "$object": {"extra": ("allow", "forbid")},
}
"""Each head's options (keys without `$`) and their values (None: a number of at least 0)."""
DEEPEST = 64
"""How deep in an expected value a matcher may sit (values deeper are compared literally by
iteration; a matcher's comparison recurses)."""
_NESTING = ("$any", "$unordered")
"""Heads whose values hold other values to compare, where `$judge` may not sit (the judge
decides one value at one known place) nor `$optional` / `$absent` (no key to leave out)."""

Fault = tuple[tuple[str | int, ...], str]
"""Where (from the expected value), and what is wrong."""


def is_matcher(value: Any) -> bool:
    """Whether an expected value is a matcher: an object with a key beginning with `$`."""
    return type(value) is dict and any(type(k) is str and k.startswith("$") for k in value)


def head_of(matcher: dict[str, Any]) -> str | None:
    """A matcher's head (`$number`, ...), or None for one of flags alone."""
    for key in matcher:
        if key in HEADS:
            return key
    return None


def holds_matcher(value: Any) -> bool:
    """Whether a matcher sits anywhere in `value` (without recursion: values nest deeply)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            for key, child in item.items():
                if type(key) is str and key.startswith("$"):
                    return True
                if type(child) is dict or type(child) is list:
                    stack.append(child)
        elif type(item) is list:
            stack.extend(c for c in item if type(c) is dict or type(c) is list)
    return False


def value_fault(value: Any) -> Fault | None:
    """The first thing wrong with the matchers of an expected value, depth first, if any."""
    stack: list[tuple[tuple[str | int, ...], Any, bool]] = [((), value, False)]
    while stack:
        at, item, nested = stack.pop()
        if type(item) is dict:
            if is_matcher(item):
                if len(at) > DEEPEST:
                    return at, f"a matcher may sit at most {DEEPEST} levels deep"
                why = _matcher_fault(item, nested)
                if why is not None:
                    return at, why
                children = _inside(item)
                inner = head_of(item) in _NESTING
            else:
                children, inner = [((k,), v) for k, v in item.items()], False
        elif type(item) is list:
            children, inner = [((i,), v) for i, v in enumerate(item)], False
        else:
            continue
        stack.extend(((*at, *k), c, inner) for k, c in reversed(children))
    return None


def _inside(matcher: dict[str, Any]) -> list[tuple[tuple[str | int, ...], Any]]:
    """The values a matcher holds that are compared in turn, with where they sit."""
    head = head_of(matcher)
    if head is not None and head in _NESTING:
        return [((head, i), item) for i, item in enumerate(matcher[head])]
    if head == "$object":
        return [(("$object", k), v) for k, v in matcher["$object"].items()]
    return []


def _matcher_fault(matcher: dict[str, Any], nested: bool) -> str | None:
    """What is wrong with one matcher (its own keys and values, not what it holds)."""
    heads = [key for key in matcher if key in HEADS]
    for key in matcher:
        if type(key) is str and key.startswith("$") and key not in MATCHER_KEYS:
            return unknown_key(key)
    if len(heads) > 1:
        return f"a matcher has one of {', '.join(HEADS)}: this one has {' and '.join(heads)}"
    head = heads[0] if heads else None
    allowed = OPTIONS.get(head or "", {})
    for key in matcher:
        if not key.startswith("$") and key not in allowed:
            listed = ", ".join(allowed) if allowed else "none"
            return (
                f"{_quoted(key)} is no option of {head or 'this matcher'} (its options: {listed})"
            )
    if "$absent" in matcher and (matcher["$absent"] is not True or len(matcher) > 1):
        return '$absent is written {"$absent": true}, alone'
    if "$optional" in matcher and type(matcher["$optional"]) is not bool:
        return "$optional must be true or false"
    if nested and ("$optional" in matcher or "$absent" in matcher or head == "$judge"):
        return "inside $any or $unordered a value is neither left out nor the judge's"
    if head is None:
        return None
    why = _head_fault(head, matcher[head])
    if why is not None:
        return why
    for key, choices in allowed.items():
        if key in matcher and not _allowed(matcher[key], choices):
            return f"{head}'s {_quoted(key)} must be {_choices(choices)}"
    return None


def _head_fault(head: str, given: Any) -> str | None:
    """What is wrong with the value of a matcher's head."""
    kind = type(given)
    if head in ("$any", "$unordered"):
        return None if kind is list else f"{head} must be a list of values"
    if head == "$number":
        return None if kind in (int, float) else "$number must be a number"
    if head == "$int":
        return None if kind is int else "$int must be an integer (3, not 3.0)"
    if head == "$object":
        return None if kind is dict else "$object must be an object"
    if kind is not str:
        return f"{head} must be a string"
    if head == "$regex":
        return regex_fault(given)
    if head == "$date":
        return None if iso_day(given) is not None else "$date must be a day written YYYY-MM-DD"
    if head == "$judge" and not given.strip():
        return "$judge must say what the value must be, in words"
    return None


def regex_fault(pattern: str) -> str | None:
    """Why `pattern` is no ECMA-262 regular expression (as a schema's `pattern`), or None."""
    return pattern_validator(pattern)[1]


@lru_cache(maxsize=1024)
def pattern_validator(pattern: str) -> tuple[Draft7Validator | None, str | None]:
    """A validator of strings that `pattern` (ECMA-262, searched as a schema's `pattern` is)
    matches, or why the pattern is none."""
    try:
        schema = {"type": "string", "pattern": pattern}
        return Draft7Validator(schema, validate_formats=False, offline=True), None
    except Exception:
        return None, f"$regex {_quoted(pattern)} is no ECMA-262 regular expression"


def iso_day(text: str) -> date | None:
    if len(text) != 10 or text[4] != "-" or text[7] != "-":
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _allowed(value: Any, choices: tuple[Any, ...] | None) -> bool:
    if choices is None:
        return type(value) in (int, float) and value >= 0
    return any(type(value) is type(c) and value == c for c in choices)


def _choices(choices: tuple[Any, ...] | None) -> str:
    if choices is None:
        return "a number of at least 0"
    return " or ".join(_quoted(c) for c in choices)


def unknown_key(key: str) -> str:
    """`unknown matcher key "$anyy" (did you mean "$any"?)`"""
    close = nearest(key, MATCHER_KEYS)
    if close is not None:
        hint = f"did you mean {_quoted(close)}?"
    else:
        hint = "the matcher keys are " + ", ".join(_quoted(k) for k in sorted(MATCHER_KEYS))
    return f"unknown matcher key {_quoted(key)} ({hint})"


def _quoted(key: Any) -> str:
    return dumps(key).decode()
