"""JSON as cases carry it: strict (RFC 8259: no NaN, no trailing data, the last of duplicate
keys wins) and exact (an integer of any size stays that integer, never a float).

orjson reads integers past 64 bits as floats, so `123456789012345678901234567891` would equal
`123456789012345678901234567890`: case data is read with msgspec, which keeps them. Writing
stays orjson's (its bytes are what caches and files already hold), with msgspec only for the
integers orjson cannot write.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

import msgspec
import orjson

DecodeError = msgspec.DecodeError
"""What `loads` raises for text that is not strict JSON (a `ValueError`)."""


class TooDeep(DecodeError):
    """What `loads` raises for JSON nested past what it follows (about 1,000 levels)."""


decoder = msgspec.json.Decoder()
"""The decoder `loads` calls (hot paths call its `decode` directly, and catch `RecursionError`
themselves)."""
_orjson_dumps, _NEWLINE = orjson.dumps, orjson.OPT_APPEND_NEWLINE  # (looked up once)
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{},]')  # a string, or a mark between values


def loads(data: bytes | str) -> Any:
    """Strict, exact JSON."""
    try:
        return decoder.decode(data)
    except RecursionError:  # nested past what msgspec follows (orjson stops at 1,024 too)
        raise TooDeep("JSON is nested too deeply") from None


def array_items(data: bytes) -> list[bytes] | None:
    """The text of each element of the JSON array `data`, found by its brackets alone, so an
    element nested past what `loads` follows is found too (and can be refused alone); None
    where the brackets do not make one array. Each element may still not be JSON."""
    data = data.strip()
    if data[:1] != b"[":
        return None
    items: list[bytes] = []
    depth, start = 0, 1
    for token in _TOKENS.finditer(data):
        mark = token.group()
        if mark in (b"[", b"{"):
            depth += 1
        elif mark in (b"]", b"}"):
            depth -= 1
            if depth == 0:
                last = data[start : token.start()].strip()
                if last or items:  # (`[]` holds none; `[1,]` an empty element, not JSON)
                    items.append(last)
                return items if token.end() == len(data) else None
        elif mark == b"," and depth == 1:
            items.append(data[start : token.start()].strip())
            start = token.end()
    return None


def dumps(
    value: Any, *, sort_keys: bool = False, default: Callable[[Any], Any] | None = None
) -> bytes:
    """Compact JSON bytes, as orjson writes them; integers past 64 bits written exactly."""
    try:
        return orjson.dumps(value, default=default, option=orjson.OPT_SORT_KEYS if sort_keys else 0)
    except orjson.JSONEncodeError:
        return msgspec.json.encode(value, enc_hook=default, order="sorted" if sort_keys else None)


def maybe_json(value: Any) -> Any:
    """`value`, decoded when it is JSON text of an array or object (harnesses and trace
    attributes pass JSON as text); as it is otherwise, or when that text is not JSON."""
    if isinstance(value, (str, bytes)) and value.strip()[:1] in ("[", "{", b"[", b"{"):
        try:
            return loads(value)
        except DecodeError:
            return value
    return value


def dumps_line(value: Any) -> bytes:
    """`dumps(value)` and a line feed: one line of a JSON Lines file."""
    try:
        return _orjson_dumps(value, option=_NEWLINE)
    except orjson.JSONEncodeError:
        return msgspec.json.encode(value) + b"\n"


def json_kind(value: Any) -> str:
    """What kind of JSON value this is, for messages: "an object", "an array", "null"..."""
    return {
        dict: "an object",
        list: "an array",
        tuple: "an array",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }.get(type(value), "a number")


def pointer(parts: Iterable[Any]) -> str:
    """A JSON pointer (RFC 6901) from path parts."""
    out = ""
    for part in parts:
        text = part if type(part) is str else str(part)
        if "~" in text or "/" in text:
            text = text.replace("~", "~0").replace("/", "~1")
        out += "/" + text
    return out
