"""Tool definitions in every provider's form, read to one `(name, description, schema)`.

The forms: OpenAI chat (`{"type": "function", "function": {"name", "parameters"}}`), Responses
(`{"type": "function", "name", "parameters"}`), Anthropic (`{"name", "input_schema"}`) and MCP
(`{"name", "inputSchema"}`, as `tools/list` returns it; `tools` may be that whole result). An
entry whose keys fit no form, or that holds its schema under another form's key, is refused
with the nearest known key: a tool never silently loses its schema. A function given without
a schema takes no arguments (as OpenAI defines it). A name is text of at most
`MAX_NAME_LENGTH` characters with no control character, and no two tools of a list share one.
Model-free, so the check path reads tools with it too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol, TypeVar

from judge.cases._fields import nearest
from judge.cases._json import json_kind, pointer

NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
"""The schema of a function defined without one: it takes no arguments."""

TOOL_FORMS: dict[str, tuple[str, frozenset[str]]] = {
    "OpenAI chat": ("parameters", frozenset(("name", "description", "parameters", "strict"))),
    "Responses": (
        "parameters",
        frozenset(("type", "name", "description", "parameters", "strict")),
    ),
    "Anthropic": (
        "input_schema",
        frozenset(
            ("type", "name", "description", "input_schema", "cache_control", "strict")
            + ("input_examples", "defer_loading")
        ),
    ),
    "MCP": (
        "inputSchema",
        frozenset(
            ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
            + ("_meta", "icons", "execution")
        ),
    ),
}
"""Each form: the key its schema is under, and every key an entry of it may have."""
MAX_NAME_LENGTH = 256
"""The longest tool name read: twice the most any provider accepts (OpenAI 64 characters,
Anthropic and MCP 128); a longer one is no name but pasted text."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")  # C0, DEL and C1: they act on a terminal
_SCHEMA_KEYS = frozenset(key for key, _ in TOOL_FORMS.values())
LIST_RESULT_KEYS = frozenset(("tools", "nextCursor", "_meta"))
"""The members of an MCP `tools/list` result."""


class ToolFormError(ValueError):
    """A tool entry that fits no known form; `pointer` is relative to `tools`."""

    def __init__(self, pointer: str, message: str) -> None:
        self.pointer = pointer
        super().__init__(message)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


class ToolSpec(NamedTuple):
    name: str
    description: str | None
    parameters: dict[str, Any]


def tool_entries(tools: Any) -> list[Any]:
    """The entries of a case's `tools`: a list, or a whole MCP `tools/list` result."""
    if tools is None:
        return []
    if isinstance(tools, dict) and "tools" in tools:
        extra = sorted(tools.keys() - LIST_RESULT_KEYS)
        if extra:
            raise ToolFormError(
                pointer(extra[:1]), f"a tools/list result has no member {extra[0]!r}"
            )
        tools = tools["tools"]
        if not isinstance(tools, list):
            raise ToolFormError("/tools", f"tools must be a list, got {json_kind(tools)}")
        return tools
    if not isinstance(tools, list | tuple):
        raise ToolFormError("", "tools must be a list (or an MCP tools/list result)")
    return list(tools)


def read_tool_list(tools: Any, read: Callable[[Any], T]) -> list[T]:
    """Each tool of a case's `tools` (a list, or a whole MCP `tools/list` result), read with
    `read` (`read_tool`, or `Tool.from_spec`); `ToolFormError` with the pointer, relative to
    `tools`, of the first one that cannot be read."""
    entries = tool_entries(tools)
    prefix = "/tools" if isinstance(tools, dict) else ""  # into a tools/list result
    found = []
    for i, spec in enumerate(entries):
        try:
            found.append(read(spec))
        except ToolFormError as exc:
            raise ToolFormError(f"{prefix}/{i}{exc.pointer}", str(exc)) from None
    refuse_duplicates([tool.name for tool in found], prefix)
    return found


def refuse_duplicates(names: list[str], prefix: str = "") -> None:
    """`ToolFormError` at the second of two tools of one name: a call names its tool, so
    either definition could be the one meant."""
    if len(set(names)) == len(names):
        return
    first: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in first:
            raise ToolFormError(
                f"{prefix}/{i}",
                f"tools{prefix}/{first[name]} and tools{prefix}/{i} are both named {name!r}",
            )
        first[name] = i


