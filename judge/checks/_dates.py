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
_MONTH = re.compile(
    r"\b(jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?(?![a-z])", re.IGNORECASE
)
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


def date_spans(text: str, date: tuple[int, int, int]) -> list[tuple[int, int]]:
    """Where `text` says the date in words or in day/month numbers, each mention's span
    (from the first of its day, month and year to the last)."""
    year, month, day = date
    found = []
    lowered = text.lower()
    if _MONTHS[month - 1][:3] in lowered and str(year) in text:
        for match in _MONTH.finditer(text):
            if _month_number(match.group(1)) != month:
                continue
            span = _around(text, match.start(), match.end(), year, day)
            if span is not None:
                found.append(span)
    if "/" in text or "." in text:
        for match in _NUMERIC.finditer(text):
            first, second, said = int(match.group(1)), int(match.group(3)), int(match.group(4))
            if said == year and (first, second) in ((day, month), (month, day)):
                found.append(match.span())
    return sorted(set(found))


def _month_number(name: str) -> int:
    head = name[:3].lower()
    return next(i for i, full in enumerate(_MONTHS, start=1) if full.startswith(head))


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
