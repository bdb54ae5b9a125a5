"""Numbers as a person writes them, found in text: `1,000`, `1000` and `1000.0` are one number,
and a number is never a part of a word (`a12`), a time (`13:00`) or a date (`2024-05-01`).
Where full stops group thousands (`1.000`, `1.000.000`, `2.500,50`, as German, Spanish or
Italian write them), a number is read that way too, as a numeric date is read day first and
month first: `1.000` states both 1 and 1000. Value origins and injection evidence read them
here, each text in one pass."""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
"""A number as English writes one (`numbers_in` keeps those that stand alone)."""
_RUN = re.compile(r"-?\d+(?:[.,]\d+)*+")
"""Digits and the marks between them, read as one (possessive: a long run of groups is read
once, never again from inside it)."""
_DOTTED = re.compile(r"-?\d{1,3}(?:\.\d{3})+(?:,\d+)?")
"""A number whose full stops group thousands (and whose comma, if any, marks decimals)."""


def numbers_in(text: str) -> list[tuple[int, int, float]]:
    """The numbers `text` states, with their spans and values: not a part of a word (`a12`), a
    time (`13:00`) or a date (`2024-05-01`); one grouped by full stops both ways (`1.000`: 1
    and 1000). (A scan for digits, then a look at each side: a regular expression that looks
    behind at every position costs ten times more.)"""
    found: list[tuple[int, int, float]] = []
    for match in _RUN.finditer(text):
        _read(text, match.start(), match.end(), found)
    return found


def _read(text: str, start: int, end: int, found: list[tuple[int, int, float]]) -> None:
    """The numbers the run of digits and marks at `text[start:end]` states, onto `found`."""
    if text.startswith("-", start) and start and _glued(text[start - 1]):
        start += 1  # "x-5": the 5, not -5
    english = NUMBER.match(text, start)
    if english is not None and _alone(text, start, english.end()):
        found.append((start, english.end(), number_value(english.group())))
    if (
        end - start > 4
        and text.find(".", start, end) != -1
        and _DOTTED.fullmatch(text, start, end) is not None
        and _alone(text, start, end)
    ):
        found.append((start, end, _dotted_value(text[start:end])))


def says_number(text: str, number: float) -> bool:
    """`text` states `number` (as `numbers_in` reads numbers): told at once where it holds
    none of the digits every form of it writes, or holds them alone; else each run of digits
    that holds its first digits read once."""
    if not math.isfinite(number):
        return False
    digits = str(abs(int(number))) if abs(number) < 1e15 else ""
    if digits not in text and not _grouped(text, number, digits):
        return False  # every form writes its digits, or its digits in groups of three
    if digits and number >= 0:  # the number as Python writes it, alone: the common case
        form = digits if number == int(number) else repr(number)
        if "e" not in form and _says_whole(text, form):
            return True
    if not digits:
        return any(value == number for _, _, value in numbers_in(text))
    return _said_in_runs(text, number, digits[: len(digits) % 3 or 3])


def _said_in_runs(text: str, number: float, head: str) -> bool:
    """A run of digits and marks (as `numbers_in` finds them) that holds `head` states
    `number`. Each run is read once, from where `head` occurs: linear in the text."""
    reached, at = 0, text.find(head)
    found: list[tuple[int, int, float]] = []
    while at != -1:
        start = at
        while start > reached and (text[start - 1].isdigit() or text[start - 1] in ".,-"):
            start -= 1  # back to the start of the run that holds it (none read twice)
        run = _RUN.search(text, start)
        while run is not None and run.end() <= at:
            run = _RUN.search(text, run.end())
        if run is None:
            return False
        found.clear()
        _read(text, run.start(), run.end(), found)
        if any(value == number for _, _, value in found):
            return True
        reached = run.end()
        at = text.find(head, reached)
    return False


def _grouped(text: str, number: float, digits: str) -> bool:
    """`text` holds the number's digits in groups of three (`1,000`, `1.000`): its last group
    with the mark is looked for first (`format` costs more)."""
    if len(digits) <= 3:
        return False
    last = digits[-3:]
    if "," + last in text and f"{abs(int(number)):,}" in text:
        return True
    return "." + last in text and f"{abs(int(number)):,}".replace(",", ".") in text


def _says_whole(text: str, digits: str) -> bool:
    """`text` holds `digits` as a whole number by itself (`says_number`'s common case, told
    without a regular expression): nothing glued on either side that could make it another
    number, a sign, a time or a date. False is no answer: `says_number` then looks closer."""
    at, size = text.find(digits), len(text)
    while at != -1:
        end = at + len(digits)
        before = text[at - 1] if at else " "
        after = text[end] if end < size else " "
        went_on = after in ".,:-" and end + 1 < size and text[end + 1].isdigit()
        if not (_glued(before) or before in ".,:-" or _glued(after) or went_on):
            return True  # (a full stop or a comma after it ends a sentence, not the number)
        at = text.find(digits, end)
    return False


def _alone(text: str, start: int, end: int) -> bool:
    """The number at `text[start:end]` stands alone: not a part of a word, a time or a date."""
    before = text[start - 1] if start else " "
    if (
        _glued(before)
        or before in ".,:"
        or (before == "-" and start > 1 and text[start - 2].isdigit())
    ):
        return False
    after = text[end : end + 2]
    return not (
        after[:1].isdigit() or (len(after) == 2 and after[0] in ":-" and after[1].isdigit())
    )


def _glued(char: str) -> bool:
    return char.isalnum() or char == "_"


def number_value(text: str) -> float:
    return float(text.replace(",", ""))


def _dotted_value(text: str) -> float:
    return float(text.replace(".", "").replace(",", "."))


def numeric(text: str) -> float | None:
    """A string value that is a number as a person writes one (`1,000`, `12.50`), as a float."""
    stripped = text.strip()
    if not (stripped[:1].isdigit() or stripped[:1] == "-") or NUMBER.fullmatch(stripped) is None:
        return None
    return number_value(stripped)
