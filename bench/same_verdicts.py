"""Whether `Judge.grade` still gives the results an earlier commit gave, field for field.

    python bench/same_verdicts.py [--base REV] [--cases 150] [FILE ...]

A loopback chat server (`tests/chat_server.py`, 127.0.0.1) answers every request with a valid
reply that depends only on what was sent: a verdict's label from a hash of the messages (with
token logprobs where they were asked), a one-token answer's probability from the same hash.
Each file's first `--cases` cases are graded in four ways (the default rubrics with the
trajectory and answer rubrics on; three samples with abstention; the quick scored rubrics;
no logprobs, forced tool calls), in a whole process, once with the package at REV (a
temporary `git worktree`, default `a7c9345`, before the judging layer was split) and once
with this checkout's. Every result line is compared in every field (the batch ids moved from
the provenance to the outcome, so `batch` is left out) and so is each judge's calibration
fingerprint. Exits 1 when anything differs. Default files: bfcl_single_turn, when2call and
taubench_airline_gpt4o of ../shared/datasets/.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DATASETS = (REPO / ".." / "shared" / "datasets").resolve()
DEFAULT_FILES = ("bfcl_single_turn.jsonl", "when2call.jsonl", "taubench_airline_gpt4o.jsonl")
WAYS: dict[str, dict[str, Any]] = {
    "default": {"trajectory": True},
    "samples": {"samples": 3, "abstain_below": 0.7},
    "scored": {"rubrics": "quick"},
    "no-logprobs": {"logprobs": False, "response_format": "tool"},
}


def handler(body: dict[str, Any]) -> Any:
    """A valid reply that depends only on the messages sent."""
    from tests.chat_server import answer, one_token, with_logprobs

    text = json.dumps(body.get("messages"), sort_keys=True).encode()
    h = int(hashlib.sha256(text).hexdigest(), 16)
    if body.get("max_tokens") == 1:
        return one_token((h % 97) / 100 + 0.01)
    reply = answer(body, ("correct", "incorrect")[h % 2])
    return with_logprobs(reply) if body.get("logprobs") and not body.get("tools") else reply


def grade(url: str, path: str, way: str, cases: int, out: str) -> None:
    """In a child process: grade with the package on sys.path; print the fingerprint."""
    from judge import Judge
    from judge.cases._loading import iter_cases
    from judge.judging._rubric import load_rubrics

    options = dict(WAYS[way])
    if options.get("rubrics") == "quick":
        options["rubrics"] = load_rubrics(None, kind="quick")

    async def run() -> None:
        loaded = list(iter_cases(path))[:cases]
        async with Judge(
            base_url=url, model="bench", cache=False, concurrency=16, answers=True, **options
        ) as judge:
            results = await judge.grade(loaded)
            Path(out).write_text("".join(r.model_dump_json() + "\n" for r in results))
            print(json.dumps(judge.fingerprint(), sort_keys=True))

    asyncio.run(run())


def comparable(line: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(line)
    judged = result.get("judge") or {}
    judged.pop("batch", None)
    (judged.get("provenance") or {}).pop("batch", None)
    return result


def graded(
    tree: Path, url: str, path: Path, way: str, args: argparse.Namespace, out: Path
) -> tuple[str, list[dict[str, Any]]]:
    cmd = [sys.executable, __file__, "--worker", url, str(path), way, str(args.cases), str(out)]
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{REPO}", "JUDGE_CORE": "source"}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
    if proc.returncode:
        sys.exit(f"grading {path.name} ({way}) in {tree} failed:\n{proc.stderr[-2000:]}")
    return proc.stdout, [comparable(line) for line in out.read_text().splitlines()]


def main(argv: list[str] | None = None) -> int:
    if argv is None and sys.argv[1:2] == ["--worker"]:
        url, path, way, cases, out = sys.argv[2:7]
        grade(url, path, way, int(cases), out)
        return 0
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--base", default="a7c9345", help="the commit to compare with")
    parser.add_argument("--cases", type=int, default=150, help="cases of each file (150)")
    args = parser.parse_args(argv)
    files = [p.resolve() for p in args.files or [DATASETS / name for name in DEFAULT_FILES]]
    sys.path.insert(0, str(REPO))
    from same_results import worktree

    from tests.chat_server import serving

    changed = 0
    work = tempfile.TemporaryDirectory()
    with worktree(args.base) as base, work as tmp, serving(handler) as server:
        for path in files:
            for way in WAYS:
                old_print, old = graded(base, server.url, path, way, args, Path(tmp) / "a")
                new_print, new = graded(REPO, server.url, path, way, args, Path(tmp) / "b")
                differ = sum(a != b for a, b in zip(old, new, strict=False))
                differ += abs(len(old) - len(new)) + (old_print != new_print)
                changed += differ
                print(
                    f"{path.name} ({way}): {len(new)} cases, {differ} differ"
                    + ("" if old_print == new_print else " (the fingerprint too)")
                )
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
