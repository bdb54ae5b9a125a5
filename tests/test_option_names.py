"""One meaning per option name: the renamed options, their former spellings (kept, with a
warning, until FORMER_NAMES_UNTIL) and the help that says what an option does in each command."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from judge.cli import main
from judge.cli._common import FORMER_NAMES_UNTIL, renamed_option
from judge.cli._data import bfcl_command, calibrate_command
from tests.chat_server import ChatServer
from tests.helpers import invoke
from tests.test_bfcl import ANSWER, QUESTION
from tests.test_calibration import by_marker, sample


def bfcl_files(tmp_path: Path) -> tuple[Path, Path]:
    questions = tmp_path / "BFCL_v4_simple_python.json"
    answers = tmp_path / "possible_answer.json"
    questions.write_text(json.dumps(QUESTION) + "\n")
    answers.write_text(json.dumps(ANSWER) + "\n")
    return questions, answers


def warning(old: str, new: str) -> str:
    return f"{old} is deprecated since 2026-12-03 and will be removed after 2027-06-01: use {new}"


@pytest.mark.parametrize(
    ("spelling", "warned"),
    [
        pytest.param("--possible-answers", False, id="new"),
        pytest.param("--answers", True, id="former-still-works-and-warns"),
    ],
)
def test_bfcl_reads_its_possible_answers_by_either_name(
    tmp_path: Path, spelling: str, warned: bool
) -> None:
    questions, answers = bfcl_files(tmp_path)
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), spelling, str(answers), "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["expected_calls"][0]["name"] == "geometry_area_triangle"  # the answers were read
    said = f"judge bfcl: {warning('--answers', '--possible-answers')}\n"
    assert done.stderr == (said if warned else "")


@pytest.mark.parametrize(
    ("spelling", "warned"),
    [
        pytest.param("--results-out", False, id="new"),
        pytest.param("--results", True, id="former-still-works-and-warns"),
    ],
)
def test_calibrate_writes_its_results_where_either_name_says(
    server: ChatServer, tmp_path: Path, spelling: str, warned: bool
) -> None:
    server.default = by_marker
    record, results = tmp_path / "calibration.json", tmp_path / "verdicts.jsonl"
    done = invoke(
        server, tmp_path, "calibrate", str(sample(tmp_path, 4)), "-o", str(record),
        spelling, str(results),
    )  # fmt: skip
    assert done.exit_code == 1, done.output  # four labels are too few to pass: all written
    assert len(results.read_text().splitlines()) == 4
    assert not (tmp_path / "calibration.results.jsonl").exists()
    assert json.loads(record.read_text())["results"] == str(results)
    assert (warning("--results", "--results-out") in done.stderr) is warned


@pytest.mark.parametrize(
    ("command", "new", "old"),
    [
        pytest.param("bfcl", "--possible-answers", "--answers", id="bfcl"),
        pytest.param("calibrate", "--results-out", "--results", id="calibrate"),
    ],
)
@pytest.mark.parametrize("first_new", [True, False], ids=["new-first", "former-first"])
def test_both_spellings_at_once_are_a_usage_error(
    tmp_path: Path, command: str, new: str, old: str, first_new: bool
) -> None:
    questions, answers = bfcl_files(tmp_path)
    given = str(answers if command == "bfcl" else tmp_path / "results.jsonl")
    pair = [new, given, old, given] if first_new else [old, given, new, given]
    out = tmp_path / "out"
    done = CliRunner().invoke(main, [command, str(questions), *pair, "-o", str(out)])
    assert done.exit_code == 2, done.output
    assert f"give {new} or {old} (its former name), not both" in done.stderr
    assert not out.exists() and not (tmp_path / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("command", "new", "old"),
    [
        pytest.param(bfcl_command, "--possible-answers", "--answers", id="bfcl"),
        pytest.param(calibrate_command, "--results-out", "--results", id="calibrate"),
    ],
)
def test_only_the_new_spelling_is_in_help(command: click.Command, new: str, old: str) -> None:
    [shown] = [p for p in command.params if new in p.opts]
    [former] = [p for p in command.params if old in p.opts]
    assert isinstance(shown, click.Option) and not shown.hidden
    assert isinstance(former, click.Option) and former.hidden
    assert f"Formerly {old} (deprecated; removed after {FORMER_NAMES_UNTIL})." in (shown.help or "")


@click.command()
@renamed_option("--new", was="--old", since="2026-12-03", until="2027-06-01", default="d")
def toy(new: str) -> None:
    click.echo(new)


@pytest.mark.parametrize(
    ("args", "printed", "stderr"),
    [
        pytest.param([], "d\n", "", id="neither-default"),
        pytest.param(["--new", "n"], "n\n", "", id="new"),
        pytest.param(["--old", "o"], "o\n", f"judge toy: {warning('--old', '--new')}\n", id="old"),
    ],
)
def test_a_renamed_option_takes_either_spelling(args: list[str], printed: str, stderr: str) -> None:
    done = CliRunner().invoke(toy, args)
    assert (done.exit_code, done.stdout, done.stderr) == (0, printed, stderr)


def help_line(command: str, option: str) -> str:
    """The line of `judge COMMAND --help` (wide enough not to wrap) that shows `option`."""
    done = CliRunner().invoke(
        main, [command, "--help"], terminal_width=10_000, max_content_width=10_000
    )
    assert done.exit_code == 0, done.output
    [line] = [line for line in done.output.splitlines() if line.lstrip().startswith(option)]
    return line


@pytest.mark.parametrize(
    ("command", "says"),
    [
        pytest.param(
            "grade",
            "Append one result per line here as cases finish. Rerun with the same file to "
            "resume it: cases already judged in it (status ok or skipped) are not graded again",
            id="grade-appends-and-resumes",
        ),
        pytest.param(
            "run",
            "Append one line per response here as each finishes. Rerun with the same file to "
            "resume it: the (model, case, run) already answered are not asked again",
            id="run-appends-and-resumes",
        ),
        pytest.param(
            "calibrate", "Write the calibration record here, overwritten.", id="calibrate"
        ),
        pytest.param("regrade", "Write the regraded runs file here, overwritten", id="regrade"),
    ],
)
def test_help_says_what_o_does_to_the_file(command: str, says: str) -> None:
    assert says in help_line(command, "-o, --output FILE")


def test_run_says_what_env_does_in_run() -> None:
    run = help_line("run", "--env")
    assert "Make each run an agent run" in run and "until it answers in text or --max-steps" in run
    replay = help_line("check", "--env")
    assert "Replay the reference and the candidate's calls into fresh environments" in replay
    assert help_line("grade", "--env") == replay and "agent" not in replay
