"""Partial credit (`call_scores`): calls matched whole, and per argument the share of an
expected call's argument leaves that a paired call gets right (`arguments`). A leaf is a
literal that holds no object or array, or a matcher other than `$object` (whose keys are
leaves in turn)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from judge.cases._matcher_form import head_of, is_matcher
from judge.checks._matchers import ABSENT, ValueDefaults, value_fault
from judge.checks._rules import Rules
from judge.checks._values import json_equal, rule_for


def leaf_count(arguments: dict[str, Any]) -> int:
    """How many leaves an expected call's arguments have."""
    count = 0
    for value in arguments.values():  # (the common case: each argument a scalar)
        count += _leaves(value) if type(value) is dict or type(value) is list else 1
    return count


def _leaves(value: Any) -> int:
    """How many leaves one expected value has."""
    count = 0
    stack: list[Any] = [value]
    while stack:  # (without recursion: values nest deeply)
        value = stack.pop()
        kind = type(value)
        if (kind is dict or kind is list) and not value:
            count += 1  # (an empty object or array is compared whole)
        elif kind is dict:
            if "$object" in value and head_of(value) == "$object":
                stack.extend(value["$object"].values())
            elif not is_matcher(value):
                stack.extend(value.values())
            else:
                count += 1
        elif kind is list:
            stack.extend(value)
        else:
            count += 1
    return count


def one_credit(
    tool: str,
    given: dict[str, Any] | None,
    arguments: dict[str, Any],
    said: Sequence[tuple[int | None, tuple[Any, str, str]]],
    values: ValueDefaults | None,
    rules: Rules | None,
) -> tuple[int, int]:
    """The leaves right and the leaves of the one call of a case paired with the one expected
    call, given its problems (`said`); only their share is read: a call with none, (1, 1)."""
    if given is None:
        return 0, 1
    if not said:
        return (1, 1) if arguments else (0, 0)
    count = leaf_count(arguments)
    pointers = [problem[1] for _, problem in said]
    return leaves_got(tool, given, arguments, count, pointers, values, rules), count


def leaves_got(
    tool: str,
    given: dict[str, Any] | None,
    arguments: dict[str, Any],
    count: int,
    pointers: list[str],
    values: ValueDefaults | None,
    rules: Rules | None,
) -> int:
    """`leaves_right`, told from the pointers of a pairing's problems (`count`: the leaves of
    `arguments`): the arguments with no problem are right whole; only the others are walked."""
    if given is None:
        return 0
    wrong = set()
    for at in pointers:
        if not at:  # (the arguments as a whole: nothing to tell them apart by)
            return leaves_right(tool, given, arguments, values, rules)
        end = at.find("/", 1)
        part = at[1:] if end < 0 else at[1:end]
        wrong.add(part.replace("~1", "/").replace("~0", "~") if "~" in part else part)
    flat = count == len(arguments)  # (each argument one leaf: one with a problem is wrong)
    for key, want in arguments.items():
        if key in wrong:
            if flat:
                count -= 1
                continue
            total = _leaves(want) if type(want) is dict or type(want) is list else 1
            count -= total - _right(tool, key, given.get(key, ABSENT), want, values, rules)
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
    for key, want in arguments.items():
        right += _right(tool, key, given.get(key, ABSENT), want, values, rules)
    return right


def _right(
    tool: str, key: str, got: Any, want: Any, values: ValueDefaults | None, rules: Rules | None
) -> int:
    """How many leaves of one argument's expected value `got` gets right."""
    rule = rule_for(rules, tool, key) if rules else None
    if rule is not None and rule.ignore:
        return _leaves(want)
    right = 0
    stack: list[tuple[tuple[str, ...], Any, Any]] = [((key,), got, want)]
    while stack:
        path, got, want = stack.pop()
        kind = type(want)
        if kind is dict and head_of(want) == "$object":
            want = want["$object"]
        elif kind not in (dict, list) or not want or kind is dict and is_matcher(want):
            if values is None and rule is None and not (kind is dict and want):
                right += got is not ABSENT and json_equal(got, want)  # (a literal leaf)
            else:
                right += value_fault(path, got, want, values, rule) is None
            continue
        if type(want) is dict:
            got_items = got if type(got) is dict else {}
            stack.extend(((*path, k), got_items.get(k, ABSENT), w) for k, w in want.items())
        else:
            got_list = got if type(got) is list else []
            stack.extend(
                ((*path, str(i)), got_list[i] if i < len(got_list) else ABSENT, w)
                for i, w in enumerate(want)
            )
    return right


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
