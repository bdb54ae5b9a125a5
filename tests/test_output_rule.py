"""The one output rule (issue 52): no file a command writes is one of its inputs or another of
its outputs (the same path spelled otherwise, a symbolic or a hard link); it is refused, exit 2
naming both, before anything is read, asked or written, and every file is left byte for byte.
The commands and their output options come from the command tree itself, so that a new
command or option cannot skip the rule unnoticed."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from judge.cli import main
from judge.cli._paths import IN_PLACE, OUTPUT_OPTIONS
from tests.chat_server import ChatServer, serving
from tests.openrouter_server import KEY, OpenRouterServer, openrouter
from tests.run_helpers import TOOLS, run, write_cases

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "calibration" / "sample.jsonl"


def walk(
    command: click.Command, names: tuple[str, ...] = ()
) -> Iterator[tuple[str, click.Command]]:
    """Every command under `command` by its key (`labels export`), groups opened."""
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            found = command.get_command(ctx, name)
            assert found is not None
            yield from walk(found, (*names, name))
    else:
        yield " ".join(names), command


TREE = dict(walk(main))

OUTPUT_FLAGS = {"-o", "--output", "--out", "--html", "--junit", "--report", "--record",
                "--results-out", "--disagreements", "--batch-file"}  # fmt: skip
WRITES = re.compile(r"\b(write|writes|written|overwrite|overwritten)\b", re.IGNORECASE)


def looks_written(param: click.Parameter) -> bool:
    """Whether an option looks like a file the command writes: its name, a writable path, or
    its help saying so."""
    if not isinstance(param, click.Option) or param.hidden:
        return False  # (a hidden option is a former name, feeding the one shown)
    kind = param.type
    said = (
        isinstance(kind, click.Path)
        and kind.file_okay
        and (kind.writable or bool(WRITES.search(param.help or "")))
    )
    return bool(OUTPUT_FLAGS & set(param.opts)) or said


def flag(command: str, name: str) -> str:
    [param] = [p for p in TREE[command].params if p.name == name]
    return min(param.opts, key=len)


def test_every_command_is_in_the_registry() -> None:
    assert set(TREE) == set(OUTPUT_OPTIONS)


@pytest.mark.parametrize("command", sorted(TREE))
def test_every_option_that_writes_is_registered(command: str) -> None:
    params = {str(p.name) for p in TREE[command].params}
    written = {str(p.name) for p in TREE[command].params if looks_written(p)}
    assert written <= OUTPUT_OPTIONS[command], f"judge {command}: register {written}"
    assert OUTPUT_OPTIONS[command] <= params  # none stale


@dataclass(frozen=True)
class Setup:
    """A command given its inputs: `args` with `{file}` placeholders, and `inputs`, each
    input's parameter and file."""

    args: tuple[str, ...]
    inputs: tuple[tuple[str, str], ...]


JUDGE = ("--base-url", "{judge_url}", "--model", "m", "--cache-dir", "{cache}")
SETUPS = {
    "check": Setup(("check", "{cases}", "--tools", "{tools}"),
                   (("cases", "cases"), ("tools_file", "tools"))),
    "grade": Setup(("grade", "{cases}", "--tools", "{tools}", "--probe", "{probe}", *JUDGE),
                   (("cases", "cases"), ("tools_file", "tools"), ("probe", "probe"))),
    "run": Setup(("run", "{cases}", "--models", "good/m", "--base-url", "{run_url}",
                  "--api-key-env", "FAKE_KEY", "--tools", "{tools}"),
                 (("cases", "cases"), ("tools_file", "tools"))),
    "compare": Setup(("compare", "{runs}"), (("runs_file", "runs"),)),
    "regrade": Setup(("regrade", "{runs}", "{cases}", "--tools", "{tools}"),
                     (("runs_file", "runs"), ("cases", "cases"), ("tools_file", "tools"))),
    "transcripts": Setup(("transcripts", "{runs}", "{cases}"),
                         (("runs_file", "runs"), ("cases", "cases"))),
    "calibrate": Setup(("calibrate", "{sample}", "--probe", "{probe}", *JUDGE),
                       (("sample", "sample"), ("probe", "probe"))),
    "sample": Setup(("sample", "{cases}", "--results", "{results}", "--n", "2", "-o", "{out}"),
                    (("cases", "cases"), ("results", "results"))),
    "bfcl": Setup(("bfcl", "{questions}", "--possible-answers", "{answers}", "-o", "{out}"),
                  (("questions", "questions"), ("possible_answers", "answers"))),
    "labels export": Setup(("labels", "export", "{sample}", "-o", "{out}"),
                           (("sample", "sample"),)),
    "labels import": Setup(("labels", "import", "{sample}", "{csv}"),
                           (("sample", "sample"), ("csv_file", "csv"))),
    "local train": Setup(("local", "train", "{sample}", "--only-cached", "--cache-dir",
                          "{cache}", "-o", "{out}"), (("labelled", "sample"),)),
    "review": Setup(("review", "{sample}", "--results", "{results}", "--probe", "{probe}"),
                    (("sample", "sample"), ("results", "results"), ("probe", "probe"))),
    "import": Setup(("import", "otel", "{trace}"), (("files", "trace"),)),
    "estimate": Setup(("estimate", "{results}", "--labels", "{sample}"),
                      (("graded", "results"), ("labels", "sample"))),
    "align": Setup(("align", "{sample}", "--policy", "{policy}", "--aligned", "{spec}", *JUDGE),
                   (("labelled", "sample"), ("policy", "policy"), ("aligned", "spec"))),
}  # fmt: skip
VARIANTS = ("same-path", "spelled-otherwise", "symlink", "hard-link")


