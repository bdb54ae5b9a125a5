"""An output that is an input (the same path, a symbolic or a hard link) is refused before
anything is read or written, exit 2 naming both, by every command that writes; the input is
left byte for byte as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SAMPLE = Path(__file__).resolve().parents[1] / "calibration" / "sample.jsonl"


def commands(tmp: Path) -> list[tuple[list[str], Path]]:
    """Each command with its output aimed at an input: (arguments, the input at stake)."""
    cases, sample = tmp / "cases.jsonl", tmp / "sample.jsonl"
    shutil.copy(EXAMPLES / "cases.jsonl", cases)
    shutil.copy(SAMPLE, sample)
    trace = tmp / "trace.json"
    trace.write_text('{"resourceSpans": []}\n')
    link, hard = tmp / "link.jsonl", tmp / "hard.jsonl"
    os.symlink(cases, link)
    os.link(sample, hard)
    return [
        (["check", str(cases), "-o", str(cases)], cases),
        (["check", str(cases), "-o", str(link), "--jobs", "2"], cases),
        (["grade", str(cases), "-o", str(link)], cases),
        (["import", "otel", str(trace), "-o", str(trace)], trace),
        (["calibrate", str(sample), "-o", str(hard)], sample),
        (["calibrate", str(sample), "--results-out", str(sample)], sample),
        (["sample", str(cases), "--n", "3", "-o", str(link)], cases),
        (["labels", "export", str(sample), "-o", str(hard)], sample),
        (["review", str(sample), "--record", str(hard)], sample),
        (
            [
                "run",
                str(cases),
                "--models",
                "a",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "-o",
                str(link),
            ],
            cases,
        ),  # fmt: skip
        (["compare", str(cases), "--html", str(link)], cases),
    ]


@pytest.mark.parametrize("index", range(11))
def test_an_output_over_an_input_is_refused_and_the_input_kept(tmp_path: Path, index: int) -> None:
    args, kept = commands(tmp_path)[index]
    before = kept.read_bytes()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, (args, result.output)
    assert "write elsewhere" in result.stderr or "one of the inputs" in result.stderr, result.stderr
    assert kept.read_bytes() == before


def test_two_outputs_that_are_one_file_are_refused(tmp_path: Path) -> None:
    sample = tmp_path / "sample.jsonl"
    shutil.copy(SAMPLE, sample)
    out = tmp_path / "calibration.json"
    result = CliRunner().invoke(main, ["calibrate", str(sample), "-o", str(out),
                                       "--disagreements", str(out)])  # fmt: skip
    assert result.exit_code == 2
    assert "-o and --disagreements both name" in result.stderr
    assert not out.exists()
