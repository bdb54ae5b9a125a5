"""Where each argument value came from: the user's words, the system prompt, a tool's result,
the assistant's own earlier turns, the tool's schema, or nowhere.

Evidence, never a failure by itself. A value is looked for in the messages before the
response, the user's first (the user's word wins, then the system's, then a tool result's,
then the assistant's own, then the schema's), each message read once whatever the number of
values: linear in the size of the conversation. Matching is exact on text, then as a person
would say "the same value": case, spacing and Unicode forms of words, number formats (`1,000`,
`1000` and `1000.0` are one number), a value inside JSON text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from judge.cases._json import dumps, maybe_json, pointer

Origin = Literal["user", "system", "tool_result", "assistant", "schema", "nowhere"]
ORIGINS: tuple[Origin, ...] = ("user", "system", "tool_result", "assistant", "schema", "nowhere")

_SPACES = re.compile(r"\s+")
NUMBER = re.compile(r"(?<![\w.,:])(?<!\d-)-?\d+(?:,\d{3})*(?:\.\d+)?(?![\d]|:\d|-\d)")
"""A number as a person writes one; not a part of a word, a time (`13:00`) or a date."""
_SCHEMA_KEYS = ("default", "const", "enum", "examples")
_DEEPEST = 64  # a JSON tool result is walked this deep for the field a value is in


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """The string (not blank) and number (not boolean) leaves of parsed arguments, with their
    paths: what a conversation can have said."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from leaves(item, (*path, position))
    elif (
        isinstance(value, str)
        and value.strip()
        or isinstance(value, int | float)
        and not isinstance(value, bool)
    ):
        yield path, value


def normalise(text: str) -> str:
    """Text as compared: Unicode compatibility forms, case folded, spaces collapsed."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).casefold().strip()


def message_text(message: Mapping[str, Any]) -> str:
    """A message's text: its content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in content
        )
    return "" if content is None else str(content)


class Text:
    """One place a value can be found in: its raw text, and, read once when first needed, its
    normalised text, the numbers it states and the fields of the JSON it holds."""

    __slots__ = ("raw", "source", "at", "call_id", "_normal", "_numbers", "_data", "_fields")

    def __init__(
        self, raw: str, source: str, data: Any = None, at: int = 0, call_id: Any = None
    ) -> None:
        self.raw = raw
        self.source = source
        self.at = at  # the message's place in the conversation
        self.call_id = call_id  # a tool result's: the call it answers
        self._normal: str | None = None
        self._numbers: frozenset[float] | None = None
        self._data = data  # a structure it holds (a parsed result, an earlier call's arguments)
        self._fields: list[tuple[str, Text]] | None = None

    @property
    def normal(self) -> str:
        if self._normal is None:
            self._normal = normalise(self.raw)
        return self._normal

    @property
    def numbers(self) -> frozenset[float]:
        if self._numbers is None:
            self._numbers = frozenset(number_value(n) for n in NUMBER.findall(self.raw))
        return self._numbers

    def holds(self, value: str | int | float, normal: str | None) -> bool:
        """The value is said here: the text as it is, normalised, or the same number."""
        if normal is None:
            return float(value) in self.numbers
        if value in self.raw or normal in self.normal:  # type: ignore[operator]
            return True
        number = numeric(value)  # type: ignore[arg-type]
        return number is not None and number in self.numbers

    def where(self, value: str | int | float, normal: str | None) -> str:
        """The source, followed into the field of the JSON structure that holds the value."""
        for path, field in self.fields:
            if field.holds(value, normal):
                return self.source + path
        return self.source

    @property
    def fields(self) -> list[tuple[str, Text]]:
        """The leaves of the JSON it holds, each a place of its own (none for plain text)."""
        if self._fields is None:
            data = self._data if self._data is not None else maybe_json(self.raw.strip())
            self._fields = (
                [(pointer(p), Text(str(v), "")) for p, v in leaves_deep(data)]
                if isinstance(data, dict | list)
                else []
            )
        return self._fields


def leaves_deep(value: Any) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """The leaves of a parsed structure (booleans too), no deeper than `_DEEPEST`."""
    stack: list[tuple[tuple[Any, ...], Any]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict | list) and len(path) < _DEEPEST:
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            stack.extend((((*path, k), v) for k, v in reversed(list(pairs))))
        elif not isinstance(item, dict | list) and item is not None:
            yield path, item