def test_every_command_that_writes_is_tried() -> None:
    assert set(SETUPS) == {c for c, written in OUTPUT_OPTIONS.items() if written}


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[ChatServer, OpenRouterServer]]:
    with serving() as judge_server, openrouter() as run_server:
        yield judge_server, run_server


@pytest.fixture(scope="module")
def runs_file(
    servers: tuple[ChatServer, OpenRouterServer], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A runs file `judge run` wrote."""
    folder = tmp_path_factory.mktemp("runs")
    out = folder / "runs.jsonl"
    done = run(servers[1], write_cases(folder / "c.jsonl", ("Paris",)), "--models", "good/m",
               "-o", str(out))  # fmt: skip
    assert done.exit_code == 0, done.output
    return out


class Workspace:
    """The input files of every setup in a fresh folder (the working directory), the servers
    the commands would ask, and the invocation."""

    def __init__(
        self, root: Path, servers: tuple[ChatServer, OpenRouterServer], runs: Path
    ) -> None:
        self.root = root
        self.judge_server, self.run_server = servers
        (root / "sub").mkdir()
        self.files = {
            "cases": write_cases(root / "cases.jsonl", ("Paris", "Oslo")),
            "tools": root / "tools.json",
            "probe": root / "probe.json",
            "sample": root / "sample.jsonl",
            "results": root / "results.jsonl",
            "questions": root / "questions.json",
            "answers": root / "answers.json",
            "csv": root / "labels.csv",
            "trace": root / "trace.json",
            "runs": root / "runs.jsonl",
            "policy": root / "policy.md",
            "spec": root / "aligned.json",
        }
        self.files["policy"].write_text("a call is right when it names the city\n")
        self.files["spec"].write_text('{"version": 1}\n')
        self.files["tools"].write_text(json.dumps(TOOLS))
        self.files["probe"].write_text("{}\n")
        self.files["sample"].write_text("".join(SAMPLE.read_text().splitlines(True)[:4]))
        self.files["results"].write_text('{"id": "paris", "passed": true}\n')
        self.files["questions"].write_text('{"id": "q", "question": [], "function": []}\n')
        self.files["answers"].write_text('{"id": "q", "ground_truth": []}\n')
        self.files["csv"].write_text("id,selection,arguments,note\n")
        self.files["trace"].write_text('{"resourceSpans": []}\n')
        shutil.copy(runs, self.files["runs"])

    def aim(self, name: str, variant: str) -> str:
        """A path to the file `name`, as `variant` spells it."""
        target = self.files[name] if name in self.files else self.root / name
        if variant == "same-path":
            return str(target)
        if variant == "spelled-otherwise":
            return os.path.join("sub", "..", target.name)  # (the working directory is root)
        other = self.root / f"{variant}-{target.name}"
        os.symlink(target, other) if variant == "symlink" else os.link(target, other)
        return str(other)

    def invoke(self, command: str, *more: str) -> Result:
        values = {k: str(v) for k, v in self.files.items()} | {
            "judge_url": self.judge_server.url,
            "run_url": self.run_server.url,
            "cache": str(self.root / "cache"),
            "out": str(self.root / "new-output"),
        }
        args = [a.format(**values) for a in SETUPS[command].args]
        return CliRunner(env={"FAKE_KEY": KEY}).invoke(main, [*args, *more])

    def snapshot(self) -> dict[str, bytes | str]:
        """Every entry of the folder: a file's bytes, a link's target."""
        return {
            str(p.relative_to(self.root)): os.readlink(p) if p.is_symlink() else p.read_bytes()
            for p in sorted(self.root.rglob("*"))
            if p.is_symlink() or p.is_file()
        }

    def asked(self) -> int:
        return len(self.judge_server.chat_requests) + len(self.run_server.chats)


@pytest.fixture
def work(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    servers: tuple[ChatServer, OpenRouterServer],
    runs_file: Path,
) -> Workspace:
    monkeypatch.chdir(tmp_path)  # where the default outputs (calibration.json) would go

    def serve(*args: object, **kwargs: object) -> None:
        raise AssertionError("judge review served: nothing refused it")

    monkeypatch.setattr("uvicorn.run", serve)
    return Workspace(tmp_path, servers, runs_file)


def assert_refused(work: Workspace, command: str, *more: str, says: str) -> None:
    """`command` with `more` exits 2 saying `says` (and where to write), leaving every file
    as it was and asking no endpoint."""
    before, asked = work.snapshot(), work.asked()
    done = work.invoke(command, *more)
    assert done.exit_code == 2, (more, done.output)
    assert says in done.stderr and "write elsewhere" in done.stderr, done.stderr
    assert work.snapshot() == before
    assert work.asked() == asked


OVER_AN_INPUT = [
    pytest.param(command, output, param, name, variant,
                 id=f"{command.replace(' ', '-')}-{output}-over-{param}-{variant}")
    for command, setup in SETUPS.items()
    for output in sorted(OUTPUT_OPTIONS[command])
    for param, name in setup.inputs
    if IN_PLACE.get((command, output)) != param
    for variant in VARIANTS
]  # fmt: skip


@pytest.mark.parametrize(("command", "output", "param", "name", "variant"), OVER_AN_INPUT)
def test_an_output_over_an_input_is_refused(
    work: Workspace, command: str, output: str, param: str, name: str, variant: str
) -> None:
    aimed = work.aim(name, variant)
    option = flag(command, output)
    assert_refused(work, command, option, aimed, says=f"{option} {aimed} is ")


OVER_AN_OUTPUT = [
    pytest.param(command, first, second, variant,
                 id=f"{command.replace(' ', '-')}-{second}-over-{first}-{variant}")
    for command in SETUPS
    for first in sorted(OUTPUT_OPTIONS[command])
    for second in sorted(OUTPUT_OPTIONS[command])
    if first < second
    for variant in VARIANTS
]  # fmt: skip


@pytest.mark.parametrize(("command", "first", "second", "variant"), OVER_AN_OUTPUT)
def test_two_outputs_that_are_one_file_are_refused(
    work: Workspace, command: str, first: str, second: str, variant: str
) -> None:
    # Regression: `run -o runs.jsonl --html runs.jsonl` wrote the HTML over the paid-for runs;
    # `grade -o R --junit R` and `check -o X --junit X` the JUnit XML over the results.
    kept = work.root / "earlier-output"
    kept.write_text("what an earlier run wrote\n")
    aimed = work.aim(kept.name, variant)
    assert_refused(work, command, flag(command, first), str(kept), flag(command, second), aimed,
                   says="is also the")  # fmt: skip


@pytest.mark.parametrize("command", ["check", "grade", "run"])
def test_two_outputs_that_are_one_new_file_are_refused(work: Workspace, command: str) -> None:
    new = work.root / "not-yet.jsonl"
    os.symlink(new, work.root / "link.jsonl")  # a link to a file that does not exist yet
    second = "--html" if command == "run" else "--junit"
    assert_refused(work, command, "-o", str(new), second, str(work.root / "link.jsonl"),
                   says=f"{second} {work.root / 'link.jsonl'} is also the -o output")  # fmt: skip
    assert not new.exists()


def test_the_refusal_names_both_files(work: Workspace) -> None:
    done = work.invoke("run", "-o", "runs.jsonl", "--html", "runs.jsonl")
    assert done.exit_code == 2
    assert done.stderr == "judge run: --html runs.jsonl is also the -o output: write elsewhere\n"
    done = work.invoke("check", "--junit", str(work.files["tools"]))
    assert f"--junit {work.files['tools']} is the --tools input " in done.stderr


def test_an_output_the_command_works_out_is_checked_too(work: Workspace) -> None:
    # calibrate's per-case verdicts default to <record stem>.results.jsonl beside -o.
    record = work.root / "record.json"
    assert_refused(work, "calibrate", "-o", str(record), "--report",
                   str(work.root / "record.results.jsonl"),
                   says="is also the --results-out output")  # fmt: skip


def test_a_python_file_an_option_loads_is_an_input(work: Workspace) -> None:
    factory = work.root / "shop_env.py"
    factory.write_text("def make():\n    return None\n")
    assert_refused(work, "check", "--env", f"{factory}:make", "-o", str(factory),
                   says=f"is the --env input {factory}")  # fmt: skip


def test_outputs_apart_and_devices_are_written(work: Workspace) -> None:
    done = work.invoke("check", "-o", "results.out", "--junit", "report.xml")
    assert done.exit_code == 0, done.output
    assert (work.root / "results.out").exists() and (work.root / "report.xml").exists()
    # a device is no file to write over: /dev/null twice is fine
    done = work.invoke("check", "-o", os.devnull, "--junit", os.devnull)
    assert done.exit_code == 0, done.output


def test_regrade_may_rewrite_its_runs_file_in_place(work: Workspace) -> None:
    runs = work.files["runs"]
    done = work.invoke("regrade", "-o", str(runs))
    assert done.exit_code == 0, done.output
    assert runs.read_text()
