"""Compare a value with an expected one that holds matchers (`cases/_matcher_form` reads them),
or with a literal under a case's or a run's value defaults (`"match": {"values": {"strings":
"casefold"}}`). The plain case, a literal under no defaults, is `_values.json_equal`, and
`_arguments` goes there first: this module is reached only when a matcher or a default is in
play, so a file without them pays nothing for it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date
from typing import Any, Protocol

from judge.cases._json import dumps
from judge.cases._matcher_form import (
    head_of,
    holds_matcher,
    is_matcher,
    iso_day,
    pattern_validator,
)
from judge.checks._dates import MONTHS, SUFFIXES
from judge.checks._kinds import FailureKind
from judge.checks._rules import ArgumentRule
from judge.checks._values import json_equal

ABSENT: Any = object()
"""A value left out (a key missing from an object)."""
Fault = tuple[FailureKind, tuple[str, ...], Any, Any, str | None]
"""As `_arguments` has it: kind, path, the value given, the acceptable values, a message."""
_WRONG, _MISSING = FailureKind.WRONG_VALUE, FailureKind.MISSING_ARGUMENT
_PENDING = FailureKind.NEEDS_JUDGE
_BFCL = re.compile(r"[ ,./\-_*^]")
_SPACE = re.compile(r"\s+")
_PUNCT = re.compile(r"[^\w\s]")
_SHOWN = 80
_STRING_KEYS = ("case", "space", "punct", "normalise")
_NUMERIC = re.compile(r"(\d{1,2})([/.])(\d{1,2})\2(\d{4})")
_WORD = re.compile(r"[^\W_]+")
_FILLERS = frozenset(
    ("the", "of", "on", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
     "sunday", "mon", "tue", "wed", "thu", "fri", "sat", "sun")
)  # fmt: skip


class ValueDefaults(Protocol):
    """How literals compare: `Match.values` (`cases/_match.py`)."""

    @property
    def strings(self) -> str: ...
    @property
    def numbers(self) -> str: ...


_How = tuple[ValueDefaults | None, ArgumentRule | None]


def bfcl_normal(text: str) -> str:
    """BFCL's `standardize_string`: spaces and `,./-_*^` dropped, lower case, `'` as `"`."""
    return _BFCL.sub("", text).lower().replace("'", '"')


def value_fault(
    path: tuple[str, ...],
    got: Any,
    want: Any,
    values: ValueDefaults | None,
    rule: ArgumentRule | None = None,
) -> Fault | None:
    """The fault of `got` (`ABSENT` when left out) against `want`, a matcher, a literal that
    holds matchers, or a literal compared under `values` (or an argument's `rule`); None when
    it is acceptable."""
    return _fault(path, got, want, (values, rule))


def _fault(path: tuple[str, ...], got: Any, want: Any, how: _How) -> Fault | None:
    if is_matcher(want):
        return _matcher(path, got, want, how)
    if got is ABSENT:
        return _MISSING, path, None, [want], None
    if type(want) is dict and holds_matcher(want):
        return _object(path, got, want, "forbid", how)
    if type(want) is list and holds_matcher(want):
        return _items(path, got, want, how)
    values, rule = how
    if rule is not None:
        return None if rule.matches(got, want) else (_WRONG, path, got, [want], None)
    if literal_equal(got, want, values):
        return None
    return _WRONG, path, got, [want], None


def literal_equal(got: Any, want: Any, values: ValueDefaults | None) -> bool:
    """Equality of literals under the value defaults (JSON equality without them)."""
    if values is None or (values.strings == "exact" and values.numbers == "json"):
        return json_equal(got, want)
    pending = [(got, want)]
    while pending:  # (iterative, as `json_equal`: values nest deeply)
        a, b = pending.pop()
        if type(a) is str and type(b) is str:
            same = _string_equal(a, b, values.strings)
        elif type(b) is dict and type(a) is dict:
            same = a.keys() == b.keys()
            pending.extend((a[k], b[k]) for k in a if same)
        elif type(b) is list and type(a) is list:
            same = len(a) == len(b)
            pending.extend(zip(a, b, strict=False) if same else ())
        elif values.numbers == "strict" and type(b) is int and type(a) is not int:
            same = False  # an integer is expected: `10.0` is not one (BFCL's rule)
        else:
            same = json_equal(a, b)
        if not same:
            return False
    return True


