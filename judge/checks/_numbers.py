"""Numbers as a person writes them, found in text: `1,000`, `1000` and `1000.0` are one number,
and a number is never a part of a word (`a12`), a time (`13:00`) or a date (`2024-05-01`).
Value origins and injection evidence read them here."""

from __future__ import annotations

import re

NUMBER = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
"""A number as a person writes one (`numbers_in` keeps those that stand alone)."""


def numbers_in(text: str) -> list[tuple[int, int, str]]:
    """The numbers `text` states, with their spans: not a part of a word (`a12`), a time
    (`13:00`) or a date (`2024-05-01`). (A scan for digits, then a look at each side: a regular
    expression that looks behind at every position costs ten times more.)"""
    found = []
    for match in NUMBER.finditer(text):
        start, end = match.span()
        if text.startswith("-", start) and start and _glued(text[start - 1]):
            start += 1  # "x-5": the 5, not -5
        if _alone(text, start, end):
            found.append((start, end, text[start:end]))
    return found


def says_number(text: str, number: float) -> bool:
    """`text` states `number` (as `numbers_in` reads numbers), found from where the digits
    its written forms all begin with occur: `1000`, `1,000` and `1000.0` all hold "1"."""
    digits = str(abs(int(number))) if abs(number) < 1e15 else ""
    if digits not in text and not _grouped(text, number, digits):
        return False  # every form writes its digits, or its digits in groups of three
    if digits and number >= 0:  # the number as Python writes it, alone: the common case
        form = digits if number == int(number) else repr(number)
        if "e" not in form and _says_whole(text, form):
            return True
    head = digits[: len(digits) % 3 or 3]
    at = text.find(head) if head else -1
    while at != -1:
        if not (at and text[at - 1].isdigit()):  # the start of a run of digits
            signed = at and text[at - 1] == "-" and not (at > 1 and _glued(text[at - 2]))
            start = at - 1 if signed else at
            match = NUMBER.match(text, start)
            if (
                match is not None
                and _alone(text, start, match.end())
                and number_value(match.group()) == number
            ):
                return True
        at = text.find(head, at + 1)
    return False


def _grouped(text: str, number: float, digits: str) -> bool:
    """`text` holds the number's digits in groups of three (`1,000`): its last group with the
    comma is looked for first (`format` costs more)."""
    return len(digits) > 3 and "," + digits[-3:] in text and f"{abs(int(number)):,}" in text


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
        at = text.find(digits, at + 1)
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


def numeric(text: str) -> float | None:
    """A string value that is a number as a person writes one (`1,000`, `12.50`), as a float."""
    stripped = text.strip()
    if not (stripped[:1].isdigit() or stripped[:1] == "-") or NUMBER.fullmatch(stripped) is None:
        return None
    return number_value(stripped)
