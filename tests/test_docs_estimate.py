"""The estimate guide's example runs from a fresh clone as shown: each of its blocks
(`judge sample --for-estimate`, the provided labels imported, `judge estimate`) in order, in a
copy of `examples/estimate/`, printing the table rows the guide shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from judge.cli import main
from tests.test_examples import ROOT, blocks, commands

GUIDE = ROOT / "docs" / "guides" / "estimate.md"


def _examples() -> list[tuple[list[list[str]], list[str]]]:
    """Each shell block's commands and the table rows of the text block after it."""
    shell = [b for b in blocks("sh") if b.page == GUIDE]
    text = [b for b in blocks("text") if b.page == GUIDE]
    assert len(shell) == len(text) == 2
    rows = [[r for r in b.text.splitlines() if r.startswith("│ ") and "CI" not in r] for b in text]
    return [(commands(b.text), r) for b, r in zip(shell, rows, strict=True)]


@pytest.mark.parametrize("example", _examples(), ids=["uniform", "active"])
def test_the_guide_runs_as_shown(
    example: tuple[list[list[str]], list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown, rows = example
    shutil.copytree(ROOT / "examples" / "estimate", tmp_path / "examples" / "estimate")
    monkeypatch.chdir(tmp_path)
    assert [args[0] for args in shown] == ["sample", "labels", "estimate"]
    for args in shown:
        done = CliRunner().invoke(main, args)
        assert done.exit_code == 0, f"`judge {' '.join(args)}`: {done.output[-2000:]}"
    assert rows
    for row in rows:
        assert row in done.stdout, f"the guide shows {row!r}, the run printed:\n{done.stdout}"
