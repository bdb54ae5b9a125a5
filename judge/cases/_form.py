"""The case format's vocabulary, free of the models: labels, behaviours, the `$any` /
`$optional` matchers (and what is wrong with a value's matchers) and the match modes. The check
path reads cases with these alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from judge.cases._fields import nearest
from judge.cases._json import dumps, pointer

Label = Literal["correct", "incorrect"]
ExpectedBehavior = Literal["call", "no_call", "ask"]
MATCHER_KEYS = frozenset(("$any", "$optional"))
"""Every key a matcher has. A key beginning with `$` anywhere else in an expected value is
refused as a misspelt one (`matcher_fault`): a new matcher is added here, and nowhere else
need know it to be let through."""

MatchMode = Literal["strict", "unordered", "subset", "superset"]
ArgsMode = Literal["exact", "ignore", "subset", "superset"]
MATCH_MODES: tuple[str, ...] = get_args(MatchMode)
ARGS_MODES: tuple[str, ...] = get_args(ArgsMode)

ArgsCompare = Callable[[dict[str, Any], dict[str, Any]], bool]
"""`compare(candidate_arguments, reference_arguments)`: True when the arguments are acceptable.
The reference arguments are passed as written, `$any`/`$optional` matchers included."""


def is_matcher(value: Any) -> bool:
    """Whether an expected argument value is `{"$any": [...]}` / `{"$optional": ...}`."""
    return isinstance(value, dict) and ("$any" in value or "$optional" in value)


@dataclass(frozen=True)
class MatcherFault:
    """What is wrong with the matchers of an expected argument value."""

    pointer: str
    """Where, from the argument's value: "" for the value itself."""
    message: str


def matcher_fault(value: Any) -> MatcherFault | None:
    """What `Case` refuses in an expected argument value, if anything: a matcher with a key
    it does not have or a value of the wrong kind, or a key beginning with `$` that no matcher
    has, at any depth (`{"$anyy": [...]}`, misspelt, would otherwise be compared as a literal).
    Keys that do not begin with `$` are literal keys, left alone."""
    if is_matcher(value):
        extra = [key for key in value if key not in MATCHER_KEYS]
        if extra:
            return MatcherFault("", _unknown_key(str(extra[0])))
        if "$any" in value and not isinstance(value["$any"], list):
            return MatcherFault("", "$any must be a list of values")
        if "$optional" in value and not isinstance(value["$optional"], bool):
            return MatcherFault("", "$optional must be true or false")
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:  # (depth first, in order, without recursion: values may nest deeply)
        at, item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and key.startswith("$") and key not in MATCHER_KEYS:
                    return MatcherFault(pointer(at), _unknown_key(key))
            children: list[tuple[str | int, Any]] = list(item.items())
        elif isinstance(item, list | tuple):
            children = list(enumerate(item))
        else:
            continue
        stack.extend(((*at, part), child) for part, child in reversed(children))
    return None


def _unknown_key(key: str) -> str:
    """`unknown matcher key "$anyy" (did you mean "$any"?)`"""
    close = nearest(key, MATCHER_KEYS)
    if close is not None:
        hint = f"did you mean {_quoted(close)}?"
    else:
        hint = "the matcher keys are " + ", ".join(_quoted(k) for k in sorted(MATCHER_KEYS))
    return f"unknown matcher key {_quoted(key)} ({hint})"


def _quoted(key: str) -> str:
    return dumps(key).decode()
