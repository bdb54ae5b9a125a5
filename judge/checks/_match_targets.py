"""What match settings name that a case's tools do not have: an `ignore_tools` name or an
`overrides` tool that is none of the case's tools, an override path whose first part is no
argument of its tool's schema, a path written with dots (`time.start`) where a JSON pointer
(`/time/start`) was meant. Each is an error naming it, never a vacuous pass."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from judge.cases._case import Case, Tool
from judge.cases._fields import nearest
from judge.cases._json import pointer
from judge.cases._match import Match

_LISTED = 8  # names a message lists, at most


def unmatched_targets(case: Case, settings: Match) -> list[tuple[str, str]]:
    """The JSON pointer and message of each target of `settings` that names nothing in
    `case`'s tools. The pointer is into the case where its own `match` holds the setting;
    "" where the run's does (`--override`, `--ignore-tool`: the message says so). A tool the
    run names that this case does not offer is no fault of the case (files mix cases with
    other tools) unless it is close to one it offers (`lookpu`: a misspelt `lookup`)."""
    if not settings.ignore_tools and not settings.overrides:
        return []
    tools = {tool.name: tool for tool in case.tools}
    own = case.match.model_fields_set if case.match is not None else set()
    found: list[tuple[str, str]] = []
    in_case = "ignore_tools" in own
    for i, name in enumerate(settings.ignore_tools):
        if name not in tools and (in_case or nearest(name, tools) is not None):
            where = f"/match/ignore_tools/{i}" if in_case else ""
            what = "ignore_tools" if in_case else "--ignore-tool"
            found.append((where, f"{what}: {_no_tool(name, tools)}"))
    in_case = "overrides" in own
    for name, override in settings.overrides.items():
        where = "/match/overrides" + pointer([name]) if in_case else ""
        what = "overrides" if in_case else "--override"
        tool = tools.get(name)
        if tool is None:
            if in_case or nearest(name, tools) is not None:
                found.append((where, f"{what}: {_no_tool(name, tools)}"))
            continue
        for j, path in enumerate(override if isinstance(override, list) else ()):
            wrong = _path_fault(path, tool)
            if wrong is not None:
                found.append((f"{where}/{j}" if where else "", f"{what} of {name!r}: {wrong}"))
    return found


def _no_tool(name: str, tools: Mapping[str, Tool]) -> str:
    """`'lookpu' is none of the case's tools (did you mean 'lookup'?)`"""
    message = f"{name!r} is none of the case's tools"
    close = nearest(name, tools)
    if close is not None:
        return message + f" (did you mean {close!r}?)"
    return message + (f" (they are {_listed(tools)})" if tools else " (the case offers none)")


def _path_fault(path: str, tool: Tool) -> str | None:
    """What is wrong with an override path (an argument name or a JSON pointer) for `tool`:
    written with dots where a pointer was meant, or naming no argument its schema lists."""
    properties = tool.parameters.get("properties")
    listed = properties if isinstance(properties, dict) else None
    if path.startswith("/"):
        first = path[1:].split("/")[0].replace("~1", "/").replace("~0", "~")
    elif "." in path and (listed is None or path not in listed):
        return f"{path!r} is no JSON pointer: did you mean {pointer(path.split('.'))!r}?"
    else:
        first = path
    if listed is None or first in listed:
        return None
    close = nearest(first, listed)
    if close is not None:
        hint = f"did you mean {close!r}?"
    else:
        hint = f"its arguments are {_listed(listed)}" if listed else "it takes none"
    what = repr(path) if path == first else f"{path!r}: {first!r}"
    return f"{what} is no argument of {tool.name!r} ({hint})"


def _listed(names: Iterable[str]) -> str:
    """`'a', 'b', 'c'`: the first few names, sorted, and how many more."""
    ordered = sorted(names)
    shown = ", ".join(repr(n) for n in ordered[:_LISTED])
    more = len(ordered) - _LISTED
    return shown + (f" and {more} more" if more > 0 else "")
