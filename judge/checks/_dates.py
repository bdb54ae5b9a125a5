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
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_DIGITS = re.compile(r"\d\d*")  # (a first digit alone: the engine looks for it quickly)
_NUMERIC = re.compile(r"(?<![\d./-])(\d{1,2})([/.])(\d{1,2})\2(\d{4})(?![\d./-])")
_DAY_REACH, _YEAR_REACH = 30, 40
"""Characters between a month's name and its day, and its year."""
_READ_PAST = 8
"""Characters read past the last place a day or a year may start: enough to see all of one
(and what follows it), so none is cut short, and the scan stops near the month's name."""
SUFFIXES = ("st", "nd", "rd", "th")


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
    name = MONTHS[month - 1]
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
    days = _near(text, start - _DAY_REACH, end + _DAY_REACH, day, 2)
    years = _near(text, start - _YEAR_REACH, end + _YEAR_REACH, year, 4)
    if not days or not years:
        return None
    nearest = min(days, key=lambda s: abs(s[0] - start))
    year_at = min(years, key=lambda s: abs(s[0] - start))
    return min(nearest[0], start, year_at[0]), max(nearest[1], end, year_at[1])


def _near(text: str, low: int, high: int, said: int, size: int) -> list[tuple[int, int]]:
    """The spans of the numbers that start within `text[low:high]` and say `said`: a day (`size`
    2: one or two digits, "st", "nd", "rd" or "th" after it or not) or a year (`size` 4: four
    digits), alone (not a part of a longer number, a decimal, a time or a date in numbers)."""
    found = []
    for start, end in _written(text, max(0, low), high, said, size):
        if start and (text[start - 1] in ".,:/-" or text[start - 1].isdecimal()):
            continue  # a part of a longer number (a run found from `low` may begin in one)
        day = size == 2  # (a day's number has no decimals; a year's may be followed by ".5")
        suffix = text[end : end + 2]  # (in any case: "ST", "ſt")
        ordinal = day and len(suffix) == 2 and suffix.casefold() in SUFFIXES
        if ordinal and _ends(text, end + 2, day):
            found.append((start, end + 2))
        elif _ends(text, end, day):
            found.append((start, end))
    return found


def _written(text: str, low: int, high: int, said: int, size: int) -> list[tuple[int, int]]:
    """Where digits that say `said` (at most `size` of them; a year's all 4) start within
    `text[low:high]`, in order; what is around them is `_near`'s to read."""
    if text[low : high + _READ_PAST].isascii():  # (its digits found as written: no scan)
        forms = [f"{said:04d}"] if size == 4 else [str(said)] + ([f"0{said}"] if said < 10 else [])
        spans = []
        for form in forms:
            at = text.find(form, low, high + len(form))
            while at != -1:
                spans.append((at, at + len(form)))
                at = text.find(form, at + 1, high + len(form))
        return sorted(spans)
    spans = []
    for run in _DIGITS.finditer(text, low, high + _READ_PAST):  # digits of any script
        start, end = run.span()
        if start > high:
            break
        if (end - start == 4 if size == 4 else end - start <= 2) and int(run.group()) == said:
            spans.append((start, end))
    return spans


def _ends(text: str, at: int, decimals: bool) -> bool:
    """A number may end before `text[at]`: no digit or time or date goes on (and, with
    `decimals`, no decimal part)."""
    after = text[at : at + 2]
    if not after:
        return True
    if after[0].isdecimal() or after[0] in ":/-":
        return False
    return not (decimals and after[0] == "." and len(after) == 2 and after[1].isdecimal())
