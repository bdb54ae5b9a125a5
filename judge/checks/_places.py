"""The places a value can be said in: a message's text, and each leaf of the JSON a tool result
or an earlier call's arguments hold.

Each place is read once, whatever the number of values: its lower-case and normalised forms
when first needed; a long text's numbers in one pass, into a set; a JSON text's leaves into
one index (the numbers each states, their texts joined), so that the leaves that say a value
are found with a lookup or one substring search, never by reading each leaf.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from judge.cases._json import maybe_json, pointer
from judge.checks._dates import date_spans, iso_date
from judge.checks._numbers import numbers_in, says_number

_SPACES = re.compile(r"\s+")
_DEEPEST = 64  # a JSON tool result is walked this deep for the field a value is in
_LONG = 4096
"""Characters: a text this long has its numbers read into a set once, and is searched by its
normalised form alone (each search of a long text is a pass over it)."""
_PLAIN, _SMALL = 10**15, 1e-4
"""Numbers Python writes without an exponent (and `says_number` reads), from the smallest."""
_SEPARATOR = "\x00"  # between the leaves' joined texts: no value's form holds it


def normalise(text: str) -> str:
    """Text as compared: Unicode compatibility forms, case folded, spaces collapsed."""
    if text.isascii():  # (the same, for ASCII text, at a fraction of the cost)
        return " ".join(text.lower().split())
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).casefold().strip()


class Text:
    """One place a value can be found in: its raw text, and, read once when first needed, its
    normalised text, the numbers it states and the leaves of the JSON it holds."""

    __slots__ = (
        "raw", "source", "at", "call_id", "structured", "_normal", "_lower", "_data", "_leaves",
        "_numbers",
    )  # fmt: skip

    def __init__(
        self,
        raw: str,
        source: str,
        data: Any = None,
        at: int = 0,
        call_id: Any = None,
        structured: bool = False,
    ) -> None:
        self.raw = raw
        self.source = source
        self.structured = structured  # a tool result or arguments: `where` looks into leaves
        self.at = at  # the message's place in the conversation
        self.call_id = call_id  # a tool result's: the call it answers
        self._normal: str | None = None
        self._lower: str | None = None
        self._data = data  # a structure it holds (a parsed result, an earlier call's arguments)
        self._leaves: Leaves | None = None
        self._numbers: set[float] | None = None

    @property
    def lower(self) -> str:
        if self._lower is None:
            self._lower = self.raw.lower()
        return self._lower

    @property
    def normal(self) -> str:
        if self._normal is None:
            self._normal = normalise(self.raw)
        return self._normal

    def holds(
        self, value: str | int | float, normal: str | None, number: float | None, as_is: bool = True
    ) -> bool:
        """The value is said here: the text as it is (not looked for again without `as_is`),
        normalised, or the same number (the forms `sought` gives); or, in JSON, by a leaf
        (`500` in `[500,500]`, `Zürich` in `"Z\\u00fcrich"`)."""
        if len(self.raw) > _LONG:
            said = self._holds_long(value, normal, number, as_is)
        else:
            said = self._holds(value, normal, number, as_is)
        if said or not self.structured or (number is None and "\\" not in self.raw):
            return said  # (a string leaf is written as it is in JSON, but escaped)
        return self.leaves.first(value, normal, number) is not None

    def _holds(
        self, value: str | int | float, normal: str | None, number: float | None, as_is: bool
    ) -> bool:
        if normal is not None:
            raw = self.raw
            if as_is and isinstance(value, str) and value in raw:
                return True
            if raw.isascii():  # no Unicode form to mind, only runs of spaces
                if normal in self.lower:
                    return True
                if " " in normal and _words_in(normal, self.lower) and normal in self.normal:
                    return True
            elif normal in self.normal:
                return True
            if number is None:
                date = iso_date(value)  # type: ignore[arg-type]
                return date is not None and bool(date_spans(self.raw, date, self.lower))
        return number is not None and says_number(self.raw, number)

    def _holds_long(
        self, value: str | int | float, normal: str | None, number: float | None, as_is: bool
    ) -> bool:
        """`_holds` for a long text: one search of its normalised form (what the lower-case
        form holds, it holds too), its numbers looked up."""
        if normal is not None:
            if as_is and isinstance(value, str) and value in self.raw:
                return True
            if normal in self.normal:
                return True
            if number is None:
                date = iso_date(value)  # type: ignore[arg-type]
                return date is not None and bool(date_spans(self.raw, date, self.lower))
        if number is None or not math.isfinite(number):
            return False
        if self.structured and number in self.leaves.numbers:
            return True  # (a JSON text's numbers are its leaves': its own read only past them)
        if self._numbers is None:
            self._numbers = {said for _, _, said in numbers_in(self.raw)}
        return number in self._numbers

    def where(self, value: str | int | float, normal: str | None, number: float | None) -> str:
        """The source, followed into the leaf of the JSON structure that holds the value (a
        tool result's or an earlier call's arguments; a user's or system's text is one place)."""
        if not self.structured:
            return self.source
        found = self.leaves.first(value, normal, number)
        return self.source if found is None else self.source + self.leaves.pointer(found)

    @property
    def leaves(self) -> Leaves:
        """The leaves of the JSON it holds, each a place of its own (none for plain text)."""
        if self._leaves is None:
            data = self._data if self._data is not None else maybe_json(self.raw.strip())
            self._leaves = Leaves(data)
        return self._leaves


def _words_in(normal: str, lower: str) -> bool:
    """Each word of `normal` is in `lower`: what it takes to be in the normalised text (read
    only then: normalising a long text costs)."""
    return all(word in lower for word in normal.split(" "))


def leaves_deep(value: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """The leaves of a parsed structure (booleans too), in order, no deeper than `_DEEPEST`."""
    if not isinstance(value, (dict, list)):
        return [((), value)] if value is not None else []
    found: list[tuple[tuple[Any, ...], Any]] = []
    stack: list[tuple[tuple[Any, ...], Iterator[tuple[Any, Any]]]] = [((), _items(value))]
    while stack:
        path, items = stack[-1]
        for key, item in items:  # (a scalar read here; a container read next, then on)
            if isinstance(item, (dict, list)):
                if len(path) + 1 < _DEEPEST:
                    stack.append(((*path, key), _items(item)))
                    break
            elif item is not None:
                found.append(((*path, key), item))
        else:
            stack.pop()
    return found


def _items(value: dict[Any, Any] | list[Any]) -> Iterator[tuple[Any, Any]]:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value)


class Leaves:
    """The leaves of a JSON structure (none where it is no object or array), each a place of
    its own, indexed when first searched: per number, the leaves that state it; the leaves'
    texts joined, raw and normalised, with where each starts."""

    __slots__ = ("_found", "_places", "_numbers", "_raw", "_normal")

    def __init__(self, data: Any) -> None:
        self._found = leaves_deep(data) if isinstance(data, (dict, list)) else []
        self._places: dict[int, Text] = {}
        self._numbers: dict[float, list[int]] | None = None
        self._raw: _Joined | None = None
        self._normal: _Joined | None = None

    def __len__(self) -> int:
        return len(self._found)

    def pointer(self, index: int) -> str:
        return pointer(self._found[index][0])

    def place(self, index: int) -> Text:
        """The leaf as a place of its own (its text, as `str` writes it)."""
        found = self._places.get(index)
        if found is None:
            found = self._places[index] = Text(str(self._found[index][1]), "")
        return found

    def first(
        self, value: str | int | float, normal: str | None, number: float | None
    ) -> int | None:
        """The first leaf that says the value (as `Text.holds` reads it), or None."""
        for index in self.holding(value, normal, number):
            return index
        return None

    def holding(
        self, value: str | int | float, normal: str | None, number: float | None
    ) -> Iterator[int]:
        """The leaves that say the value, in order, each once: from the numbers' index, and
        from where the joined texts hold its forms."""
        found: list[Iterator[int]] = []
        if number is not None and math.isfinite(number):
            found.append(iter(self.numbers.get(number, ())))
        if normal is not None:
            if isinstance(value, str):
                found.append(self.raw.holding(value))
            found.append(self.normal.holding(normal))
            date = iso_date(value) if number is None and isinstance(value, str) else None
            if date is not None:
                found.append(self.raw.dated(date))
        last = -1
        for index in heapq.merge(*found):
            if index != last:
                last = index
                yield index

    @property
    def numbers(self) -> dict[float, list[int]]:
        """Per number, the leaves that state it (as `says_number` reads their text): a
        number's own value where Python writes it plainly, else its text; the strings' texts
        joined and read at once (no number runs on past its leaf)."""
        if self._numbers is None:
            found: dict[float, list[int]] = {}
            self._numbers = found
            written: list[tuple[int, str]] = []
            for index, (_, leaf) in enumerate(self._found):
                kind = type(leaf)
                if kind is int and -_PLAIN < leaf < _PLAIN:
                    _state(found, float(leaf), index)
                elif kind is float and (leaf == 0 or _SMALL <= abs(leaf) < _PLAIN):
                    _state(found, leaf, index)
                elif kind is not bool:
                    written.append((index, str(leaf)))
            starts = list(accumulate((len(text) + 1 for _, text in written), initial=0))
            at = 0
            for start, _, said in numbers_in(_SEPARATOR.join(text for _, text in written)):
                while starts[at + 1] <= start:
                    at += 1
                _state(found, said, written[at][0])
            for listed in found.values():
                listed.sort()  # (the numbers' leaves, then the strings')
        return self._numbers

    @property
    def raw(self) -> _Joined:
        if self._raw is None:
            self._raw = _Joined([str(leaf) for _, leaf in self._found])
        return self._raw

    @property
    def normal(self) -> _Joined:
        """The leaves' texts normalised: at once where no leaf holds the separator."""
        if self._normal is None:
            raw = self.raw
            texts = normalise(raw.joined).split(_SEPARATOR)
            if len(texts) == len(raw.texts):
                texts = [text.strip() for text in texts]
            else:
                texts = [normalise(text) for text in raw.texts]
            self._normal = _Joined(texts)
        return self._normal