def _string_equal(a: str, b: str, how: str) -> bool:
    if a == b:
        return True
    if how == "casefold":
        return a.casefold() == b.casefold()
    return how == "bfcl" and bfcl_normal(a) == bfcl_normal(b)


def _matcher(path: tuple[str, ...], got: Any, want: dict[str, Any], how: _How) -> Fault | None:
    optional = want.get("$optional") is True
    if want.get("$absent") is True:
        return None if got is ABSENT else _said(path, got, want, "it must be left out")
    if got is ABSENT:
        return None if optional else (_MISSING, path, None, want, None)
    head = head_of(want)
    if head is None:  # `{"$optional": true}`: any value, or none
        return None
    found = _headed(head, path, got, want, how)
    if found is not None and optional and found[0] is _WRONG:
        return found[:4] + (f"{_message(found)} (leaving it out was allowed)",)
    return found


def _headed(
    head: str, path: tuple[str, ...], got: Any, want: dict[str, Any], how: _How
) -> Fault | None:
    given = want[head]
    if head == "$any":
        for option in given:
            if _fault(path, got, option, how) is None:
                return None
        return _WRONG, path, got, given, None  # (`describe` says it: "expected one of ...")
    if head == "$judge":
        return _PENDING, path, got, given, f"{_where(path)}: {_show(got)}, for the judge: {given}"
    if head == "$object":
        return _object(path, got, given, want.get("extra", "forbid"), how)
    if head == "$unordered":
        return _unordered(path, got, given, how)
    strings = how[0].strings if how[0] is not None else "exact"
    plain = head == "$string" and not any(k in want for k in _STRING_KEYS)
    if plain and type(got) is str and _string_equal(got, given, strings):
        return None  # a `$string` without options compares as the defaults say
    if head == "$date" and "order" not in want and how[0] is not None:
        dates = getattr(how[0], "dates", None)  # (the case's or the run's order, if any)
        want = {**want, "order": dates} if dates is not None else want
    why = _scalar(head, got, given, want)
    return None if why is None else _said(path, got, want, why)


def _scalar(head: str, got: Any, given: Any, want: dict[str, Any]) -> str | None:
    """Why `got` is not what a scalar matcher accepts, or None."""
    kind = type(got)
    if head == "$int":
        return None if kind is int and got == given else f"not the integer {given}"
    if head == "$number":
        if kind not in (int, float):
            return f"not a number (expected {_show(given)})"
        if kind is int and want.get("int") is False:
            return f"an integer, where a float is expected ({_show(float(given))})"
        close = math.isclose(got, given, rel_tol=want.get("rel", 0), abs_tol=want.get("abs", 0))
        return None if close else f"not {_show(given)}{_tolerance(want)}"
    if kind is not str:
        return f"not a string (expected {head} {_show(given)})"
    if head == "$string":
        return (
            None
            if _norm(got, want) == _norm(given, want)
            else f"not {_show(given)}{_string_options(want)}"
        )
    if head == "$regex":
        validator = pattern_validator(given)[0]
        return (
            None if validator is not None and validator.is_valid(got) else f"no match for /{given}/"
        )
    if head == "$date":
        order = want.get("order")
        if read_day(got, order) == iso_day(given):
            return None
        two = order is None and _NUMERIC.fullmatch(got.strip()) and read_day(got, "dmy")
        hint = (
            ' (it reads as two days: "order": "dmy" or "mdy", match.values.dates or the '
            "case's meta.locale says which)"
            if two
            else ""
        )
        return f"not the day {given}{hint}"
    raise AssertionError(head)  # pragma: no cover (the reader refuses any other)


def _norm(text: str, want: dict[str, Any]) -> str:
    if want.get("normalise") == "bfcl":
        return bfcl_normal(text)
    space = want.get("space", "exact")
    if space == "collapse":
        text = _SPACE.sub(" ", text).strip()
    elif space == "ignore":
        text = _SPACE.sub("", text)
    if want.get("punct") == "ignore":
        text = _PUNCT.sub("", text)
    return text.casefold() if want.get("case") is False else text


