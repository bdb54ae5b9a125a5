"""The common case shapes read straight into msgspec structs, for the check path.

`read_lean` decodes a JSON line of the usual form (OpenAI tool calls, expected calls, no
`match`) in one pass, about five times cheaper than decoding and building the pydantic `Case`,
and reads each distinct `tools` text once. It accepts only what `Case` accepts and reads it the
same way; for any other line, valid or not, it returns None and the caller reads the line as a
`Case`, whose errors name file, line, case and pointer.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType
from msgspec.structs import astuple

from judge.cases._form import ExpectedBehavior
from judge.cases._json import DecodeError, dumps, loads
from judge.cases._lean_form import LeanCall, LeanExpected, decoder
from judge.cases._tools import ToolFormError, read_tool

_NULL = b"null"


class LeanTool:
    """A tool as checking reads it: its name and its schema, and the schema's JSON text (what
    the validator cache is keyed by)."""

    __slots__ = ("name", "parameters", "schema_key", "index")

    def __init__(self, name: str, parameters: dict[str, Any], index: int = 0) -> None:
        self.name = name
        self.parameters = parameters
        self.schema_key = dumps(parameters)
        self.index = index  # its place in the case's `tools`


class LeanCase:
    """The parts of a case that checking reads, with the names `Case` gives them."""

    __slots__ = (
        "id",
        "tools",
        "tool_calls",
        "expected_calls",
        "expected_behavior",
        "reply_text",
        "messages",
    )
    match = None
    """A lean case has no match settings of its own (a line with them is read as `Case`)."""

    def __init__(
        self,
        id: str,
        tools: dict[str, LeanTool],
        tool_calls: list[LeanCall],
        expected_calls: list[LeanExpected] | None,
        expected_behavior: ExpectedBehavior | None = None,
        reply_text: str | None = None,
        messages: list[dict[str, Any]] | None = None,
    ) -> None:
        self.id = id
        self.tools = tools
        """The tools offered, by name (two of one name are refused, by `Case`)."""
        self.tool_calls = tool_calls
        self.expected_calls = expected_calls
        self.expected_behavior = expected_behavior
        self.reply_text = reply_text
        """The response's text: "" when it has none, None when there is no response."""
        self.messages = messages or []
        """The conversation before the response (where the calls' values come from)."""


def read_lean(raw: bytes) -> LeanCase | None:
    """The case of a JSON line in the common form, or None: read it as a `Case` instead."""
    try:
        line = decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    # Each member read once, all at once: looking up a struct's members one by one costs more.
    unset = UNSET  # (a global is looked up at each use)
    members = astuple(line)  # (by place: `_Line`'s order)
    response, expected_calls, labels, match = members[3], members[4], members[6], members[7]
    if match is not unset and bytes(match) != _NULL:
        return None
    tools = _tool_sets.read(members[2])
    if tools is None:
        return None
    if labels and not _labels_read(labels):  # `Case` reads (or reports) the rest
        return None
    calls: list[LeanCall] = []
    text = None
    if response is not None:
        said = astuple(response)  # (by place: `_Message`'s order)
        role, content, tool_calls, refusal = said[0], said[1], said[2], said[3]
        choices, output = said[-2], said[-1]
        text = content if isinstance(content, str) else ""
        if content is None and isinstance(refusal, str):
            text = refusal  # as `Case` reads it
        if choices is not unset or output is not unset:
            return None
        if role is unset and content is unset and tool_calls is unset:
            return None  # not a message: `Case` reads it as a call, or says why not
        if isinstance(tool_calls, list):
            calls = tool_calls
    for expected in expected_calls or ():
        if expected.function is not unset:
            return None
        for value in expected.arguments.values():
            kind = type(value)
            if (kind is dict or kind is list) and not _plain_value(value):
                return None  # `Case` reads it, or says what is wrong with it
    return LeanCase(members[0], tools, calls, expected_calls, members[5], text, members[1])


