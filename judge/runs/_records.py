"""The runs file: one line per (model, case, run), read back for resuming, re-grading and
comparing. The file is only appended to while a run goes on; a later line for the same
(model, case_id, run) replaces an earlier one (a re-graded or retried response)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from judge._errors import InputError
from judge.cases._files import write_atomically
from judge.cases._json import dumps
from judge.cases._loading import first_error
from judge.checks._outcome import JudgeOutcome
from judge.checks._result import CallScores, CaseResult, Failure

Key = tuple[str, str, int]


class RunRecord(BaseModel):
    """One candidate response and its grade."""

    model_config = ConfigDict(frozen=True)

    model: str
    case_id: str
    run: int
    """1-based."""
    response: Any = None
    """The chat completion exactly as the endpoint returned it; null after a failed request.
    An agent run's is its last request's."""
    transcript: list[dict[str, Any]] | None = None
    """An agent run's messages added after the case's own (assistant turns with the calls
    made, a `tool` message answering each); null for a single request."""
    steps: int | None = None
    """An agent run's requests to the candidate."""
    stop: Literal["answer", "step_limit"] | None = None
    """Why an agent run ended: a reply without calls, or `--max-steps` reached."""
    final_answer: str | None = None
    """The text an agent run ends with (null at the step limit)."""
    final_state: Any = None
    """The environment's snapshot when the agent run ended (null without an environment)."""
    tool_errors: tuple[dict[str, Any], ...] = ()
    """Calls of an agent run that failed in the environment: `{"call", "name", "message"}`."""
    requests: tuple[dict[str, Any], ...] | None = None
    """An agent run's requests, each `{"usage", "latency_s", "attempts", "cost_usd"}`; the
    record's `usage`, `latency_s`, `attempts` and `cost_usd` are their sums."""
    tool_selection: bool | None = None
    schema_valid: bool | None = None
    argument_values: bool | None = None
    passed: bool | None = None
    tool_assertions: bool | None = None
    call_scores: CallScores | None = None
    failures: tuple[Failure, ...] = ()
    judge: JudgeOutcome | None = None
    """The LLM judge's verdicts, when grading with the judge was asked."""
    decided_by: Literal["checks", "judge"] | None = None
    """Who decided `passed` (as in a `CaseResult`): written with a judge outcome."""
    judge_dispute: bool = False
    """The judge contradicts what the checks decided (written only when true)."""
    undecided: str | None = None
    """Why a graded response's `passed` is null when its case has nothing to grade it by
    (written only then)."""
    usage: dict[str, Any] | None = None
    """The endpoint's token counts, as returned."""
    latency_s: float | None = None
    cost_usd: float | None = None
    """From the endpoint's per-token prices; null when it gives none."""
    error: str | None = None
    """Why there is no answer to grade: the request failed for good (`response` null), or the
    endpoint reported an error in a 200 reply (kept in `response`). `passed` is then null."""
    calls_from_content: bool = False
    """The calls were read from JSON text in the reply's content (the embedded model)."""
    attempts: int = 1
    batch: str | None = None
    """The provider batch that answered the request (`judge run --batch`)."""
    settings: dict[str, Any] | None = None
    """The settings agreed for the whole run, the same in every record of it: every request
    field but model, messages and tools (a case without tools is sent without `tool_choice`;
    `seed` is run 1's, run r was sent `seed + r - 1`), and for agent runs the loop's
    `max_steps`, `env` and `agent`."""
    case_hash: str | None = None
    """The sha256 of the case the record was asked and graded with (by `judge regrade`: graded
    against). Resuming asks again a record whose case hashes otherwise now."""
    ended_by: Literal["user", "runner"] | None = None
    """With a simulated user: who ended the run (the agent cannot end one: `runner` is the
    turn or step limit, or an error)."""
    end_reason: str | None = None
    """With a simulated user: why the run ended, in words."""
    user: dict[str, Any] | None = None
    """With a simulated user: its model, turns, closing line, cached turns, usage, latency,
    and the turns at which it called a tool (`judge.runs._user_run`)."""
    turn_verdicts: tuple[dict[str, Any], ...] = ()
    """With a simulated user and a judge: the judge's selection verdict on the agent's reply
    to each user turn, `{"turn", "verdict", "category", "confidence"}` (turn 0: the opening)."""
    user_faults: tuple[dict[str, Any], ...] = ()
    """The simulated user's mistakes found: `{"kind", "turn", "detail"}`."""
    user_error: str | None = None
    """Why the run is the simulator's failure, not the agent's: then `passed` is null and the
    run is reported apart, out of the agent's pass rate."""
    graded_with: str | None = None
    """A digest of what graded the record beside its case: the judge's fingerprint, the match
    settings, the environment, the models whose reply text was read for calls. `judge regrade`
    resumes its output's records only while it is the same."""

    @property
    def key(self) -> Key:
        return (self.model, self.case_id, self.run)

    def graded(self, result: CaseResult, undecided: str | None = None) -> RunRecord:
        """This record with the grade of `result` (checks, and the judge when it has one), and
        why it is undecided where nothing could grade it."""
        update: dict[str, Any] = {
            "tool_selection": result.tool_selection,
            "schema_valid": result.schema_valid,
            "argument_values": result.argument_values,
            "passed": result.passed,
            "tool_assertions": result.tool_assertions,
            "call_scores": result.call_scores,
            "failures": result.failures,
            "undecided": undecided if result.passed is None else None,
        }
        if result.judge is not None:
            update |= {
                "judge": result.judge,
                "decided_by": result.decided_by,
                "judge_dispute": result.judge_dispute,
            }
        return self.model_copy(update=update)

    def to_json_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model": self.model,
            "case_id": self.case_id,
            "run": self.run,
            "response": self.response,
        }
        if self.transcript is not None:
            data |= {
                "transcript": self.transcript,
                "steps": self.steps,
                "stop": self.stop,
                "final_answer": self.final_answer,
                "final_state": self.final_state,
                "tool_errors": list(self.tool_errors),
                "requests": list(self.requests or ()),
            }
        if self.user is not None:
            data |= {"ended_by": self.ended_by, "end_reason": self.end_reason, "user": self.user}
        data |= {
            "tool_selection": self.tool_selection,
            "schema_valid": self.schema_valid,
            "argument_values": self.argument_values,
            "passed": self.passed,
            "tool_assertions": self.tool_assertions,
            "call_scores": None if self.call_scores is None else self.call_scores.model_dump(),
            "failures": [f.model_dump(mode="json") for f in self.failures],
        }
        if self.judge is not None:
            data["judge"] = self.judge.model_dump(mode="json")
            data["decided_by"] = self.decided_by
            if self.judge_dispute:
                data["judge_dispute"] = True
        if self.undecided is not None:
            data["undecided"] = self.undecided
        if self.user is not None:
            if self.turn_verdicts:
                data["turn_verdicts"] = list(self.turn_verdicts)
            data["user_faults"] = list(self.user_faults)
            data["user_error"] = self.user_error
        data |= {"usage": self.usage, "latency_s": self.latency_s, "cost_usd": self.cost_usd}
        if self.error is not None:
            data["error"] = self.error
        if self.calls_from_content:
            data["calls_from_content"] = True
        if self.batch is not None:
            data["batch"] = self.batch
        data |= {"attempts": self.attempts, "settings": self.settings}
        if self.case_hash is not None:
            data["case_hash"] = self.case_hash
        if self.graded_with is not None:
            data["graded_with"] = self.graded_with
        return data

    def line(self) -> bytes:
        return dumps(self.to_json_dict()) + b"\n"


