"""The one output rule of the command line: no file a command writes is one of its inputs or
another of its outputs (by path, symbolic or hard link). Every command that writes calls
`refuse_overlaps` first, so that it is refused (exit 2) before anything is read, asked for or
written; its output options are named in `OUTPUT_OPTIONS`, every other file it is given is
an input."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NoReturn

import click

from judge.cli._common import EXIT_UNREADABLE

OUTPUT_OPTIONS: dict[str, frozenset[str]] = {
    "check": frozenset({"output", "junit"}),
    "grade": frozenset({"output", "junit", "batch_file"}),
    "run": frozenset({"output", "html", "batch_file"}),
    "compare": frozenset({"html"}),
    "regrade": frozenset({"output", "html"}),
    "transcripts": frozenset({"output"}),
    "calibrate": frozenset({"output", "results_out", "disagreements", "report"}),
    "align": frozenset({"output"}),
    "sample": frozenset({"output"}),
    "bfcl": frozenset({"output"}),
    "labels export": frozenset({"output"}),
    "labels import": frozenset({"output"}),
    "local train": frozenset({"output", "report_path"}),
    "review": frozenset({"record", "aligned_out"}),
    "import": frozenset({"output"}),
    "estimate": frozenset({"output", "html"}),
    # These write no file named by an option: `init` writes its starter files into DIR (never
    # over one that exists), `label` its labels into SAMPLE, `local setup` and `build` the
    # embedded judge's own files.
    "init": frozenset(),
    "label": frozenset(),
    "probe": frozenset(),
    "serve": frozenset(),
    "schema": frozenset(),
    "rubric list": frozenset(),
    "rubric show": frozenset(),
    "local status": frozenset(),
    "local setup": frozenset(),
    "local build": frozenset(),
}
"""Each command (`labels export` for `judge labels export`) and the parameters (their click
names) that name a file it writes. A command or an option missing here fails the tests."""

IN_PLACE: dict[tuple[str, str], str] = {
    ("regrade", "output"): "runs_file",
    ("labels import", "output"): "sample",
}
"""An output that may be the input it stands for by default: that input rewritten in place."""

CODE_OPTIONS = frozenset({"env", "agent", "overrides"})
"""The options that may name a Python file to load (`path/to/file.py:name`): inputs too."""


@dataclass(frozen=True)
class _Path:
    param: click.Parameter
    path: str

    @property
    def flag(self) -> str:
        """How the command line names it: `-o`, `--html`, or the argument's metavar."""
        if isinstance(self.param, click.Option):
            return min(self.param.opts, key=len)
        return self.param.human_readable_name

    def as_input(self) -> str:
        if isinstance(self.param, click.Option):
            return f"the {self.flag} input {self.path}"
        return f"the input {self.path}"


def command_key(ctx: click.Context) -> str:
    """The command's key in `OUTPUT_OPTIONS`: its names below the root (`labels export`)."""
    names: list[str] = []
    while ctx.parent is not None:
        names.append(ctx.command.name or "")
        ctx = ctx.parent
    return " ".join(reversed(names))


def refuse_overlaps(**derived: str | None) -> None:
    """Exit 2, naming both, when a file the current command writes is one of its inputs or
    another of its outputs. `derived`: an output's value where the command works it out
    (a default beside another output) rather than taking it as given."""
    ctx = click.get_current_context()
    key = command_key(ctx)
    outputs, inputs = _split(ctx, OUTPUT_OPTIONS[key], derived)
    for i, written in enumerate(outputs):
        for source in inputs:
            if IN_PLACE.get((key, str(written.param.name))) == source.param.name:
                continue
            if one_file(written.path, source.path):
                _refuse(ctx, f"{written.flag} {written.path} is {source.as_input()}")
        for earlier in outputs[:i]:
            if one_file(written.path, earlier.path):
                _refuse(ctx, f"{written.flag} {written.path} is also the {earlier.flag} output")


def one_file(path: str, other: str) -> bool:
    """Whether two paths name one regular file (the same path, a symbolic or a hard link);
    a pipe or a terminal (`/dev/stdout`) is never overwritten and so never one."""
    if any(os.path.exists(p) and not os.path.isfile(p) for p in (path, other)):
        return False
    try:
        return os.path.samefile(path, other)
    except OSError:  # one does not exist yet
        return os.path.realpath(path) == os.path.realpath(other)


def _split(
    ctx: click.Context, written: frozenset[str], derived: dict[str, str | None]
) -> tuple[list[_Path], list[_Path]]:
    """The command's outputs and its inputs, in the order its parameters are declared."""
    outputs: list[_Path] = []
    inputs: list[_Path] = []
    for param in ctx.command.params:
        name = str(param.name)
        value = derived[name] if name in derived else ctx.params.get(name)
        if name in written:
            outputs += (_Path(param, p) for p in _values(value))
        elif name in CODE_OPTIONS:
            inputs += (_Path(param, f) for p in _values(value) if (f := _code_file(p)))
        elif isinstance(param.type, click.Path) and param.type.file_okay:
            inputs += (_Path(param, p) for p in _values(value))
    return outputs, inputs


def _values(value: Any) -> Iterator[str]:
    """The paths a parameter's value holds (`-`, standard input or output, left out)."""
    for item in value if isinstance(value, tuple | list) else (value,):
        if isinstance(item, str | os.PathLike) and os.fspath(item) not in ("", "-"):
            yield str(os.fspath(item))


def _code_file(spec: str) -> str:
    """The Python file `path/to/file.py:name` (or `TOOL=...` of --override) loads; empty for
    a module name, or a file that is not there."""
    module = spec.partition("=")[2] if "=" in spec else spec
    head = module.rpartition(":")[0]
    return head if (head.endswith(".py") or "/" in head) and os.path.isfile(head) else ""


def _refuse(ctx: click.Context, why: str) -> NoReturn:
    names = ["judge", *command_key(ctx).split()]
    click.echo(f"{' '.join(names)}: {why}: write elsewhere", err=True)
    sys.exit(EXIT_UNREADABLE)