def _object(
    path: tuple[str, ...], got: Any, given: dict[str, Any], extra: str, how: _How
) -> Fault | None:
    if type(got) is not dict:
        return _said(path, got, given, "not an object")
    for key, value in given.items():
        found = _fault((*path, key), got.get(key, ABSENT), value, how)
        if found is not None:
            return found
    if extra == "forbid":
        for key in got:
            if key not in given:
                return _WRONG, (*path, key), got[key], [], None
    return None


def _items(path: tuple[str, ...], got: Any, given: list[Any], how: _How) -> Fault | None:
    if type(got) is not list or len(got) != len(given):
        return _WRONG, path, got, [given], None
    for i, value in enumerate(given):
        found = _fault((*path, str(i)), got[i], value, how)
        if found is not None:
            return found
    return None


def _unordered(path: tuple[str, ...], got: Any, given: list[Any], how: _How) -> Fault | None:
    """`got` is a rearrangement of `given`: a pairing of each item with an expected one it
    matches (augmenting paths: a multiset of matchers, not of values, needs a matching)."""
    if type(got) is not list or len(got) != len(given):
        size = f"{len(got)} items" if type(got) is list else "not a list"
        return _said(path, got, given, f"{size}, expected a rearrangement of {_show(given)}")
    fits = [[_fault(path, item, w, how) is None for w in given] for item in got]
    owner: list[int] = [-1] * len(given)

    def place(i: int, seen: set[int]) -> bool:
        for j, fit in enumerate(fits[i]):
            if fit and j not in seen:
                seen.add(j)
                if owner[j] < 0 or place(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(got)):
        if not place(i, set()):
            return _said(
                path,
                got,
                given,
                f"no rearrangement of {_show(given)}: {_show(got[i])} fits no item left",
            )
    return None


def read_day(text: str, order: str | None) -> date | None:
    """The day a value names, or None: `2024-05-01`, `May 1, 2024`, `1 May 2024`, `Wednesday,
    the 1st of May 2024`, `01/05/2024` (the `order` given, `dmy` or `mdy`; without one, a
    numeric date is read only where the two orders agree or one is no date)."""
    text = text.strip()
    day = iso_day(text)
    if day is not None:
        return day
    numeric = _NUMERIC.fullmatch(text)
    if numeric is not None:
        first, second, year = int(numeric[1]), int(numeric[3]), int(numeric[4])
        readings = {"dmy": _day(year, second, first), "mdy": _day(year, first, second)}
        if order in readings:
            return readings[order]
        found = {d for d in readings.values() if d is not None}
        return found.pop() if len(found) == 1 else None
    return _in_words(text)


def _in_words(text: str) -> date | None:
    """`May 1st, 2024`, `1 May 2024`, `the 1st of May 2024`: one month named, one day, one
    year, and no word but those, `the`, `of`, `on` and a weekday."""
    month = day = year = None
    for word in _WORD.findall(text.casefold()):
        if word.isdigit() or word[:-2].isdigit() and word[-2:] in SUFFIXES:
            digits = word if word.isdigit() else word[:-2]
            if len(digits) == 4 and word.isdigit() and year is None:
                year = int(digits)
            elif len(digits) <= 2 and day is None:
                day = int(digits)
            else:
                return None
        elif _month(word) is not None and month is None:
            month = _month(word)
        elif word not in _FILLERS:
            return None
    return _day(year, month, day) if month and day and year else None


def _month(word: str) -> int | None:
    for number, name in enumerate(MONTHS, 1):
        if word == name or (len(word) >= 3 and name.startswith(word)):
            return number
    return None


def _day(year: int | None, month: int | None, day: int | None) -> date | None:
    try:
        return date(year or 0, month or 0, day or 0)
    except ValueError:
        return None


def _message(fault: Fault) -> str:
    """A fault's message: its own, or what `describe` would say of an `$any`'s."""
    if fault[4] is not None:
        return fault[4]
    options = fault[3]
    if not options:
        return f"{_where(fault[1])} must be left out, got {_show(fault[2])}"
    return f"{_where(fault[1])} is {_show(fault[2])}, expected one of {_show(options)}"


def _said(path: tuple[str, ...], got: Any, want: Any, why: str) -> Fault:
    return _WRONG, path, got, want, f"{_where(path)} is {_show(got)}: {why}"


