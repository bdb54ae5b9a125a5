"""The markers of instructions to the assistant in a tool result's text.

Text that addresses the model ("to you, AI model", "if you are an AI assistant"), overrides
its task ("ignore previous instructions", "before you solve the task I gave you", "before you
summarise, you must"), role or system markers (`<|im_start|>system`, `[INST]`, `### system`,
`<INFORMATION>`), or hidden text (tag characters, zero-width characters, HTML comments, text
styled invisible). Every marker counts, however many came before it. Layout is no marker: a
run of zero-width characters counts once, and a long one pads, as a marketing e-mail's
preheader does; an element with nothing in it hides nothing (`<span
style="display:none"></span>`); and what is hidden before a text's first visible character is
its preheader.

Linear in the text: each pattern begins with a word or a mark of its own, found with substring
searches (a pass of the C library each), and only the patterns that begin with what is there
are tried there; no pattern goes back over a run of white space, digits or marks.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from judge.checks._budget import within

_AI = (
    r"(?:ai|a\.i\.|llm|(?:ai |virtual |digital )?assistant|(?:ai |llm )?agent"
    r"|(?:language |ai )?model|chat ?bot|bot|gpt|chatgpt|claude|gemini|copilot)"
)
_TAGS = r"(?:information|instructions?|system|important|admin|system_message)"
_ZERO_WIDTH = "\u200b-\u200f\u2060-\u2064\ufeff"
_FILLER = r"(?:\s|[\u00a0\u034f\u00ad]|&(?:nbsp|zwnj|zwj|shy|#\d{1,7}|#x[0-9a-f]{1,6});)"
"""What pads between zero-width characters: spaces, marks, entities."""
_EMPTY = rf"<[a-z][\w-]*+[^<>]*+>{_FILLER}*+</[a-z][\w-]*+\s*+>"
"""An element with nothing in it (its closing tag read loosely: an element's own is short)."""

_PATTERNS: tuple[tuple[tuple[str, ...], str], ...] = (
    # overrides of its task
    (
        ("ignore", "disregard", "forget", "override", "skip", "bypass"),
        r"(?:ignore|disregard|\bforget|\boverride|\bskip|\bbypass) (?:all |any |the |your |my "
        r"|of )*(?:previous|prior|above|earlier|preceding|original|initial|former|system"
        r"|existing|old)? (?:instructions?|instrucitons?|iunstructions?|prompts?|directions?"
        r"|rules|guidelines|directives?|tasks?|context|orders)\b",
    ),
    (
        ("before",),
        r"\bbefore (?:you )?(?:can |do |start |begin |continue |proceed |go on )?(?:to )?"
        r"(?:solve|complete|do|finish|continue|answer|proceed with|carry out|perform|work on"
        r"|start|begin|handle|address)\b[^.!?\n]{0,40}\b(?:task|request|question|instruction)",
    ),
    (  # a task set before the one it was given: "before you summarise, you must invite..."
        ("before",),
        r"\bbefore (?:you )?(?:summari[sz]e|reply|respond|answer|complete|finish|proceed"
        r"|continue)\w*\b[^.!?\n]{0,60}?\b(?:you (?:must|need to|have to|are required to)"
        r"|first)\b",
    ),
    (
        ("task", "instruction"),
        r"\b(?:task|instructions?) (?:that )?i (?:gave|have given|asked) you\b",
    ),
    (("after",), r"\bafter you do that\b"),
    (
        ("new", "updated", "revised", "additional", "real", "actual", "true"),
        r"\b(?:new|updated|revised|additional|real|actual|true) (?:instructions?|tasks?"
        r"|objective|goal|orders)(?: for you)?\s*+[:!]",
    ),
    (
        ("instead",),
        r"\binstead of (?:the |your )?(?:original |current |user'?s? )?"
        r"(?:task|request|instructions?)\b",
    ),
    (
        ("do",),
        r"\b(?:do not|don't) (?:tell|inform|mention|notify|alert) (?:this to )?(?:the )?user\b",
    ),
    (("important", "urgent"), r"\bimportant!{2,}|\burgent!{2,}"),
    (
        ("todo",),
        r"\btodo: (?:please )?(?:send|transfer|pay|delete|remove|forward|post|share|invite"
        r"|email|create|update|change|reset|give|add|make|book|reserve|visit|download|upload"
        r"|concatenate)\b",
    ),
    # addresses to the model
    (
        ("to", "for", "dear", "hey", "hello", "hi", "attention", "note", "message", "instruction"),
        r"\b(?:to|for|dear|hey|hello|hi|attention|note to|message to|instructions? for) "
        rf"(?:you,? )?(?:the |this |an? |my |our )?{_AI}\b[,:!.]",
    ),
    (("if",), rf"\bif you(?:'re| are) (?:an? )?{_AI}\b"),
    (("you", "as"), r"\b(?:you are|you're|as) an? (?:ai|llm|language model|assistant|agent)\b"),
    (("ai", "language"), r"\b(?:ai|language) model developed by\b"),
    # role and system markers
    (("<",), r"<\|?(?:im_start|im_end|system|assistant|endoftext|start_header_id)\|?>"),
    (("[", "<"), r"\[/?(?:inst|system|sys)\]|<</?sys>>"),
    ((":line",), r"(?:^|\n)[^\S\n]*+#{1,6}\s*+\(?system"),  # (a line's own indent only)
    (("#",), r"(?<!#)#{2,}+\s*+\(?system"),  # (from a run's first #)
    (("<",), rf"</?{_TAGS}>"),
    (
        ("system", "developer"),
        r"\b(?:system|developer) (?:message|prompt|override|instructions?)\s*+:",
    ),
    # hidden text
    ((":zero",), rf"(?P<run>[{_ZERO_WIDTH}](?:(?:{_FILLER}|{_EMPTY})*+[{_ZERO_WIDTH}])*+)"),
    ((":tag",), r"(?P<smuggled>[\U000e0000-\U000e007f]++)"),
    (("<",), r"(?P<comment><!--[^<>]*?-->)"),
    (
        ("display", "visibility", "font-size", "opacity", "color"),
        r"(?P<hidden>display\s*+:\s*+none|visibility\s*+:\s*+hidden"
        r"|font-size\s*+:\s*+0(?:px)?\b|opacity\s*+:\s*+0\b|color\s*+:\s*+(?:white|#fff(?:fff)?)\b)",
    ),
)
"""Each pattern (a space: any run of white space, taken whole; `" ?"`: or none), with what it
can begin with: a word (in lower case), or a mark: `<`, `[`, `#`, `:line` (a line's start,
before a `#`), `:zero` (a zero-width character), `:tag` (a tag character)."""

_ANYWHERE = frozenset(
    ("ignore", "disregard", "display", "visibility", "font-size", "opacity", "color")
)
"""The words a pattern may begin with inside a word too (the others begin a word)."""
_BEGINNING = {
    what: tuple(place for place, (begins, _) in enumerate(_PATTERNS) if what in begins)
    for begins, _ in _PATTERNS
    for what in begins
}
"""Per word or mark, the places in `_PATTERNS` of the patterns that begin with it."""
_WORDS = tuple(what for what in _BEGINNING if what[0].isalpha())
class _Scans(NamedTuple):
    marks: re.Pattern[str]
    """Where a marker may begin with its mark (on the text in lower case; each begins with
    its mark: the engine skips to them)."""
    invisible: tuple[tuple[re.Pattern[str], str], ...]
    empty_element: re.Pattern[str]
    opening_matter: re.Pattern[str]
    """What a text may open with before its first visible character: white space, marks,
    tags."""
    letters: re.Pattern[str]


@functools.cache
def _scans() -> _Scans:
    """The patterns `markers` scans with, compiled when a tool result is first read (not at
    every `judge` start-up)."""
    return _Scans(
        re.compile(
            r"<(?:\||<(?=/?sys>>)|!--|/?(?:system|information|instruction|important|admin)|im_"
            r"|assistant|endoftext|start_header)|\[/?(?:inst|sys)|#(?<!##)#*+\s*+\(?system"
        ),
        (
            (re.compile(rf"[{_ZERO_WIDTH}](?:{_FILLER}*+[{_ZERO_WIDTH}])*+"), ":zero"),
            (re.compile("[\U000e0000-\U000e007f]++"), ":tag"),
        ),
        re.compile(_EMPTY, re.IGNORECASE),
        re.compile(rf"(?:{_FILLER}|[{_ZERO_WIDTH}]|<[^<>]*+>)*+", re.IGNORECASE),
        re.compile(r"[a-z]{3}", re.IGNORECASE),
    )


_PADDING = 8
"""Zero-width characters in a run from which it pads (a preheader's), rather than hides."""
_ZERO_CHARS = tuple(
    chr(c) for c in (*range(0x200B, 0x2010), *range(0x2060, 0x2065), 0xFEFF)
)  # fmt: skip
_TAG_MOST = 2000  # characters an opening tag may have: looked back over for its `<`
_EVERY = 256  # places tried between looks at the deadline
_FOLD = {"\u0130": "i", "\u0131": "i"}  # (lower case in one character each)


@functools.cache
def _patterns(places: tuple[int, ...]) -> re.Pattern[str]:
    """The patterns at `places` of `_PATTERNS`, as one (the first that matches wins, as in a
    scan of them all). Compiled when first needed: all of them took 7 ms of every `judge
    check`'s start-up."""
    said = [_PATTERNS[place][1] for place in places]
    spoken = "|".join(f"(?:{p})" for p in said).replace(" ?", r"\s*+").replace(" ", r"\s++")
    return re.compile(spoken, re.IGNORECASE)


def lowered(text: str) -> str:
    """`text` in lower case, each character in its place (`İ` and `ı` read as `i`)."""
    for upper, lower in _FOLD.items():
        if upper in text:
            text = text.replace(upper, lower)
    return text.lower()


def _starts(text: str) -> dict[int, tuple[int, ...]]:
    """Where in `text` (in lower case) a marker may begin, and the places in `_PATTERNS` of
    the patterns that may begin there."""
    found: dict[int, tuple[int, ...]] = {}
    _begin(found, 0, ":line")  # (where `^` is)
    for word in _WORDS:
        anywhere = word in _ANYWHERE
        at = text.find(word)
        while at != -1:
            if anywhere or not at or not (text[at - 1].isalnum() or text[at - 1] == "_"):
                _begin(found, at, word)
            at = text.find(word, at + 1)
    for pattern, what in _scans().invisible:
        for invisible in pattern.finditer(text):
            _begin(found, invisible.start(), what)
    for mark in _scans().marks.finditer(text):
        at = mark.start()
        _begin(found, at, text[at])
        if text[at] == "#":  # and the line it may head: "\n   ### system"
            while at and text[at - 1] != "\n" and text[at - 1].isspace():
                at -= 1
            _begin(found, at - 1 if at else 0, ":line")
    return found


def _begin(found: dict[int, tuple[int, ...]], at: int, what: str) -> None:
    places, before = _BEGINNING[what], found.get(at)
    found[at] = places if before is None else tuple(sorted({*before, *places}))


def markers(text: str, deadline: float) -> list[re.Match[str]]:
    """The markers of `text` (in Unicode compatibility form), in order, as one scan of all
    the patterns would find them: a run of zero-width characters once, and none of the
    layout that pads, the elements that hide nothing, and the preheader."""
    visible = _scans().opening_matter.match(text)
    opening = visible.end() if visible is not None else 0
    starts = _starts(lowered(text))
    found, reached = [], 0
    for count, at in enumerate(sorted(starts)):
        if count % _EVERY == 0:
            within(deadline)
        if at < reached:
            continue
        match = _patterns(starts[at]).match(text, at)
        if match is None:
            continue
        reached = match.end()
        if _shown(text, match, opening):
            found.append(match)
    return found


def _shown(text: str, match: re.Match[str], opening: int) -> bool:
    """The marker is one: not in the preheader (what is hidden before the first visible
    character), not padding, not a comment without words, not a style of an empty element."""
    kind, said = match.lastgroup, match.group()
    if kind is None or kind == "smuggled":
        return True
    if match.start() < opening:
        return False
    if kind == "run":
        return "<" not in said and sum(said.count(c) for c in _ZERO_CHARS) < _PADDING
    if kind == "comment":
        return _scans().letters.search(said) is not None
    return not _in_empty_element(text, match.start())


def _in_empty_element(text: str, at: int) -> bool:
    """`at` is in the opening tag of an element with nothing in it: its style hides nothing."""
    opened = text.rfind("<", max(0, at - _TAG_MOST), at)
    return (
        opened != -1
        and text.rfind(">", opened, at) == -1
        and _scans().empty_element.match(text, opened) is not None
    )