class _ToolSets:
    """The `tools` texts read, each once: cases of a file mostly offer the same tools. Kept by
    length and end (hashing a long text whole costs more than the rest of finding it; a text
    is then compared whole), and the line before's as it was given (no copy to compare)."""

    __slots__ = ("kept", "last_given", "last")
    KEPT = 1024
    END = 128

    def __init__(self) -> None:
        self.kept: dict[tuple[int, bytes], tuple[bytes, dict[str, LeanTool] | None]] = {}
        self.last_given: Raw | None = None
        self.last: dict[str, LeanTool] | None = None

    def read(self, given: Raw | UnsetType) -> dict[str, LeanTool] | None:
        """The tools of a case by name, or None when `Case` would not read them so."""
        if given is UNSET:
            return {}
        if given == self.last_given:  # the common run: the line before offered the same tools
            return self.last
        text = bytes(given)
        key = (len(text), text[-self.END :])
        kept = self.kept.get(key)
        if kept is not None and kept[0] == text:
            found = kept[1]
        else:
            if len(self.kept) >= self.KEPT:
                self.kept.clear()
            found = _tools_in(text)
            self.kept[key] = (text, found)
        self.last_given, self.last = given, found
        return found


_tool_sets = _ToolSets()


def _tools_in(text: bytes) -> dict[str, LeanTool] | None:
    """`Case`'s reading of `tools` (`Tool.from_spec` for each), or None where it would fail."""
    try:
        specs = loads(text)
    except DecodeError:
        return None
    if specs is None:
        return {}
    if not isinstance(specs, list):
        return None
    tools = {}
    for index, spec in enumerate(specs):
        try:
            name, _, parameters = read_tool(spec)
        except ToolFormError:
            return None
        if name in tools:  # two tools of one name: `Case` says which
            return None
        tools[name] = LeanTool(name, parameters, index)
    return tools


def _labels_read(labels: dict[str, Any]) -> bool:
    """Each label is one checked here (a line with any other is read as a `Case`), and None,
    "correct" or "incorrect"."""
    for key, label in labels.items():  # (compared, not hashed: the strings are new)
        if not (key == "selection" or key == "arguments" or key == "answer"):
            return False
        if not (label is None or (type(label) is str and label in ("correct", "incorrect"))):
            return False
    return True


def _plain_value(value: Any) -> bool:
    """Whether an expected argument value is one this reading compares as `Case` does: a
    literal with no key beginning with `$`, or an `$any` / `$optional` matcher of such
    literals. Any other (a misspelt matcher, one nested in a literal, any other matcher of
    `_matcher_form`) is `Case`'s to read, or to refuse (`matcher_fault`)."""
    if type(value) is dict and ("$any" in value or "$optional" in value):
        if not _good_matcher(value):
            return False
        options = value.get("$any")
        return options is None or no_dollar_key(options)
    return no_dollar_key(value)


def no_dollar_key(value: Any) -> bool:
    """Whether no object in `value`, however deep, has a key beginning with `$`."""
    stack: list[Any] = [value]
    while stack:  # (without recursion: values may nest deeply)
        item = stack.pop()
        if type(item) is dict:
            mapping: dict[str, Any] = item
            for key, child in mapping.items():
                if key.startswith("$"):
                    return False
                if type(child) is dict or type(child) is list:
                    stack.append(child)
        elif type(item) is list:
            items: list[Any] = item
            for child in items:
                if type(child) is dict or type(child) is list:
                    stack.append(child)
    return True


def _good_matcher(value: dict[str, Any]) -> bool:
    # The matchers compared here: compared, not hashed (the strings are new).
    for key in value:
        if not (key == "$any" or key == "$optional"):
            return False
    return ("$any" not in value or isinstance(value["$any"], list)) and (
        "$optional" not in value or isinstance(value["$optional"], bool)
    )