def _where(path: tuple[str, ...]) -> str:
    return f"argument {'/'.join(path)!r}"


def _tolerance(want: dict[str, Any]) -> str:
    parts = [
        f"within {want[k]}" + (" relative" if k == "rel" else "")
        for k in ("abs", "rel")
        if want.get(k)
    ]
    return f" ({' or '.join(parts)})" if parts else ""


def _string_options(want: dict[str, Any]) -> str:
    said = [f"{k}: {_show(want[k])}" for k in _STRING_KEYS if k in want]
    return f" ({', '.join(said)})" if said else " (strings compare exactly)"


def _show(value: Any) -> str:
    text = dumps(value, default=repr).decode()
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def example(want: Any) -> Any:
    """A value that `want` accepts, as a reference call is replayed with: an `$any`'s first
    option, `ABSENT` for an argument that may be left out and names no value. ValueError
    where no value can be told (`$regex`, `$judge`)."""
    if is_matcher(want):
        head = head_of(want)
        if head is None or (head == "$any" and not want[head]):
            return ABSENT
        given = want[head]
        if head in ("$regex", "$judge"):
            raise ValueError(f"a {head} matcher names no value to replay")
        if head == "$any":
            return example(given[0])
        if head == "$unordered":
            return [example(item) for item in given]
        return example(given) if head == "$object" else given
    if type(want) is dict and holds_matcher(want):
        told = {key: example(value) for key, value in want.items()}
        return {key: value for key, value in told.items() if value is not ABSENT}
    if type(want) is list and holds_matcher(want):
        return [example(item) for item in want]
    return want


def hint(got: Any, want: Any) -> str:
    """How a literal that `got` does not equal could have accepted it, where a matcher would
    have: `' (strings compare exactly; {"$string": "Paris", "case": false} accepts it)'`."""
    if type(got) is str and type(want) is str:
        if _LOOSEST.sub("", got).casefold() != _LOOSEST.sub("", want).casefold():
            return ""  # (no `$string` option accepts it: told with one pass each)
        for options in _LOOSER:
            if _norm(got, options) == _norm(want, options):
                told = _show({"$string": want, **options})
                return f" (strings compare exactly; {told} accepts it)"
    elif type(got) is float and type(want) is int and got == want:
        return f" (an integer is expected; {_show({'$number': want})} accepts {_show(got)})"
    elif type(got) in (int, float) and type(want) in (int, float) and want and got != want:
        apart = abs(got - want)
        if apart <= abs(want) * 0.01:
            bound = float(f"{apart:.1g}") * (1 if float(f"{apart:.1g}") >= apart else 2)
            return f" ({_show({'$number': want, 'abs': bound})} accepts it)"
    return ""


_LOOSEST = re.compile(r"[\W_]+")
"""What the loosest comparison of `_LOOSER` leaves aside: spaces, punctuation, `_`."""
_LOOSER: tuple[dict[str, Any], ...] = (
    {"case": False},
    {"space": "collapse"},
    {"case": False, "space": "collapse"},
    {"case": False, "space": "ignore", "punct": "ignore"},
    {"normalise": "bfcl"},
)
"""The `$string` options a mismatch's hint tries, loosest last."""


def judge_targets(
    problems: list[tuple[int | None, tuple[FailureKind, str, str]]],
    pairs: list[tuple[int, int]],
    parsed: list[dict[str, Any] | None],
    expected: Sequence[Any],
) -> list[tuple[int, str, Any, str]]:
    """The values left to the judge (each `NeedsJudge` problem): the call, the JSON pointer,
    the value given and the `$judge` matcher's words."""
    paired = dict(pairs)
    found = []
    for call, (kind, at, _) in problems:
        if kind is not _PENDING or call is None or call not in paired:
            continue
        parts = [p.replace("~1", "/").replace("~0", "~") for p in at.split("/")[1:]]
        want: Any = expected[paired[call]].arguments
        got: Any = parsed[call]
        for part in parts:
            while type(want) is dict and "$object" in want:
                want = want["$object"]
            want = want[int(part)] if type(want) is list else want[part]
            got = got[int(part)] if type(got) is list else got[part]
        found.append((call, at, got, want["$judge"]))
    return found
