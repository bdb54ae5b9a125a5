"""The judge's verdicts counted over a run: statuses, labels, spend, agreement with the checks."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judge.checks._outcome import JudgeOutcome


@dataclass
class JudgeSummary:
    """Counts of judge verdicts, errors, spend and agreement with the deterministic checks."""

    status: Counter[str] = field(default_factory=Counter)
    selection: Counter[str] = field(default_factory=Counter)
    arguments: Counter[str] = field(default_factory=Counter)
    """Case-level arguments verdicts (`none` when no call verdict applies)."""
    answer: Counter[str] = field(default_factory=Counter)
    """Answer verdicts (`none` when the answer was not judged)."""
    agreement: dict[str, Counter[str]] = field(
        default_factory=lambda: {"selection": Counter(), "arguments": Counter()}
    )
    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of the prompt tokens, those the server took from its prompt cache."""
    passed: int = 0
    """Cases the judge itself passed (whoever decided the case: see `Summary.decided_by`)."""
    failed: int = 0
    uncertain: int = 0
    """Cases judged ok that an abstention leaves undecided."""
    escalated: int = 0
    """Verdicts the escalation judge decided."""
    escalation: Counter[str] = field(default_factory=Counter)
    """What the escalation judge cost: requests, cached, prompt and completion tokens."""

    def add(self, outcome: JudgeOutcome) -> None:
        self.status[outcome.status] += 1
        usage = outcome.usage
        self.requests += usage.requests
        self.cached += usage.cached
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cached_prompt_tokens += usage.cached_prompt_tokens
        self.escalated += outcome.escalated
        if outcome.escalation_usage is not None:
            spent = outcome.escalation_usage
            self.escalation.update(
                requests=spent.requests,
                cached=spent.cached,
                prompt_tokens=spent.prompt_tokens,
                completion_tokens=spent.completion_tokens,
            )
        if outcome.status != "ok":
            return
        selection = outcome.selection.verdict if outcome.selection else "none"
        arguments = outcome.arguments_verdict or "none"
        self.selection[selection] += 1
        self.arguments[arguments] += 1
        self.answer[outcome.answer.verdict if outcome.answer else "none"] += 1
        passed = outcome.passed
        if passed is None:
            self.uncertain += 1
        elif passed:
            self.passed += 1
        else:
            self.failed += 1
        for name in ("selection", "arguments"):
            agrees = getattr(outcome.agreement, name)
            if agrees is not None:
                self.agreement[name]["agree" if agrees else "disagree"] += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": every(self.status, ("ok", "judge_error", "skipped")),
            "selection": every(self.selection, _LABEL_NAMES),
            "arguments": every(self.arguments, _LABEL_NAMES),
            "answer": every(self.answer, _LABEL_NAMES),
            "passed": self.passed,
            "failed": self.failed,
            "uncertain": self.uncertain,
            "agreement": {
                name: every(c, ("agree", "disagree")) for name, c in self.agreement.items()
            },
            "requests": self.requests,
            "cached": self.cached,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "escalated": self.escalated,
            "escalation": every(
                self.escalation, ("requests", "cached", "prompt_tokens", "completion_tokens")
            ),
        }

    def print_tables(self, console: Any) -> None:
        from rich.table import Table

        table = Table(title="judge verdicts", title_justify="left")
        table.add_column("")
        columns = ("correct", "incorrect", "uncertain", "none")
        for column in columns:
            table.add_column(column, justify="right")
        rows = [("selection", self.selection), ("arguments", self.arguments)]
        if set(self.answer) - {"none"}:
            rows.append(("answer", self.answer))
        for name, counts in rows:
            table.add_row(name, *(str(counts[c]) for c in columns))
        console.print(table)
        facts = Table(show_header=False)
        facts.add_column()
        facts.add_column(justify="right")
        for label, value in (
            ("judged ok", self.status["ok"]),
            ("judge_error", self.status["judge_error"]),
            ("skipped", self.status["skipped"]),
            ("uncertain (abstained)", self.uncertain),
            ("agreement with checks: selection", _agreement(self.agreement["selection"])),
            ("agreement with checks: arguments", _agreement(self.agreement["arguments"])),
            ("requests sent", self.requests),
            ("answered from cache", self.cached),
            ("prompt tokens", self.prompt_tokens),
            ("completion tokens", self.completion_tokens),
            ("prompt tokens from the server's prompt cache", self.cached_prompt_tokens),
            ("escalated verdicts", self.escalated),
            (
                "escalation: requests / prompt / completion tokens",
                f"{self.escalation['requests']} / {self.escalation['prompt_tokens']} / "
                f"{self.escalation['completion_tokens']}",
            ),
        ):
            facts.add_row(label, str(value))
        console.print(facts)


def every(counts: Counter[str], names: tuple[str, ...]) -> dict[str, int]:
    """Every count, zeros included (in `names` order; any other name after, by count)."""
    every = {name: counts[name] for name in names}
    for name, n in counts.most_common():
        every.setdefault(name, n)
    return every


def _agreement(counts: Counter[str]) -> str:
    total = counts["agree"] + counts["disagree"]
    return "n/a" if not total else f"{counts['agree']}/{total} ({counts['agree'] / total:.0%})"


_LABEL_NAMES = ("correct", "incorrect", "uncertain", "none")
