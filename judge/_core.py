"""judge's comparison core, and which copy of it runs.

The build compiles these modules with mypyc where it can (`hatch_build.py`: a C compiler and
mypy at build time), for `pip install` and `pip install -e` alike, and records a hash of each
source beside them (`_core.json`). The compiled copy runs only while it was built from the
sources beside it: once one of them is edited (an editable install, a `git pull`), every one
is read from its source again, all of them at once, since compiled modules call each other
directly. `JUDGE_CORE=source` reads the sources whatever the build did.

Standard library only: the build hook loads this file by path, before anything is installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

MODULES = (
    "judge.cases._json",
    "judge.checks._kinds",
    "judge.checks._values",
    "judge.checks._arguments",
    "judge.checks._structure",
    "judge.checks._plain",
    "judge.checks._summary",
)
"""What the build compiles: the hot path of `judge check` (no msgspec or pydantic classes,
which mypyc cannot compile, and nothing another module subclasses or patches)."""
GROUP = "judge_core"
"""mypyc's shared library for them: `judge_core__mypyc` beside the `judge` package."""
MANIFEST = "_core.json"
PACKAGE = Path(__file__).resolve().parent

State = Literal["compiled", "source", "stale", "forced"]


def source_of(module: str, package: Path = PACKAGE) -> Path:
    """The source file of one of `MODULES` under the `judge` package at `package`."""
    return package.joinpath(*module.split(".")[1:]).with_suffix(".py")


def source_hashes(package: Path = PACKAGE) -> dict[str, str]:
    """SHA-256 of each module's source, as the build records them."""
    return {m: hashlib.sha256(source_of(m, package).read_bytes()).hexdigest() for m in MODULES}


def state(package: Path = PACKAGE) -> State:
    """`compiled`: a build compiled the core from these very sources, for this interpreter;
    `stale`: from sources that have changed since; `source`: nothing was compiled (or not for
    this interpreter); `forced`: JUDGE_CORE=source."""
    if os.environ.get("JUDGE_CORE") == "source":
        return "forced"
    try:
        built = json.loads((package / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "source"
    suffix = EXTENSION_SUFFIXES[0]  # this interpreter's, e.g. `.cpython-311-x86_64-linux-gnu.so`
    if not all(source_of(m, package).with_suffix(suffix).is_file() for m in MODULES):
        return "source"
    return "compiled" if built == source_hashes(package) else "stale"


def describe(package: Path = PACKAGE) -> str:
    """The core's state in words, for `judge --version` and the benchmark."""
    return {
        "compiled": "compiled with mypyc",
        "source": "Python source, not compiled at install",
        "stale": "Python source: the compiled copy is older than the sources, reinstall",
        "forced": "Python source, as JUDGE_CORE=source asks",
    }[state(package)]


class _FromSource:
    """Finds the core's modules as their `.py` sources, ahead of the compiled copies (a meta
    path finder; `importlib.abc` itself costs 15 ms to import)."""

    def __init__(self, package: Path) -> None:
        self.package = package

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in MODULES:
            return None
        from importlib.util import spec_from_file_location

        return spec_from_file_location(fullname, source_of(fullname, self.package))


def choose(package: Path = PACKAGE) -> State:
    """Make the core's modules load from source unless the compiled copy is current; called by
    `judge/__init__` before any of them is imported."""
    found = state(package)
    if found != "compiled" and not any(isinstance(f, _FromSource) for f in sys.meta_path):
        sys.meta_path.insert(0, _FromSource(package))
    return found