class Conversation:
    """The places of a case's messages, by origin, latest first within each."""

    __slots__ = ("user", "system", "tool", "assistant", "asked", "earlier")

    def __init__(self, messages: Sequence[Mapping[str, Any]]) -> None:
        self.user: list[Text] = []
        self.system: list[Text] = []
        self.tool: list[Text] = []
        self.assistant: list[Text] = []
        self.asked: dict[Any, Text] = {}
        """The arguments of the earlier calls, by call id."""
        self.earlier: list[tuple[str, Graded]] = []
        """The earlier calls with ids, first first: each id, and the call as origins read it."""
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if not isinstance(message, Mapping):
                continue
            role, source = message.get("role"), f"/messages/{index}"
            if role == "user":
                self.user.append(Text(message_text(message), source, at=index))
            elif role in ("system", "developer"):
                self.system.append(Text(message_text(message), source, at=index))
            elif role == "tool" or role == "function":
                content, answers = message.get("content"), message.get("tool_call_id")
                if isinstance(content, dict):  # a structured result, as some harnesses pass it
                    raw, data = dumps(content).decode(), content
                else:
                    raw, data = message_text(message), None
                self.tool.append(Text(raw, f"{source}/content", data, index, answers))
            elif role == "assistant":
                self._assistant(message, source, index)

    def _assistant(self, message: Mapping[str, Any], source: str, index: int) -> None:
        text = message_text(message)
        if text.strip():
            self.assistant.append(Text(text, source, at=index))
        calls = message.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            function = call.get("function") if isinstance(call, dict) else None
            arguments = function.get("arguments") if isinstance(function, dict) else None
            if arguments is not None:
                where = f"{source}/tool_calls/{position}/function/arguments"
                raw = arguments if isinstance(arguments, str) else str(arguments)
                data = arguments if isinstance(arguments, dict | list) else None
                self.assistant.append(Text(raw, where, data, index))
                if isinstance(call, dict) and call.get("id") is not None:
                    self.asked[str(call["id"])] = self.assistant[-1]
                    parsed = data if data is not None else maybe_json(raw)
                    graded = (str(function.get("name")), parsed, index)  # type: ignore[union-attr]
                    self.earlier.insert(0, (str(call["id"]), graded))


def find(
    texts: Sequence[Text], value: str | int | float, normal: str | None, before: int
) -> Text | None:
    """The latest of `texts` before message `before` that says the value."""
    for text in texts:
        if text.at < before and text.holds(value, normal):
            return text
    return None


Graded = tuple[str, Any, int]
"""A call as origins read it: its name, its parsed arguments (None where they do not parse),
and the place of the first message after it (what it could have read)."""


SchemaOf = Callable[[str], tuple[int, Any] | None]
"""Per tool name, the tool's place in the case's `tools` and its parameters schema."""


def value_origins(
    conversation: Conversation, calls: Sequence[Graded], schema_of: SchemaOf
) -> list[dict[str, Any]]:
    """Per string and number leaf of every call, where it was found: `{"call", "path",
    "origin", "source"}`."""
    found = []
    for index, (name, arguments, before) in enumerate(calls):
        if arguments is None:
            continue
        schema = schema_of(name)
        for path, value in leaves(arguments):
            origin, source = origin_of(conversation, value, schema, path, before)
            found.append({"call": index, "path": pointer(path), "origin": origin, "source": source})
    return found


def origin_of(
    conversation: Conversation,
    value: str | int | float,
    schema: tuple[int, Any] | None,
    path: tuple[Any, ...],
    before: int,
) -> tuple[Origin, str | None]:
    """Where one value was found: the first origin that says it, and the place."""
    normal = normalise(value) if isinstance(value, str) else None
    for origin, texts in (
        ("user", conversation.user),
        ("system", conversation.system),
        ("tool_result", conversation.tool),
        ("assistant", conversation.assistant),
    ):
        text = find(texts, value, normal, before)
        if text is not None:
            return origin, text.where(value, normal)  # type: ignore[return-value]
    in_schema = schema_source(schema, path, value, normal) if schema is not None else None
    return ("schema", in_schema) if in_schema is not None else ("nowhere", None)


def schema_source(
    schema: tuple[int, Any], path: tuple[Any, ...], value: str | int | float, normal: str | None
) -> str | None:
    """The pointer of the default, const, enum option or example of the tool's schema at the
    value's path that equals it, or None."""
    index, node = schema
    where = f"/tools/{index}/parameters"
    for part in path:
        if not isinstance(node, dict):
            return None
        if isinstance(part, str):
            properties = node.get("properties")
            node = properties.get(part) if isinstance(properties, dict) else None
            where += "/properties" + pointer((part,))
        else:
            node, where = node.get("items"), where + "/items"
    if not isinstance(node, dict):
        return None
    for key in _SCHEMA_KEYS:
        given = node.get(key)
        options = given if key in ("enum", "examples") and isinstance(given, list) else [given]
        for position, option in enumerate(options):
            if option is not None and _same(option, value, normal):
                return f"{where}/{key}" + (f"/{position}" if options is given else "")
    return None


def _same(option: Any, value: str | int | float, normal: str | None) -> bool:
    if isinstance(option, bool) or isinstance(value, bool):
        return False
    if isinstance(option, str) and normal is not None:
        return normalise(option) == normal
    if isinstance(option, int | float) and not isinstance(value, str):
        return float(option) == float(value)
    return False


def number_value(text: str) -> float:
    return float(text.replace(",", ""))


def numeric(text: str) -> float | None:
    """A string value that is a number as a person writes one (`1,000`, `12.50`), as a float."""
    stripped = text.strip()
    if NUMBER.fullmatch(stripped) is None:
        return None
    return number_value(stripped)


_WORD = re.compile(r"[^\W_]+")  # letters and digits, accented ones too
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "could", "for", "from", "get", "i",
    "in", "is", "it", "me", "my", "of", "on", "or", "please", "set", "that", "the", "this",
    "to", "with", "would", "you", "your",
))  # fmt: skip


def stems(text: str) -> set[str]:
    """The words of `text` (camelCase and snake_case split, stop words left out), each cut to
    its first five letters: `booking` and `bookings` are one word."""
    return {w[:5] for w in _WORD.findall(spaced(text)) if len(w) > 1 and w not in _STOP_WORDS}


def spaced(text: str) -> str:
    """`text` in lower case with camelCase and snake_case split into words."""
    return _CAMEL.sub(r"\1 \2", text).replace("_", " ").casefold()
