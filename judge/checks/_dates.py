"""A date value said in words: `2024-05-01` is "May 1st 2024", "the 1st of May, 2024", "1 May
2024", "the 1st to the 5th of May 2024" (each day of a range), "01/05/2024" or "5/1/2024".

A person says the same date in all of these, so value origins find it there (a reservation's
dates in the user's request, or only in a tool result's instructions). The day, the month
(by name, English) and the year must all be said, close together: a date without its year is
not the same value.
"""

from __future__ import annotations

import re

_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_DAY = re.compile(r"(?<![\d.,:/-])(\d{1,2})(?:st|nd|rd|th)?(?![\d:/-])(?!\.\d)", re.IGNORECASE)
_YEAR = re.compile(r"(?<![\d.,:/-])(\d{4})(?![\d:/-])")
_NUMERIC = re.compile(r"(?<![\d./-])(\d{1,2})([/.])(\d{1,2})\2(\d{4})(?![\d./-])")
_DAY_REACH, _YEAR_REACH = 30, 40
"""Characters between a month's name and its day, and its year."""


def iso_date(value: str) -> tuple[int, int, int] | None:
    """The (year, month, day) of a value that is exactly an ISO date, else None."""
    if len(value) != 10 or value[4] != "-" or value[7] != "-":
        return None
    match = _ISO.fullmatch(value)
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    return (year, month, day) if 1 <= month <= 12 and 1 <= day <= 31 else None


def date_spans(
    text: str, date: tuple[int, int, int], lowered: str | None = None
) -> list[tuple[int, int]]:
    """Where `text` (`lowered`: the same in lower case, where known) says the date in words
    or in day/month numbers, each mention's span (from the first of its day, month and year
    to the last)."""
    year, month, day = date
    if str(year) not in text:  # (a date without its year is not the same value)
        return []
    found = []
    lowered = lowered if lowered is not None else text.lower()
    if len(lowered) != len(text):  # a letter whose lower case is two: keep the places
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    name = _MONTHS[month - 1]
    at = lowered.find(name[:3])
    while at != -1:  # each word that begins as the month's name: "May", "Jan.", "january"
        end = at + 3
        while end < len(lowered) and lowered[end].isalpha():
            end += 1
        word = lowered[at:end]
        whole = not (at and lowered[at - 1].isalpha())
        if whole and (word == name[:3] or name.startswith(word)):
            span = _around(text, at, end + (lowered[end : end + 1] == "."), year, day)
            if span is not None:
                found.append(span)
        at = lowered.find(name[:3], end)
    if f"/{year}" in text or f".{year}" in text:
        for match in _NUMERIC.finditer(text):
            first, second, said = int(match.group(1)), int(match.group(3)), int(match.group(4))
            if said == year and (first, second) in ((day, month), (month, day)):
                found.append(match.span())
    return sorted(set(found))


def _around(text: str, start: int, end: int, year: int, day: int) -> tuple[int, int] | None:
    """The span of the day and the year said near the month name at `text[start:end]`."""
    days = _near(_DAY, text, start - _DAY_REACH, end + _DAY_REACH, day)
    years = _near(_YEAR, text, start - _YEAR_REACH, end + _YEAR_REACH, year)
    if not days or not years:
        return None
    nearest = min(days, key=lambda s: abs(s[0] - start))
    year_at = min(years, key=lambda s: abs(s[0] - start))
    return min(nearest[0], start, year_at[0]), max(nearest[1], end, year_at[1])


def _near(
    pattern: re.Pattern[str], text: str, low: int, high: int, said: int
) -> list[tuple[int, int]]:
    """The spans of `pattern`'s matches that start within `text[low:high]` and say `said`
    (the text is read past `high`: a number is never cut short)."""
    found = []
    for match in pattern.finditer(text, max(0, low)):
        if match.start() > high:
            break
        if int(match.group(1)) == said:
            found.append(match.span())
    return found