def name_fault(name: str) -> str | None:
    """What is wrong with a tool's name, if anything: a control character (C0, DEL, C1),
    which would act on the terminal that shows it, or more than `MAX_NAME_LENGTH`
    characters."""
    if len(name) > MAX_NAME_LENGTH:
        return (
            f"tool name {name[:40]!r}... has {len(name)} characters; a tool name has at most "
            f"{MAX_NAME_LENGTH}"
        )
    control = None if name.isprintable() else _CONTROL.search(name)  # (the first test is cheap)
    if control is not None:
        return f"tool name {name!r} holds the control character U+{ord(control.group()):04X}"
    return None


def _named(name: Any, at: str, what: str) -> str:
    """`name` when it is a good tool name; else `ToolFormError` at `at` (`what`: the
    message when it is no text)."""
    if not isinstance(name, str):
        raise ToolFormError(at, what)
    fault = name_fault(name)
    if fault is not None:
        raise ToolFormError(at, fault)
    return name


def read_tool(spec: Any) -> ToolSpec:
    """One tool entry in any known form; `ToolFormError` (pointer relative to the entry)
    saying what is wrong and the nearest known key."""
    if not isinstance(spec, dict):
        raise ToolFormError("", f"a tool must be an object, got {json_kind(spec)}")
    if "function" in spec:  # OpenAI chat: the function is one level down
        extra = sorted(spec.keys() - {"type", "function"})
        if extra:
            raise ToolFormError(
                pointer(extra[:1]), f"unknown key {extra[0]!r} beside 'function' in a tool"
            )
        function = spec["function"]
        if not isinstance(function, dict):
            raise ToolFormError("/function", "a tool's function must be an object")
        return _read_form(function, "OpenAI chat", "/function")
    kind = spec.get("type")
    if isinstance(kind, str) and kind != "function" and not spec.keys() & _SCHEMA_KEYS:
        return _builtin(spec, kind)
    return _read_form(spec, _form_of(spec), "")


def _builtin(spec: dict[str, Any], kind: str) -> ToolSpec:
    """A provider's own tool (Anthropic's `bash_20250124`, OpenAI's `custom`): no JSON Schema
    is given for it, so its calls are held only to being a JSON object."""
    name = _named(spec.get("name"), "/name", f"a tool of type {kind!r} needs a name (text)")
    description = spec.get("description")
    if description is not None and not isinstance(description, str):
        raise ToolFormError("/description", f"tool {name!r}: description must be text")
    return ToolSpec(name, description, {"type": "object"})


def _form_of(spec: dict[str, Any]) -> str:
    """The form an entry is in: the one whose schema key it has; else the one it fits best
    (fewest keys it does not know; on a tie, the one for which a schema key is out of place,
    so the message names it; then the order above)."""
    for form, (key, _) in TOOL_FORMS.items():
        if form != "OpenAI chat" and key in spec and not spec.keys() - TOOL_FORMS[form][1]:
            return form
    best, rank = "Responses", (len(spec), True)
    for form, (_, keys) in TOOL_FORMS.items():
        if form == "OpenAI chat":
            continue
        unknown = spec.keys() - keys
        candidate = (len(unknown), not unknown & _SCHEMA_KEYS)
        if candidate < rank:
            best, rank = form, candidate
    return best


def _read_form(fn: dict[str, Any], form: str, at: str) -> ToolSpec:
    schema_key, keys = TOOL_FORMS[form]
    name = _named(fn.get("name"), at + "/name", "a tool needs a name (text)")
    unknown = sorted(fn.keys() - keys, key=lambda k: (k not in _SCHEMA_KEYS, str(k)))
    for key in unknown:
        key = str(key)
        close = schema_key if key in _SCHEMA_KEYS else nearest(key, keys | _SCHEMA_KEYS)
        hint = f" (did you mean {close!r}?)" if close else ""
        where = f"tool {name!r} ({form} form)"
        raise ToolFormError(at + pointer([key]), f"{where}: unknown key {key!r}{hint}")
    description = fn.get("description")
    if description is not None and not isinstance(description, str):
        raise ToolFormError(at + "/description", f"tool {name!r}: description must be text")
    params = fn.get(schema_key)
    if params is None:
        if form in ("Anthropic", "MCP"):
            raise ToolFormError(at, f"tool {name!r} ({form} form) has no {schema_key!r}")
        params = dict(NO_ARGUMENTS)
    elif not isinstance(params, dict):
        raise ToolFormError(
            at + pointer([schema_key]),
            f"tool {name!r}: {schema_key} must be an object (a JSON Schema)",
        )
    return ToolSpec(name, description, params)
