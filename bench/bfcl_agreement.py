"""How often `judge bfcl` + `judge check` agree with bfcl-eval's own AST checker, on the items
the tests did not see.

    python bench/bfcl_agreement.py --bfcl-data /tmp/bf/x/bfcl_eval/data [--json out.json]

`--bfcl-data` is the `bfcl_eval/data` folder of an unpacked bfcl-eval wheel (2026.3.23: its
`BFCL_v4_*.json` and `possible_answer/`). Each AST category it ships (and the two irrelevance
ones) is converted whole with `bfcl_cases`; every item NOT in the test fixtures
(`tests/reference/bfcl/data/`) gets its gold answer and systematic edits of it
(`tests/reference/bfcl/candidates.py`, with Java and JavaScript values in those languages'
syntax), each graded by `judge.check` and by the vendored `ast_checker`. Prints agreement
per category and overall, and the differences by cause; exits 1 under `--target` (0.995).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.reference.bfcl.agreement import (  # noqa: E402 (after the path above)
    CATEGORIES,
    CAUSES,
    FIXTURES,
    Tally,
    files,
    measure,
    read_lines,
)


def fixture_ids(category: str) -> set[str]:
    questions, _ = files(FIXTURES, category)
    return {item["id"] for item in read_lines(questions)} if questions.exists() else set()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bfcl-data", type=Path, required=True, help="bfcl_eval/data")
    parser.add_argument("--category", action="append", help="only these (repeatable)")
    parser.add_argument("--target", type=float, default=0.995)
    parser.add_argument("--json", type=Path, help="write the figures and every difference")
    parser.add_argument("--show", type=int, default=3, help="differences shown per cause")
    args = parser.parse_args()
    if not (args.bfcl_data / "possible_answer").is_dir():
        print(f"{args.bfcl_data}: no possible_answer/ (bfcl_eval/data expected)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    tallies: dict[str, Tally] = {}
    for category in args.category or CATEGORIES:
        tallies[category] = measure(args.bfcl_data, category, leave_out=fixture_ids(category))
        tally = tallies[category]
        print(f"{category:24} {tally.candidates:6} candidates  {tally.share:8.2%}")
    total = sum(t.candidates for t in tallies.values())
    agreed = sum(t.agreed for t in tallies.values())
    share = agreed / total if total else 1.0
    print(f"{'all':24} {total:6} candidates  {share:8.2%}  ({time.perf_counter() - started:.0f} s)")
    causes: Counter[str] = Counter()
    for tally in tallies.values():
        causes.update(tally.causes)
    for cause, count in causes.most_common():
        print(f"\n{count} x {cause}: {CAUSES[cause]}")
        shown = [d for t in tallies.values() for d in t.differences if d["cause"] == cause]
        for difference in shown[: args.show]:
            print("   ", json.dumps(difference)[:240])
    if args.json:
        figures = {
            c: {"candidates": t.candidates, "agreed": t.agreed, "differences": t.differences}
            for c, t in tallies.items()
        }
        args.json.write_text(json.dumps({"share": share, "categories": figures}, indent=1))
    return 0 if share >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
