"""Partial credit (`call_scores`): calls matched whole, and per argument the share of an
expected call's argument leaves that a paired call gets right (`arguments`). A leaf is a
literal that holds no object or array, or a matcher other than `$object` (whose keys are
leaves in turn)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from judge.cases._matcher_form import head_of
from judge.checks._matchers import ABSENT, ValueDefaults, value_fault
from judge.checks._rules import Rules
from judge.checks._values import rule_for


def leaf_count(arguments: dict[str, Any]) -> int:
    """How many leaves an expected call's arguments have."""
    count = 0
    stack: list[Any] = list(arguments.values())
    while stack:  # (without recursion: values nest deeply)
        value = stack.pop()
        kind = type(value)
        if (kind is dict or kind is list) and not value:
            count += 1  # (an empty object or array is compared whole)
        elif kind is dict:
            if "$object" in value and head_of(value) == "$object":
                stack.extend(value["$object"].values())
            elif head_of(value) is None and not _flags(value):
                stack.extend(value.values())
            else:
                count += 1
        elif kind is list:
            stack.extend(value)
        else:
            count += 1
    return count


def leaves_right(
    tool: str,
    given: dict[str, Any] | None,
    arguments: dict[str, Any],
    values: ValueDefaults | None,
    rules: Rules | None,
) -> int:
    """How many of the expected leaves the call's arguments (`given`) get right."""
    if given is None:
        return 0
    right = 0
    stack: list[tuple[tuple[str, ...], Any, Any, str]] = [
        ((key,), given.get(key, ABSENT), want, key) for key, want in arguments.items()
    ]
    while stack:
        path, got, want, top = stack.pop()
        kind = type(want)
        if kind is dict and head_of(want) == "$object":
            want = want["$object"]
        elif kind not in (dict, list) or not want or kind is dict and _is_matcher(want):
            rule = rule_for(rules, tool, top) if rules else None
            if rule is not None and rule.ignore:
                right += 1
            else:
                right += value_fault(path, got, want, values, rule) is None
            continue
        if type(want) is dict:
            got_items = got if type(got) is dict else {}
            stack.extend(((*path, k), got_items.get(k, ABSENT), w, top) for k, w in want.items())
        else:
            got_list = got if type(got) is list else []
            stack.extend(
                ((*path, str(i)), got_list[i] if i < len(got_list) else ABSENT, w, top)
                for i, w in enumerate(want)
            )
    return right


def _is_matcher(value: dict[str, Any]) -> bool:
    return head_of(value) is not None or _flags(value)


def _flags(value: dict[str, Any]) -> bool:
    return bool(value) and all(k in ("$optional", "$absent") for k in value)


@lru_cache(maxsize=1024)
def call_scores(
    matched: int, calls: int, expected: int, leaves_got: int = 0, leaves: int = 0
) -> dict[str, Any] | None:
    """Partial credit from the one-to-one pairing: `matched` calls (name and every expected
    argument right) over the `calls` made (precision) and the `expected` calls (recall), and
    their F1; and the share of the paired calls' expected argument leaves got right
    (`arguments`: null with none). None when nothing was expected. With no call made,
    precision is 0. The dict is shared between results (cached): read it, never change it."""
    if not expected:
        return None
    precision = matched / calls if calls else 0.0
    recall = matched / expected
    f1 = 2 * precision * recall / (precision + recall) if matched else 0.0
    share = leaves_got / leaves if leaves else None
    return {"matched": matched, "precision": precision, "recall": recall, "f1": f1,
            "arguments": share}  # fmt: skip