def _state(found: dict[float, list[int]], number: float, index: int) -> None:
    listed = found.setdefault(number, [])
    if not listed or listed[-1] != index:
        listed.append(index)


class _Joined:
    """Texts joined into one, to be searched at once: each hit is told to the text it is in
    (a hit across two is none)."""

    __slots__ = ("texts", "joined", "starts")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.joined = _SEPARATOR.join(texts)
        self.starts = list(accumulate((len(text) + 1 for text in texts), initial=0))
        self.starts.pop()  # (where a text after the last would start)

    def _text_of(self, start: int, end: int) -> int:
        """The text `joined[start:end]` lies in, or -1 where it spans two."""
        index = bisect_right(self.starts, start) - 1
        inside = end <= self.starts[index] + len(self.texts[index])
        return index if inside else -1

    def holding(self, form: str) -> Iterator[int]:
        """The texts that hold `form`, in order (each once)."""
        if not form:
            return
        joined, last = self.joined, -1
        at = joined.find(form)
        while at != -1:
            index = self._text_of(at, at + len(form))
            if index > last:
                last = index
                yield index
                at = self.starts[index] + len(self.texts[index])  # on to the next text
            at = joined.find(form, at + 1)

    def dated(self, date: tuple[int, int, int]) -> Iterator[int]:
        """The texts that say the date (`date_spans`), in order: each that holds its year."""
        for index in self.holding(str(date[0])):
            if date_spans(self.texts[index], date):
                yield index
