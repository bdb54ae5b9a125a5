"""The case format's vocabulary, free of the models: labels, behaviours, the value
matchers (and what is wrong with a value's matchers) and the match modes. The check
path reads cases with these alone."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

from judge.cases._json import pointer
from judge.cases._matcher_form import value_fault

Label = Literal["correct", "incorrect"]
ExpectedBehavior = Literal["call", "no_call", "ask"]
MatchMode = Literal["strict", "unordered", "subset", "superset", "in_order"]
ArgsMode = Literal["exact", "ignore", "subset", "superset"]
MATCH_MODES: tuple[str, ...] = get_args(MatchMode)
ARGS_MODES: tuple[str, ...] = get_args(ArgsMode)

ArgsCompare = Callable[[dict[str, Any], dict[str, Any]], bool]
"""`compare(candidate_arguments, reference_arguments)`: True when the arguments are acceptable,
False when not (any other answer, `"no"` say, fails the call, naming the predicate). The
reference arguments are passed as written, `$any`/`$optional` matchers included."""
USER_MODULE = "_judge_user_"
"""How the name of a module loaded from a file (`path/to/file.py:name`) begins."""


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
    Keys that do not begin with `$` are literal keys, left alone (`_matcher_form`)."""
    found = value_fault(value)
    return None if found is None else MatcherFault(pointer(found[0]), found[1])
