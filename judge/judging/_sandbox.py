"""The sandbox rubrics render in: every value a template prints has `<` and `>` escaped, so
untrusted text can never close a rubric's own `<tags>`; the filters rubrics may use; and the
cut that keeps a prompt within the rubric's `max_prompt_chars` in any script."""

from __future__ import annotations

import os
from typing import Any

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment


def _neutralise(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    # Anything else is printed as text (a dict or list as its repr): escape that text.
    return str(value).replace("<", "\\u003c").replace(">", "\\u003e")


ENV = SandboxedEnvironment(
    undefined=StrictUndefined,
    autoescape=False,
    finalize=_neutralise,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=False,
)
ENV.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "sort_keys": False}


def shorten(value: Any, limit: int = 300) -> str:
    """Text (a value as JSON) cut to `limit` characters, with a visible marker of what is
    left out: long values never push a case past the judge's context."""
    text = value if isinstance(value, str) else _json_text(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...[{len(text) - limit:,} more characters]"


def _json_text(value: Any) -> str:
    # As `tojson` writes it (with spaces, as arguments are usually written), minus its HTML
    # escaping: not the compact bytes of `judge.cases._json.dumps`.
    import json

    return json.dumps(value, ensure_ascii=False, default=str)


def shared_openings(texts: Any, least: int = 40, among: int = 3) -> list[str]:
    """Openings of at least `least` characters that `among` or more of `texts` begin with,
    cut after a word, longest first: a tool list's boilerplate, to be printed once."""
    groups: dict[str, list[str]] = {}
    for text in texts:
        if isinstance(text, str) and len(text) > least:
            groups.setdefault(text[:least], []).append(text)
    found = []
    for members in groups.values():
        if len(members) < among:
            continue
        shared = os.path.commonprefix(members)
        if not shared[-1:].isspace():  # cut after a word, never inside one
            shared = shared[: shared.rfind(" ") + 1]
        if len(shared.strip()) >= least:
            found.append(shared)
    return sorted(found, key=len, reverse=True)


def without_opening(text: Any, openings: list[str]) -> Any:
    """`text` less the first of `openings` it begins with."""
    for opening in openings:
        if isinstance(text, str) and text.startswith(opening):
            return text[len(opening) :]
    return text


ENV.filters["shorten"] = shorten
ENV.filters["shared_openings"] = shared_openings
ENV.filters["without_opening"] = without_opening


WIDE = 4
"""What a character outside ASCII counts as against `max_prompt_chars`: a CJK character is a
token or more, where English takes about four characters to one."""


def cut_middle(text: str, limit: int) -> str:
    """`text` with its middle left out, and a marker saying how much, where it is longer than
    `limit` (ASCII characters; any other counts as `WIDE`): two thirds of the room for the
    start, one third for the end, so no case passes the judge's context in any script."""
    if len(text) <= limit // WIDE or _width(text) <= limit:
        return text
    head = _fitting(text, limit * 2 // 3)
    tail = _fitting(text[::-1], limit // 3)[::-1]
    left_out = len(text) - len(head) - len(tail)
    return f"{head}\n...[{left_out:,} characters left out]...\n{tail}"


def _width(text: str) -> int:
    return len(text) + (WIDE - 1) * sum(not c.isascii() for c in text)


def _fitting(text: str, room: int) -> str:
    """The longest start of `text` whose width is at most `room`."""
    if len(text) <= room // WIDE or _width(text[:room]) <= room:  # the common case: ASCII
        return text[:room]
    used = 0
    for end, char in enumerate(text):
        used += 1 if char.isascii() else WIDE
        if used > room:
            return text[:end]
    return text