def read_runs(path: str | Path) -> list[RunRecord]:
    """The records of a runs file, the last one of each (model, case_id, run) kept, in file
    order. A last line cut short by an interruption is skipped with a warning; any other line
    that is not a run record raises `InputError` (a cases or results file is not a runs file,
    and must never be rewritten as one)."""
    path = Path(path)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise InputError(f"{path}: cannot read runs: {exc.strerror or exc}") from None
    latest: dict[Key, RunRecord] = {}
    cut: tuple[int, str] | None = None  # an unparseable line: fine only if it is the last
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            if cut is not None:  # a bad line with more after it was not cut by a crash
                raise InputError(_not_a_record(path, cut[0], f"not JSON: {cut[1]}"))
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                cut = (number, str(exc))
                continue
            try:
                record = RunRecord.model_validate(data)
            except ValidationError as exc:
                raise InputError(_not_a_record(path, number, first_error(exc))) from None
            latest.pop(record.key, None)  # re-inserted: file order follows the latest line
            latest[record.key] = record
    if cut is not None:
        print(f"judge: {path}:{cut[0]}: skipped a last line cut short: {cut[1]}", file=sys.stderr)
    return list(latest.values())


def _not_a_record(path: Path, number: int, why: str) -> str:
    return (
        f"{path}:{number}: not a run record ({why}): a runs file holds the lines `judge run` "
        "writes, and only its last line may be cut short"
    )


def compact(path: str | Path, records: Iterable[RunRecord]) -> None:
    """Rewrite `path` to hold exactly `records` (atomically: a crash keeps the old file)."""
    write_atomically(path, b"".join(record.line() for record in records))
