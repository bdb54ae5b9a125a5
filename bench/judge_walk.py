"""The walk of a judge through `judge grade --batch`, followed as data (issue 37).

Runs `judge grade FILE --batch` in this process against a fake Batch API on 127.0.0.1 and
records each Python call of the package whose arguments hold the `Judge` (its first entry,
for a coroutine or generator): a stay in that call's module. Consecutive stays in one module
are one visit. Prints the visits per module (a room entered more than three times is what
issue 37 split apart) and the walk itself. `--parts` also follows the judge's parts (the
asker, what it asks, the batch port, the answering): their loops over cases and requests
show there, as they should.

    .venv/bin/python bench/judge_walk.py [--cases examples/cases.jsonl] [--parts]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.batch_server import batch_serving  # noqa: E402

_FRESH = 0x20 | 0x80 | 0x200  # a generator, a coroutine, an async generator


def walk(cases: Path, parts: bool = False) -> list[tuple[str, str]]:
    """The visits (module, the function entered) of a judge grading `cases` with `--batch`."""
    from judge.cli import main
    from judge.judging._answering import Answering
    from judge.judging._asker import Asker
    from judge.judging._grade import Judge
    from judge.judging._questions import Questioner
    from judge.judging._requests import Requests

    followed = (Judge, Requests, Asker, Questioner, Answering) if parts else (Judge,)
    visits: list[tuple[str, str]] = []
    resumed: set[FrameType] = set()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        module = frame.f_globals.get("__name__", "")
        if event != "call" or not module.startswith("judge."):
            return
        if frame.f_code.co_flags & _FRESH:
            if frame in resumed:
                return
            resumed.add(frame)
        holds = any(type(v) in followed for v in frame.f_locals.values())
        if holds and (not visits or visits[-1][0] != module):
            visits.append((module, frame.f_code.co_name))

    with tempfile.TemporaryDirectory() as folder, batch_serving() as server:
        argv = ["grade", str(cases), "-o", f"{folder}/out.jsonl", "--batch",
                "--batch-poll", "0.05", "--base-url", server.url, "--model", "m",
                "--cache-dir", folder]  # fmt: skip
        sys.setprofile(profile)
        try:
            main(argv, standalone_mode=False)
        finally:
            sys.setprofile(None)
    return visits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=REPO / "examples" / "cases.jsonl")
    parser.add_argument("--parts", action="store_true", help="follow the judge's parts too")
    args = parser.parse_args()
    visits = walk(args.cases, args.parts)
    print(f"{len(visits)} stays; visits per module:", file=sys.stderr)
    for module, count in Counter(m for m, _ in visits).most_common():
        print(f"  {count:4d}  {module}", file=sys.stderr)
    print(" -> ".join(f"{m.removeprefix('judge.')}:{f}" for m, f in visits), file=sys.stderr)


if __name__ == "__main__":
    main()
