"""Writes the docs' estimate example (docs/guides/estimate.md), seeded: `cases.jsonl` (400
support requests and the tool call an agent made), `graded.jsonl` (their grades, a scripted
judge's selection verdicts with its confidence, right as often as its confidence says) and
`labels.csv` (the true labels of every case: what a person labelling them would say).

Run from the repository root: `python examples/estimate/generate.py`."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

from judge.checks._outcome import JudgeOutcome, SelectionVerdict
from judge.checks._result import CaseResult

HERE = Path(__file__).resolve().parent
CASES = 400
ASKS = [
    ("Where is my order {o}?", "lookup_order", "cancel_order"),
    ("Please refund order {o}, it arrived broken.", "issue_refund", "lookup_order"),
    ("Cancel {o} before it ships, please.", "cancel_order", "issue_refund"),
    ("Change the address on {o} to 12 Elm St.", "update_address", "lookup_order"),
]


def main() -> None:
    rng = random.Random(53)
    cases, graded, labels = [], [], []
    for i in range(CASES):
        ask, right, wrong = rng.choice(ASKS)
        order = f"ord_{rng.randrange(1000, 9999)}"
        true = rng.random() < 0.8  # the agent picks the right tool 80% of the time
        call = {"name": right if true else wrong, "arguments": json.dumps({"order_id": order})}
        cases.append(
            {
                "id": f"req-{i:03d}",
                "messages": [{"role": "user", "content": ask.format(o=order)}],
                "response": {"tool_calls": [{"type": "function", "function": call}]},
            }
        )
        sure = round(rng.uniform(0.55, 0.99), 2)
        said = true if rng.random() < sure else not true
        # it errs both ways, failing right picks more often than it passes wrong ones
        if not said and true and rng.random() < 0.5:
            said = True
        verdict = SelectionVerdict(
            reasoning="the tool fits the request" if said else "another tool fits better",
            verdict="correct" if said else "incorrect",
            category="right_call" if said else "wrong_tool",
            confidence=sure,
        )
        result = CaseResult(
            id=f"req-{i:03d}",
            tool_selection=None,
            schema_valid=True,
            argument_values=None,
            passed=said,
            decided_by="judge",
            judge=JudgeOutcome(status="ok", selection=verdict),
        )
        graded.append(result.model_dump_json(exclude_defaults=True))
        labels.append({"id": f"req-{i:03d}", "selection": "correct" if true else "incorrect"})
    (HERE / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (HERE / "graded.jsonl").write_text("".join(g + "\n" for g in graded))
    with (HERE / "labels.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["id", "selection"])
        writer.writeheader()
        writer.writerows(labels)


if __name__ == "__main__":
    main()
