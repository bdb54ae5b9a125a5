"""Simulated users (issue 55), as a user would run them: the embedded model as the agent and
as the user on the refunds scenarios, three runs each, and what came of every run.

    python bench/simulated_users.py collect [--out DIR] [--runs 3]   # niced; tens of minutes
    python bench/simulated_users.py measure [--out DIR] [--json FILE]

`collect` runs `judge run examples/refunds/scenarios.jsonl --models local --user-model local
--env examples/refunds/environment.py:make_environment --runs 3` (resumable: a rerun asks
again only the runs not written, and the user turns come from its cache). `measure` reads the
runs file: that every run completed with a transcript and a reason it ended, who ended them,
seconds per run and per turn (an agent turn: its requests until its reply in text; a user
turn: one request), the pass rate over the runs the user did not spoil and pass^k over the
scenarios, the simulator's mistakes by kind, and what the user cache served.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "refunds" / "scenarios.jsonl"
ENV = f"{ROOT / 'examples' / 'refunds' / 'environment.py'}:make_environment"
OUT = Path.home() / ".cache" / "tool-call-judge" / "bench-simulated-users"


def collect(out: Path, runs: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    command = [
        "nice", "-n", "5", str(Path(sys.executable).parent / "judge"), "run", str(SCENARIOS),
        "--models", "local", "--user-model", "local", "--runs", str(runs), "--env", ENV,
        "--max-steps", "10", "-o", str(out / "runs.jsonl"), "--user-cache-dir",
        str(out / "user-cache"), "--format", "json", "--html", str(out / "report.html"),
    ]  # fmt: skip
    done = subprocess.run(command, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"judge run exited {done.returncode}")


def _turns(record: dict[str, Any]) -> tuple[int, int]:
    """A run's agent turns (replies in text) and simulated user turns (the closing one too)."""
    transcript = record.get("transcript") or []
    agent = sum(m.get("role") == "assistant" and not m.get("tool_calls") for m in transcript)
    user = record.get("user") or {}
    return agent, int(user.get("turns", 0)) + (user.get("closing") is not None)


def measure(out: Path) -> dict[str, Any]:
    records = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    complete = [r for r in records if r.get("error") is None and r.get("transcript")
                and r.get("end_reason")]  # fmt: skip
    fair = [r for r in complete if r.get("user_error") is None]
    by_case: dict[str, list[bool]] = {}
    for record in fair:
        by_case.setdefault(record["case_id"], []).append(bool(record["passed"]))
    runs = max((len(v) for v in by_case.values()), default=0)
    agent_s = [r["latency_s"] or 0.0 for r in complete]
    user_s = [(r.get("user") or {}).get("latency_s") or 0.0 for r in complete]
    turns = [_turns(r) for r in complete]
    asked = sum((r.get("user") or {}).get("asked", 0) for r in complete)
    served = sum((r.get("user") or {}).get("cached", 0) for r in complete)
    faults = Counter(f["kind"] for r in complete for f in r.get("user_faults") or [])
    return {
        "runs": len(records),
        "complete": len(complete),
        "ended_by": dict(Counter(f"{r['ended_by']}: {r['end_reason']}" for r in complete)),
        "seconds_per_run": round((sum(agent_s) + sum(user_s)) / max(1, len(complete)), 1),
        "seconds_per_agent_turn": round(sum(agent_s) / max(1, sum(a for a, _ in turns)), 1),
        "seconds_per_user_turn": round(sum(user_s) / max(1, asked), 1),
        "user_turns_per_run": round(sum(u for _, u in turns) / max(1, len(complete)), 2),
        "user_errors": len(complete) - len(fair),
        "user_faults": dict(faults),
        "pass_rate": round(sum(sum(v) for v in by_case.values()) / max(1, len(fair)), 3),
        f"pass^{runs}": round(
            sum(all(v) and len(v) == runs for v in by_case.values()) / max(1, len(by_case)), 3
        ),
        "user_turns_asked": asked,
        "user_turns_cached": served,
        "passed_by_case": {case: sum(v) for case, v in sorted(by_case.items())},
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("collect", "measure"))
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.step == "collect":
        collect(args.out, args.runs)
        return
    found = measure(args.out)
    print(json.dumps(found, indent=2))
    if args.json:
        args.json.write_text(json.dumps(found, indent=2) + "\n")


if __name__ == "__main__":
    main()
