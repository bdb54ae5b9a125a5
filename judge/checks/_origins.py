"""Where each argument value came from: the user's words, the system prompt, a tool's result,
the assistant's own earlier turns, the tool's schema, or nowhere.

Evidence, never a failure by itself. A value is looked for in the messages before the
response, the user's first (the user's word wins, then the system's, then a tool result's,
then the assistant's own, then the schema's), each message read once whatever the number of
values (a JSON result's leaves indexed, `judge.checks._places`): linear in the size of the
conversation. Matching is exact on text, then as a person would say "the same value": case,
spacing and Unicode forms of words, number formats (`1,000`, `1000` and `1000.0` are one
number; `1.000` is 1000 too, as German writes it), a value inside JSON text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from judge.cases._json import dumps, maybe_json, pointer
from judge.checks._budget import NEVER, within
from judge.checks._numbers import numeric
from judge.checks._places import Text, normalise

Origin = Literal["user", "system", "tool_result", "assistant", "schema", "nowhere"]

_SCHEMA_KEYS = ("default", "const", "enum", "examples")


def leaves(value: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """The string (not blank) and number (not boolean) leaves of parsed arguments, with their
    paths, in order: what a conversation can have said."""
    found: list[tuple[tuple[Any, ...], Any]] = []
    if isinstance(value, dict):  # (the common case, an object of arguments, read here)
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                _leaves(item, (key,), found)
            elif _said(item):
                found.append(((key,), item))
    else:
        _leaves(value, (), found)
    return found


def _leaves(value: Any, path: tuple[Any, ...], found: list[tuple[tuple[Any, ...], Any]]) -> None:
    if isinstance(value, dict):
        pairs: list[tuple[Any, Any]] = list(value.items())
    elif isinstance(value, list):
        pairs = list(enumerate(value))
    else:
        if _said(value):
            found.append((path, value))
        return
    for key, item in pairs:
        if isinstance(item, (dict, list)):  # (a tuple: mypyc tests it inline)
            _leaves(item, path + (key,), found)
        elif _said(item):
            found.append((path + (key,), item))


def _said(value: Any) -> bool:
    """A leaf a conversation can have said: a string not blank, a number not a boolean."""
    if isinstance(value, str):
        return bool(value) and not value.isspace()
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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


class Conversation:
    """The places of a case's messages, by origin, latest first within each."""

    __slots__ = ("user", "system", "tool", "assistant", "asked", "earlier", "deadline")

    def __init__(
        self, messages: Sequence[Mapping[str, Any]], deadline: float = float("inf")
    ) -> None:
        self.deadline = deadline
        """When reading it is out of time (`judge.checks._budget`)."""
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
            if not isinstance(message, dict):
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
                self.tool.append(Text(raw, f"{source}/content", data, index, answers, True))
            elif role == "assistant":
                self._assistant(message, source, index)
        self.earlier.reverse()  # read latest first: first first now, so taint flows forward

    def size(self) -> int:
        """The characters of the texts it holds (what finding values in it reads)."""
        size = 0
        for texts in (self.user, self.system, self.tool):
            for text in texts:
                size += len(text.raw)
        for text in self.asked.values():
            size += len(text.raw)
        return size

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
                data = arguments if isinstance(arguments, (dict, list)) else None
                self.assistant.append(Text(raw, where, data, index, structured=True))
                if isinstance(call, dict) and call.get("id") is not None:
                    self.asked[str(call["id"])] = self.assistant[-1]
                    parsed = data if data is not None else maybe_json(raw)
                    graded = (str(function.get("name")), parsed, index)  # type: ignore[union-attr]
                    self.earlier.append((str(call["id"]), graded))


def sought(value: str | int | float) -> tuple[str | None, float | None]:
    """The forms a value is looked for in: its normalised text (a string's), and the number
    it is (a number's, or a string's that writes one)."""
    if isinstance(value, str):
        return normalise(value), numeric(value)
    return None, float(value)


