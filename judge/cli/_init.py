"""`judge init`: a starter folder that `judge check` grades at once.

It writes sample tools (tools.json), five cases that show what the checks decide (a right
call, a wrong value, a wrong tool, and two text replies left to the judge) without tools of
their own (every command is given `--tools tools.json`), a GitHub Actions workflow, a
hand-labelled calibration stub and a README (what they hold: `_starter`). With `--from-mcp`
the tools are an MCP server's `tools/list`, and the cases are outlines, one per tool, that
every command reports as unfinished until they are filled in: cases about tools one does not
know would show nothing true. Nothing that exists is written over without `--force`, not even
a file made while the MCP server was asked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from judge.cases._files import write_atomically
from judge.cli._common import refuser
from judge.cli._matching import mcp_env_option, seconds_option
from judge.cli._starter import SAMPLE_TOOLS, StarterFile, starter_files

_refuse = refuser("judge init")


def mcp_tools(
    command: str, timeout: float, start_timeout: float = 60.0, env: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The tools of the stdio MCP server `command` (`env` its `KEY=VALUE` settings), in
    OpenAI form (ValueError when it cannot be started, is refused or lists none)."""
    from judge.checks._mcp import McpServer, McpStartError

    server = McpServer.of(
        command, None, None, timeout, option="--from-mcp", start_timeout=start_timeout, env=env
    )
    try:
        listed = server.listed_tools()
    except McpStartError as exc:
        raise ValueError(str(exc)) from None
    if not listed:
        raise ValueError(f"the MCP server {server.described()} lists no tools")
    return [tool.to_openai() for tool in listed]


@click.command("init")
@click.argument("directory", default=".", metavar="[DIR]", type=click.Path(file_okay=False))
@click.option(
    "--from-mcp",
    metavar="COMMAND",
    help="Write the tools of this MCP server (started over stdio, asked for tools/list) to "
    "tools.json instead of the sample tools, and instead of the examples an outline of a case "
    "per tool, to fill in (until then, every command reports it as unfinished).",
)
@seconds_option("--mcp-timeout", "Seconds the MCP server may take to answer tools/list.")
@seconds_option(
    "--mcp-start-timeout", "Seconds the MCP server may take to start and answer initialize."
)
@mcp_env_option("--from-mcp")
@click.option("--force", is_flag=True, help="Replace the starter's files where they exist.")
def init_command(
    directory: str,
    from_mcp: str | None,
    mcp_timeout: float,
    mcp_start_timeout: float,
    mcp_env: tuple[str, ...],
    force: bool,
) -> None:
    """Write a starter to DIR (default: here, made if missing): tools.json, five
    example cases, a CI workflow, a calibration stub and a README. `judge check
    cases.jsonl --tools tools.json` grades the cases at once. Exit 2, writing nothing, when
    one of its files exists (without --force)."""
    paths = [Path(directory, f.path) for f in starter_files(list(SAMPLE_TOOLS), None)]
    existing = [str(p) for p in paths if p.exists() or p.is_symlink()]
    if existing and not force:
        verb = "exists" if len(existing) == 1 else "exist"
        _refuse(f"{', '.join(existing)} already {verb}: nothing written (--force replaces)")
    tools = list(SAMPLE_TOOLS)
    if from_mcp is not None:
        try:
            tools = mcp_tools(from_mcp, mcp_timeout, mcp_start_timeout, mcp_env)
        except ValueError as exc:
            _refuse(str(exc))
    files = starter_files(tools, from_mcp)
    _write_all(directory, files, force)
    _say_done(directory, files, from_mcp)


def _write_all(directory: str, files: list[StarterFile], force: bool) -> None:
    """Write the starter; without `force`, a file that appeared since the command started
    (while the MCP server was asked) is kept, and what this run wrote is taken back."""
    made: list[Path] = []
    try:
        for file in files:
            target = Path(directory, file.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            if force:
                write_atomically(target, file.text.encode())
                continue
            try:
                write_new(target, file.text.encode())
            except FileExistsError:
                for path in made:
                    path.unlink(missing_ok=True)
                _refuse(f"{target} exists now (made since judge init started): nothing "
                        "written (--force replaces)")  # fmt: skip
            made.append(target)
    except OSError as exc:  # the files written before it stay: --force writes them again
        _refuse(f"cannot write {exc.filename or directory}: {exc.strerror or exc}")


def write_new(path: Path, data: bytes) -> None:
    """Write `path` whole, never over anything there (FileExistsError, even a link): a
    temporary file beside it, then a hard link to its name, which fails where it is taken."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with open(partial, "xb") as handle:
            handle.write(data)
        try:
            os.link(partial, path)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: created exclusively instead
            with open(path, "xb") as handle:
                handle.write(data)
    finally:
        partial.unlink(missing_ok=True)


def _say_done(directory: str, files: list[StarterFile], source: str | None) -> None:
    width = max(len(f.path) for f in files)
    click.echo(f"wrote {directory}:")
    for file in files:
        click.echo(f"  {file.path:<{width}}  {file.about}")
    cases = os.path.normpath(os.path.join(directory, "cases.jsonl"))
    tools = os.path.normpath(os.path.join(directory, "tools.json"))
    if source is None:
        edit = "edit tools.json and cases.jsonl with your agent's real tools and replies"
        gives = "the examples give 2 passed, 2 failed and 1 for the judge, exit 0"
    else:
        edit = (
            "tools.json holds the server's tools; cases.jsonl an outline per tool: write "
            'each one\'s request, expected values and reply, and remove its "draft"'
        )
        gives = "until then each outline is reported as unfinished, never passed"
    click.echo(
        f"next: {edit}, then run: judge check {cases} --tools {tools}\n"
        f"  ({gives}; judge grade asks the judge)\n"
        f"calibration: calibration.jsonl shows hand labels; label more with judge sample "
        f"{cases} -o sample.jsonl, then judge review sample.jsonl (or judge label), "
        "then judge calibrate sample.jsonl\n"
        "CI: say where .github/workflows/judge.yml installs judge from (JUDGE, at its top)"
    )


COMMANDS = (init_command,)
