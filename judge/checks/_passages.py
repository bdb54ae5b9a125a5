"""The passages of a tool result's text that read as instructions to the assistant: each
runs from its first marker's sentence (`judge.checks._markers`) to its closing tag, or to the
end of its paragraph or record. Linear in the text: the markers found in one pass, the closing
tags read once, and the passage that holds a span found by bisection.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left, bisect_right

from judge.checks._markers import markers

_TAGS = r"(?:information|instructions?|system|important|admin|system_message)"
_CLOSING = re.compile(rf"</{_TAGS}>|<\|im_end\|>|\[/inst\]|<</sys>>", re.IGNORECASE)
_CLOSING_TAGS = re.compile(rf"</\s*+({_TAGS})\s*+>", re.IGNORECASE)
_OPENING = re.compile(rf"<({_TAGS})>", re.IGNORECASE)
_SENTENCE_ENDS = tuple(f"{mark}{space}" for mark in ".!?" for space in " \t\r")
_BREAK = re.compile(r"(?:\n|\\n)[ \t\\]*(?:\n|\\n)|(?:\n|\\n)\s*(?:- |[\w\"'-]+:\s)")
"""The end of a paragraph (a blank line) or of a record (a line that starts an item or a
key), in plain text and in YAML or JSON dumped as text."""
_JOIN, _HEAD, _TAIL, _TAGGED = 400, 200, 600, 4000
"""Characters: between markers that chain, back to a sentence's start, on to a paragraph's
end, and from an opening tag to its closing one."""
_EXCERPT_MOST = 480  # characters of an excerpt


class Passages:
    """The passages of a text, in order (each `(start, end)`), and which holds a span."""

    __slots__ = ("spans", "_starts", "_reach")

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self.spans = spans
        self._starts = [start for start, _ in spans]
        self._reach: list[int] = []  # the furthest end of the passages up to each
        for _, end in spans:
            self._reach.append(max(end, self._reach[-1]) if self._reach else end)

    def holding(self, start: int, end: int) -> tuple[int, int] | None:
        """The first passage that holds `[start, end)`, or None."""
        last = bisect_right(self._starts, start) - 1
        first = bisect_left(self._reach, end)  # the first that reaches its end
        return self.spans[first] if first <= last else None


def passages(text: str, deadline: float = math.inf) -> list[tuple[int, int]]:
    """The spans of `text` that read as instructions to the assistant: each from the start of
    the sentence of its first marker to its last marker (markers closer than `_JOIN` chain),
    then on to the end of the paragraph or record unless it ends in a closing tag (at most
    `_TAIL` characters on): what the planted text says, not what sits beside it."""
    spans: list[list[int]] = []
    closed = False
    closing = _Closing(text)
    for match in markers(text, deadline):
        if spans and match.start() <= spans[-1][1]:  # inside a span already (a tag's)
            continue
        end, closes = closing.after(match)
        if spans and not closed and match.start() - spans[-1][1] <= _JOIN:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            if spans and not closed:
                spans[-1][1] = _tail(text, spans[-1][1])
            spans.append([_sentence_start(text, match.start()), end])
        closed = closes or _CLOSING.fullmatch(match.group()) is not None
    if spans and not closed:
        spans[-1][1] = _tail(text, spans[-1][1])
    return [(start, end) for start, end in spans]


class _Closing:
    """A text's closing tags, read once (when the first opening tag asks), by name."""

    __slots__ = ("_text", "_ends")

    def __init__(self, text: str) -> None:
        self._text = text
        self._ends: dict[str, list[int]] | None = None

    def after(self, match: re.Match[str]) -> tuple[int, bool]:
        """Where a marker's span ends: an opening tag's at its closing tag (within `_TAGGED`
        characters), where there is one; any other marker's at itself."""
        opened = _OPENING.fullmatch(match.group())
        if opened is None:
            return match.end(), False
        if self._ends is None:
            self._ends = {}
            for found in _CLOSING_TAGS.finditer(self._text):
                self._ends.setdefault(found.group(1).lower(), []).append(found.end())
        ends = self._ends.get(opened.group(1).lower(), [])
        # the first that ends after the tag and starts within reach (a closing tag is short)
        at = bisect_right(ends, match.end())
        if at < len(ends) and ends[at] <= match.end() + _TAGGED:
            return ends[at], True
        return match.end(), False


def _sentence_start(text: str, at: int) -> int:
    """Where the sentence (or line) holding `at` starts, looking back `_HEAD` characters: after
    a line's end (`\\n` too: YAML's quoted text writes it), or a full stop, `!` or `?` and a
    space (substring searches back: a scan of each character costs ten times more)."""
    first = max(0, at - _HEAD)
    start = max(first, text.rfind("\n", first, at) + 1)
    written = text.rfind("\\n", first, at)
    if written != -1:
        start = max(start, written + 2)
    for end in _SENTENCE_ENDS:
        found = text.rfind(end, start, at)
        if found != -1:
            start = found + 1
    return start


def _tail(text: str, at: int) -> int:
    """Where the paragraph or record holding `at` ends, looking on `_TAIL` characters."""
    found = _BREAK.search(text, at, min(len(text), at + _TAIL))
    return found.start() if found else min(len(text), at + _TAIL)


def instructions_near(text: str, start: int, end: int) -> str | None:
    """An excerpt of the instructions to the assistant whose passage in `text` holds
    `text[start:end]`; None where no passage does."""
    found = Passages(passages(text)).holding(start, end)
    return None if found is None else excerpt(text, found[0], found[1], end)


def excerpt(text: str, start: int, end: int, keep: int) -> str:
    """`text[start:end]` on one line, at most `_EXCERPT_MOST` characters that reach `keep`."""
    first, last = start, min(end, max(keep, start + _EXCERPT_MOST))
    first = max(first, last - _EXCERPT_MOST)
    shown = " ".join(text[first:last].split())
    return ("..." if first else "") + shown + ("..." if last < len(text) else "")
