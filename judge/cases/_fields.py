"""The case format's known keys, and what is reported of the others: a key the format does not
know is named with the nearest known one (`/mesages (did you mean /messages?)`), never ignored
in silence. Model-free, so the check path can use it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from judge.cases._json import pointer

CASE_KEYS = frozenset(
    (
        "id",
        "name",
        "messages",
        "tools",
        "response",
        "expected_calls",
        "expected_behavior",
        "labels",
        "match",
        "assert_tools",
        "expected_answer",
        "user",
        "meta",
        "draft",
    )
)
EXPECTED_CALL_KEYS = frozenset(("name", "arguments", "function", "id", "type"))
"""An expected call, or an OpenAI tool call copied as one (`id`, `type`, `function`)."""
EXPECTED_FUNCTION_KEYS = frozenset(("name", "arguments"))
MATCH_KEYS = frozenset(("mode", "args", "overrides", "ignore_tools", "values"))
ASSERT_KEYS = frozenset(("called", "avoided", "counts", "max_calls"))
BOUND_KEYS = frozenset(("min", "max"))
USER_KEYS = frozenset(("instructions", "facts", "persona", "max_turns"))
LABEL_KEYS = frozenset(
    ("selection", "arguments", "answer", "trajectory", "reviewer", "labelled_at")
)


@dataclass(frozen=True)
class UnknownField:
    """A key the case format does not know, at `pointer` in the case."""

    pointer: str
    nearest: str | None
    """The pointer the key most likely meant (a known key at the same place), if any is close."""

    def __str__(self) -> str:
        hint = f" (did you mean {self.nearest}?)" if self.nearest else ""
        return f"unknown field {self.pointer}{hint}"


def nearest(key: str, known: Iterable[str]) -> str | None:
    """The known key closest in spelling to `key`, when one is close enough to be a typo: one
    that differs only in letter case first, then only in case and `_` / `-`, then by edits."""
    names = sorted(known)
    for same in (str.lower, _plain):
        found = [name for name in names if same(name) == same(key)]
        if found:
            return found[0]
    import difflib  # only when a key is unknown: not on every start of `judge check`

    close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    return close[0] if close else None


def _plain(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "")


def unknown_fields(data: dict[str, Any]) -> list[UnknownField]:
    """Every key of a decoded case that the format does not know: at the top level, in each
    `expected_calls` item, `labels`, `match` and `assert_tools` (`meta` is free; `messages`,
    `tools` and `response` are read by their own rules)."""
    return list(_unknown(data))


def without_unknown(data: dict[str, Any], unknown: list[UnknownField]) -> dict[str, Any]:
    """`data` with the unknown keys of `match`, `assert_tools` and `user` left out (the models
    refuse them; elsewhere they are ignored), copying only what changes."""
    out = dict(data)
    for field in unknown:
        parts = field.pointer.split("/")[1:]
        if parts[0] not in ("match", "assert_tools", "user"):
            continue
        holder = out
        for part in parts[:-1]:
            part = part.replace("~1", "/").replace("~0", "~")
            holder[part] = dict(holder[part])
            holder = holder[part]
        holder.pop(parts[-1].replace("~1", "/").replace("~0", "~"), None)
    return out


def _unknown(data: dict[str, Any]) -> Iterator[UnknownField]:
    yield from _keys(data, CASE_KEYS, "")
    expected = data.get("expected_calls")
    if isinstance(expected, list):
        for i, call in enumerate(expected):
            if isinstance(call, dict):
                yield from _keys(call, EXPECTED_CALL_KEYS, f"/expected_calls/{i}")
                function = call.get("function")
                if isinstance(function, dict):
                    at = f"/expected_calls/{i}/function"
                    yield from _keys(function, EXPECTED_FUNCTION_KEYS, at)
    labels = data.get("labels")
    if isinstance(labels, dict):
        yield from _keys(labels, LABEL_KEYS, "/labels")
    match = data.get("match")
    if isinstance(match, dict):
        yield from _keys(match, MATCH_KEYS, "/match")
    asserted = data.get("assert_tools")
    if isinstance(asserted, dict):
        yield from _keys(asserted, ASSERT_KEYS, "/assert_tools")
        counts = asserted.get("counts")
        if isinstance(counts, dict):
            for tool, bounds in counts.items():
                if isinstance(bounds, dict):
                    at = "/assert_tools/counts" + pointer([str(tool)])
                    yield from _keys(bounds, BOUND_KEYS, at)
    user = data.get("user")
    if isinstance(user, dict):
        yield from _keys(user, USER_KEYS, "/user")


def _keys(data: dict[str, Any], known: frozenset[str], at: str) -> Iterator[UnknownField]:
    for key in data:
        if key not in known:
            key = str(key)
            close = nearest(key, known)
            yield UnknownField(
                at + pointer([key]), None if close is None else at + pointer([close])
            )
