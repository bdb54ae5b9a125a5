"""Whether `judge check` still gives the results an earlier commit gave, field for field.

    python bench/same_results.py [--base REV] [FILE ...]

Runs `judge check` on each file twice, as whole processes: once with the package as it is at
REV (a temporary `git worktree`, default `4bd43e1`, before the fast core) and once with the
package of this checkout. Compares every result line in every field except
`failures[].message` (its wording may change with the validator) and prints, per file, the
cases and the cases that differ, with the first differences. Exits 1 when any case differs.
Default files: every `.jsonl` in ../shared/datasets/ and examples/cases.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()
SHOWN = 3


def results(tree: Path, cases: Path, out: Path) -> list[dict[str, Any]]:
    """`judge check` from the package in `tree`, one dict per result line."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-m", "judge", "check", str(cases), "-o", str(out), "--no-progress"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} (in {tree}) exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def without_messages(result: dict[str, Any]) -> dict[str, Any]:
    failures = [{k: v for k, v in f.items() if k != "message"} for f in result["failures"]]
    return {**result, "failures": failures}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    a, b = without_messages(old), without_messages(new)
    return [
        f"{key}: {a.get(key)!r} -> {b.get(key)!r}"
        for key in sorted(a.keys() | b.keys())
        if a.get(key) != b.get(key)
    ]


@contextmanager
def worktree(rev: str) -> Iterator[Path]:
    """The repository at `rev`, in a temporary `git worktree` removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="judge-base-") as tmp:
        base = Path(tmp) / "base"
        git = ["git", "-C", str(REPO), "worktree"]
        subprocess.run([*git, "add", "-q", "--detach", str(base), rev], check=True)
        try:
            yield base
        finally:
            subprocess.run([*git, "remove", "--force", str(base)], check=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--base", default="4bd43e1", help="the commit to compare with")
    args = parser.parse_args(argv)
    files = args.files or [*sorted(DATASETS.glob("*.jsonl")), REPO / "examples" / "cases.jsonl"]
    changed = 0
    with worktree(args.base) as base, tempfile.TemporaryDirectory(prefix="judge-same-") as tmp:
        for cases in files:
            old = results(base, cases.resolve(), Path(tmp) / "old.jsonl")
            new = results(REPO, cases.resolve(), Path(tmp) / "new.jsonl")
            if len(old) != len(new):
                print(f"{cases}: {len(old)} results at {args.base}, {len(new)} now")
                changed += 1
                continue
            found = [
                (o["id"], d) for o, n in zip(old, new, strict=True) if (d := differences(o, n))
            ]
            changed += len(found)
            reworded = sum(o != n for o, n in zip(old, new, strict=True)) - len(found)
            print(
                f"{cases.name}: {len(new)} cases, {len(found)} differ "
                f"({reworded} more differ only in a message's wording)"
            )
            for case_id, diff in found[:SHOWN]:
                print(f"  {case_id}: " + "; ".join(diff))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
