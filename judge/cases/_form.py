"""The case format's vocabulary, free of the models: labels, behaviours, the `$any` /
`$optional` matchers and the match modes. The check path reads cases with these alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, get_args

Label = Literal["correct", "incorrect"]
ExpectedBehavior = Literal["call", "no_call", "ask"]
MATCHER_KEYS = frozenset(("$any", "$optional"))

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
