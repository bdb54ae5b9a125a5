"""Case ids made unique as the cases are made: two LLM calls can carry one id (the same span
exported twice, two Inspect logs of one task, a proxy that logs one completion id twice), and
two cases with one id would be graded, cached and compared as one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SHOWN = 5
"""How many renamed ids are kept to be shown (all are counted)."""


@dataclass(frozen=True)
class Renamed:
    """A case whose id was given to an earlier case."""

    original: str
    """The id it was made with, kept in its `meta.original_id`."""
    id: str
    """The id it has now: `<original>#<n>`."""
    source: str
    """Where its record is (file:line), as `meta.source` says."""


@dataclass
class UniqueIds:
    """The ids given so far. A case whose id was given before gets the first `<id>#<n>` (n from
    2) given to no case yet, keeps its own id in `meta.original_id` and is counted, everything
    else unchanged. Each id given is kept once, to know it."""

    renamed: int = 0
    """How many cases got a new id."""
    first: list[Renamed] = field(default_factory=list)
    """The first few of them (`SHOWN`)."""
    _given: set[str] = field(default_factory=set, init=False, repr=False)
    _next: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def claim(self, case: dict[str, Any]) -> dict[str, Any]:
        """`case`, or a copy with an id no earlier case has."""
        original = str(case["id"])
        if original not in self._given:
            self._given.add(original)
            return case
        n = self._next.get(original, 2)
        while f"{original}#{n}" in self._given:  # an id of that form may be taken already
            n += 1
        self._next[original] = n + 1
        unique = f"{original}#{n}"
        self._given.add(unique)
        meta = {**(case.get("meta") or {}), "original_id": original}
        self.renamed += 1
        if len(self.first) < SHOWN:
            self.first.append(Renamed(original, unique, str(meta.get("source") or "")))
        return {**case, "id": unique, "meta": meta}

    def said(self) -> str | None:
        """What a command says of the ids it made unique (None: none)."""
        if not self.renamed:
            return None
        shown = ", ".join(
            f"{r.original!r} -> {r.id!r}" + (f" ({r.source})" if r.source else "")
            for r in self.first
        )
        more = ", ..." if self.renamed > len(self.first) else ""
        noun = "id" if self.renamed == 1 else "ids"
        return (
            f"{self.renamed} duplicate {noun} made unique (the original kept in "
            f"meta.original_id): {shown}{more}"
        )
