"""How strictly a candidate's calls must follow the reference: the match modes.

A trajectory mode says which calls must correspond (`strict`: the same calls in the same order,
a message's parallel calls in any order among themselves; `unordered`: the same multiset;
`subset`: every candidate call is in the reference; `superset`: every reference call is in the
candidate; `in_order`: every reference call is in the candidate, in order, other calls allowed
between). Under every mode, `expected_calls: []` allows no call at all. An argument mode says
how a call's arguments must correspond to its reference call (`exact`, `ignore`, `subset`,
`superset`), with per-tool overrides: another mode, a list of argument paths (only those are
compared), or a callable `compare(candidate_arguments, reference_arguments) -> bool`.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from judge.cases._form import ARGS_MODES, USER_MODULE, ArgsCompare, ArgsMode, MatchMode

Override = ArgsMode | list[str] | SkipJsonSchema[ArgsCompare]


class ValueDefaults(BaseModel):
    """How a case's (or a run's) literal expected values compare; a matcher's own options win.
    `strings`: `exact`; `casefold` (letter case aside); `bfcl` (BFCL's normalisation: spaces
    and `,./-_*^` dropped, case aside). `numbers`: `json` (`1 == 1.0`); `strict` (an expected
    integer takes only an integer, an expected float any number: BFCL's rule). `dates`: how
    a `$date` matcher reads a numeric date (`01/05/2024`), day first (`dmy`) or month first
    (`mdy`); unset, from the case's `meta.locale` (`en-US`: month first; another region: day
    first), else read only where both orders agree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    strings: Literal["exact", "casefold", "bfcl"] = "exact"
    numbers: Literal["json", "strict"] = "json"
    dates: Literal["dmy", "mdy"] | None = None


class Match(BaseModel):
    """A case's (or a run's) match settings: `{"mode": "unordered", "args": "exact",
    "overrides": {"issue_refund": ["/order_id"]}, "ignore_tools": ["lookup_order"]}`.

    A plain string is read as the mode: `"match": "superset"`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    mode: MatchMode | None = None
    """The trajectory mode; null grades only the final `response` (calls matched unordered)."""
    args: ArgsMode | None = None
    """How each call's arguments must match its reference call; unset: `exact` with a mode,
    else `superset` (every expected argument, extras left to the schema)."""
    overrides: dict[str, Override] = Field(default_factory=dict)
    """Per tool: an argument mode, the argument paths to compare (names or JSON pointers), or a
    callable (Python only)."""
    ignore_tools: tuple[str, ...] = ()
    """Calls to these tools (read-only ones, say) are neither required nor counted as extra."""
    values: ValueDefaults | None = None
    """How literal expected values compare (matchers say it for themselves): `{"strings":
    "casefold", "numbers": "strict"}`; unset, JSON equality."""

    @model_validator(mode="before")
    @classmethod
    def _read_string(cls, data: Any) -> Any:
        return {"mode": data} if isinstance(data, str) else data

    def merged_over(self, base: Match | None) -> Match:
        """These settings where they were given, `base`'s elsewhere (a case over its run)."""
        if base is None:
            return self
        given = {name: getattr(self, name) for name in self.model_fields_set}
        if self.values is not None and base.values is not None:  # (key by key, as `match`)
            told = {name: getattr(self.values, name) for name in self.values.model_fields_set}
            given["values"] = base.values.model_copy(update=told)
        return base.model_copy(update=given)

    @property
    def arguments(self) -> ArgsMode:
        """The argument mode in force."""
        if self.args is not None:
            return self.args
        return "exact" if self.mode is not None else "superset"

    def args_for(self, tool: str) -> ArgsMode | list[str] | ArgsCompare:
        return self.overrides.get(tool, self.arguments)


_MONTH_FIRST = frozenset(("US", "PH", "FM", "MH", "PW", "BZ"))
"""Regions whose numeric dates put the month first."""


def date_order(locale: Any) -> Literal["dmy", "mdy"] | None:
    """The order of a numeric date in a locale (`en-US`: `mdy`; `en-GB`, `fr_FR`: `dmy`);
    None without a region (`en`) or for what is no locale."""
    if not isinstance(locale, str):
        return None
    parts = locale.replace("_", "-").split("-")
    region = next((p.upper() for p in parts[1:] if len(p) == 2 and p.isalpha()), None)
    if region is None:
        return None
    return "mdy" if region in _MONTH_FIRST else "dmy"


def with_locale(settings: Match | None, meta: dict[str, Any]) -> Match | None:
    """`settings` with the order of numeric dates the case's `meta.locale` says, where no
    order was given."""
    order = date_order(meta.get("locale"))
    if order is None or (settings is not None and settings.values and settings.values.dates):
        return settings
    base = settings if settings is not None else Match()
    values = base.values or ValueDefaults()
    return base.model_copy(update={"values": values.model_copy(update={"dates": order})})


def parse_override(text: str) -> tuple[str, ArgsMode | list[str] | ArgsCompare]:
    """Read a command-line override `TOOL=MODE`, `TOOL=/a,/b` or `TOOL=module:function`."""
    tool, sep, spec = text.partition("=")
    if not sep or not tool or not spec:
        raise ValueError(f"{text!r}: expected TOOL=MODE, TOOL=PATH,PATH or TOOL=module:function")
    if spec in ARGS_MODES:
        return tool, spec  # type: ignore[return-value]
    if ":" in spec and not spec.startswith("/"):
        return tool, load_object(spec)
    return tool, [path.strip() for path in spec.split(",") if path.strip()]


def load_object(spec: str) -> Any:
    """Import `module:attribute` (`package.module:name`, or `path/to/file.py:name`); modules
    in the working directory are found, as with `python -m`. Any failure is a ValueError."""
    module_name, sep, attribute = spec.rpartition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{spec!r}: expected module:attribute")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            module = _load_file(module_name)
        else:
            module = _import_here(module_name)
    except ValueError:
        raise
    except Exception as exc:  # the user's module itself fails: say so, whatever it raised
        raise ValueError(f"{spec!r}: cannot import {module_name!r}: {exc}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"{spec!r}: module {module_name!r} has no {attribute!r}") from None


def _import_here(name: str) -> Any:
    added = "" not in sys.path
    if added:
        sys.path.insert(0, "")
    try:
        return importlib.import_module(name)
    finally:
        if added:
            sys.path.remove("")


def _load_file(path: str) -> Any:
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{path}: no such file")
    name = USER_MODULE + "_".join(file.resolve().with_suffix("").parts[-2:]).replace("-", "_")
    if name in sys.modules:  # loaded once per process, like an imported module
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
