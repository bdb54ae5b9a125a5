"""The content hash of a case: what resuming an output compares to tell a case that changed.

It is taken of the case as it is graded (after `--tools` and an MCP server's tools are offered):
every field, so that nothing that can change a grade (messages, tools, response, expected calls,
behaviour, match settings, assertions...) is left out. A new field, not a cache key: the verdict
cache's keys stay those of the requests.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from judge.cases._json import dumps

if TYPE_CHECKING:
    from judge.cases._case import Case


def case_hash(case: Case) -> str:
    """The sha256 (hex) of the case's canonical JSON: its model dump with sorted keys, values
    left at their defaults left out (a field a later version adds changes no hash)."""
    return content_hash(case.model_dump(exclude_defaults=True))


def content_hash(value: Any) -> str:
    """The sha256 (hex) of `value` as JSON with sorted keys (a callable in it by its name)."""
    return hashlib.sha256(dumps(value, sort_keys=True, default=_named)).hexdigest()


def _named(value: Any) -> Any:
    # A Python callable (a match override's `compare`) is named: its code cannot be hashed.
    if callable(value):
        name = getattr(value, "__qualname__", type(value).__qualname__)
        return f"{getattr(value, '__module__', '?')}.{name}"
    raise TypeError(f"{type(value).__name__} is not JSON")