def find(
    texts: list[Text],
    value: str | int | float,
    normal: str | None,
    number: float | None,
    before: int,
    as_is: bool = True,
) -> Text | None:
    """The latest of `texts` before message `before` that says the value (`Text.holds`)."""
    for text in texts:
        if text.at < before and text.holds(value, normal, number, as_is):
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
    timed = conversation.deadline < NEVER  # (a small case's is not: no call made)
    for index, (name, arguments, before) in enumerate(calls):
        if arguments is None:
            continue
        schema = schema_of(name)
        for path, value in leaves(arguments):
            if timed:
                within(conversation.deadline)
            origin, source = origin_of(conversation, value, schema, path, before)
            found.append(
                {"call": index, "path": _pointer(path), "origin": origin, "source": source}
            )
    return found


def _pointer(path: tuple[Any, ...]) -> str:
    """`pointer(path)`; a top-level key's is kept (the calls of a file name a few keys)."""
    if len(path) != 1 or type(path[0]) is not str:
        return pointer(path)
    key: str = path[0]
    found = _TOP_POINTERS.get(key)
    if found is None:
        if len(_TOP_POINTERS) >= _TOP_POINTERS_KEPT:
            _TOP_POINTERS.clear()
        found = _TOP_POINTERS[key] = pointer(path)
    return found


_TOP_POINTERS: dict[str, str] = {}
_TOP_POINTERS_KEPT = 4096


def origin_of(
    conversation: Conversation,
    value: str | int | float,
    schema: tuple[int, Any] | None,
    path: tuple[Any, ...],
    before: int,
) -> tuple[Origin, str | None]:
    """Where one value was found: the first origin that says it, and the place."""
    if isinstance(value, str):  # the common case first: the user's very words
        for said in conversation.user:
            if said.at < before and value in said.raw:
                return "user", said.source
    normal, number = sought(value)
    found = find(conversation.user, value, normal, number, before, as_is=False)  # (seen above)
    if found is not None:
        return "user", found.source
    found = find(conversation.system, value, normal, number, before)
    if found is not None:
        return "system", found.source
    found = find(conversation.tool, value, normal, number, before)
    if found is not None:
        return "tool_result", found.where(value, normal, number)
    found = find(conversation.assistant, value, normal, number, before)
    if found is not None:
        return "assistant", found.where(value, normal, number)
    in_schema = schema_source(schema, path, value, normal) if schema is not None else None
    return ("schema", in_schema) if in_schema is not None else ("nowhere", None)


def schema_source(
    schema: tuple[int, Any], path: tuple[Any, ...], value: str | int | float, normal: str | None
) -> str | None:
    """The pointer of the default, const, enum option or example of the tool's schema at the
    value's path that equals it, or None."""
    index, node = schema
    for part in path:
        if not isinstance(node, dict):
            return None
        if isinstance(part, str):
            properties = node.get("properties")
            node = properties.get(part) if isinstance(properties, dict) else None
        else:
            node = node.get("items")
    if not isinstance(node, dict) or not (
        "enum" in node or "default" in node or "const" in node or "examples" in node
    ):
        return None  # (the common case, told at once)
    for key in _SCHEMA_KEYS:
        given = node.get(key)
        if given is None:
            continue
        listed = key in ("enum", "examples") and isinstance(given, list)
        for position, option in enumerate(given if listed else [given]):
            if option is not None and _same(option, value, normal):
                steps = [("properties", p) if isinstance(p, str) else ("items",) for p in path]
                where = pointer(part for step in steps for part in step)
                return f"/tools/{index}/parameters{where}/{key}" + (
                    f"/{position}" if listed else ""
                )
    return None


def _same(option: Any, value: str | int | float, normal: str | None) -> bool:
    if isinstance(option, bool) or isinstance(value, bool):
        return False
    if isinstance(option, str) and normal is not None:
        return option == value or normalise(option) == normal
    if isinstance(option, (int, float)) and not isinstance(value, str):
        return float(option) == float(value)
    return False


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
