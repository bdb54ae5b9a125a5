"""Tools given once for a whole set of cases (`--tools FILE`, `check(cases, tools=...)`).

Every case that offers no tools of its own (none given, null or an empty list) is offered these;
a case's own `tools` win. They are given as a case's `tools` is (a list in OpenAI chat,
Responses, Anthropic or MCP form, or a whole MCP `tools/list` result) and read by the same code
(`read_tool_list`); what cannot be read is an `InputError` naming the file and the JSON pointer
of the tool at fault. Model-free until a case read whole is offered them, so that `judge check
--tools` keeps its lean start.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from judge._errors import InputError
from judge.cases._json import DecodeError, json_kind, loads
from judge.cases._lean import LeanTool
from judge.cases._tools import ToolFormError, ToolSpec, read_tool, read_tool_list

if TYPE_CHECKING:
    from judge._errors import CaseError
    from judge.cases._case import Case, Tool

Item = TypeVar("Item", "Case", "CaseError", "Case | CaseError")


@dataclass(frozen=True)
class SharedTools:
    """The tools offered to every case that has none of its own."""

    specs: tuple[ToolSpec, ...]
    source: str = "tools"
    """Where they were read from (a file's path), for messages."""

    @classmethod
    def of(cls, given: Any, source: str = "tools") -> SharedTools:
        """Tools in any form a case's `tools` takes; `InputError` naming `source` and the
        pointer of the first tool that cannot be read."""
        if isinstance(given, SharedTools):
            return given
        if not isinstance(given, list | tuple | dict):
            raise InputError(
                f"{source}: expected a JSON array of tools (or an MCP tools/list result), "
                f"got {json_kind(given)}"
            )
        try:
            specs = read_tool_list(given, _spec)
        except ToolFormError as exc:
            raise InputError(f"{source} at {exc.pointer or '/'}: {exc}") from None
        if not specs:
            raise InputError(f"{source}: holds no tools")
        return cls(tuple(specs), source)

    @classmethod
    def read(cls, path: str) -> SharedTools:
        """The tools of a JSON file; `InputError` when it cannot be read or holds a tool that
        cannot be."""
        try:
            text = Path(path).read_bytes()
        except OSError as exc:
            raise InputError(f"{path}: cannot read tools: {exc.strerror or exc}") from None
        try:
            given = loads(text)
        except DecodeError as exc:
            raise InputError(f"{path}: not valid JSON: {exc}") from None
        return cls.of(given, path)

    @cached_property
    def tools(self) -> tuple[Tool, ...]:
        """The tools as a `Case` holds them (the models load here)."""
        from judge.cases._case import Tool

        return tuple(Tool(name=n, description=d, parameters=p) for n, d, p in self.specs)

    def offered_to(self, item: Item) -> Item:
        """`item` with these tools when it is a case offering none; else `item` as it is."""
        from judge.cases._case import Case

        if isinstance(item, Case) and not item.tools:
            return item.model_copy(update={"tools": self.tools})
        return item

    def offer(self, items: Iterable[Item]) -> Iterator[Item]:
        """Each of `items`, offered these tools where it is a case that has none."""
        return (self.offered_to(item) for item in items)

    def lean(self) -> dict[str, LeanTool]:
        """The tools by name, as `read_lean` gives a case's."""
        return {
            spec.name: LeanTool(spec.name, spec.parameters, i) for i, spec in enumerate(self.specs)
        }


def _spec(given: Any) -> ToolSpec:
    """One entry, read as a case's is (a `Tool` given in Python, through its OpenAI form)."""
    to_openai = getattr(given, "to_openai", None)
    return read_tool(to_openai() if callable(to_openai) else given)
