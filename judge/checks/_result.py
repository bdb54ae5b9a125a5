"""Results: one `CaseResult` per case, with failures from one shared taxonomy."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from judge.checks._env import StateReport
from judge.checks._grounding import UngroundedValue
from judge.checks._kinds import FailureKind
from judge.checks._origins import Origin
from judge.checks._outcome import JudgeOutcome
from judge.checks._trajectory import TrajectoryReport

if TYPE_CHECKING:
    import pandas as pd


class ValueOrigin(BaseModel):
    """Where one argument value (a string or number leaf) of a call was found."""

    model_config = ConfigDict(frozen=True)

    call: int
    path: str
    """JSON pointer into the call's arguments."""
    origin: Origin
    source: str | None
    """JSON pointer of what it was found in: `/messages/3` (a message of the case), followed
    into a JSON result's field (`/messages/3/content/items/0/iban`) or an earlier call's
    arguments (`/messages/2/tool_calls/0/function/arguments/to`); `/tools/1/parameters/...`
    for the tool's schema; null for `nowhere`."""


class InjectionEvidence(BaseModel):
    """A value of a call that only a tool result reading as instructions gave."""

    model_config = ConfigDict(frozen=True)

    call: int
    path: str
    """JSON pointer into the call's arguments."""
    source: str
    """JSON pointer of the tool result (and its field) the value was found in."""
    excerpt: str
    """The instructions, as the result words them (a few hundred characters at most)."""


class Failure(BaseModel):
    """One thing that is wrong, and where."""

    model_config = ConfigDict(frozen=True)

    call: int | None
    """Index of the call in the response's `tool_calls` (with a trajectory, its position in
    `trajectory.calls`); null when no call is at fault."""
    kind: FailureKind
    path: str
    """JSON pointer: into the call's arguments for argument failures (`/order_id`), to the
    expected call for `MissingCall` (`/expected_calls/1`), into the case for `InvalidCase`,
    and "" when the whole call is at fault."""
    message: str


class CallScores(BaseModel):
    """Partial credit: the calls that pair one-to-one with expected calls, name and every
    expected argument right, over the calls made and the calls expected."""

    model_config = ConfigDict(frozen=True)

    matched: int
    precision: float
    """Matched over the calls made (0 when none was made)."""
    recall: float
    """Matched over the expected calls."""
    f1: float
    arguments: float | None = None
    """The share of the paired calls' expected argument leaves that match (a leaf: a value
    holding no object or array, or a matcher), whether or not the call matched whole: partial
    credit per argument; null when no call paired or none expects an argument."""


class JudgedValue(BaseModel):
    """An argument value whose expected value is a `$judge` matcher: code cannot say whether
    it is acceptable; the judge does (`judge grade`)."""

    model_config = ConfigDict(frozen=True)

    call: int
    path: str
    """JSON pointer into the call's arguments."""
    value: Any
    """What the call gave."""
    expected: str
    """The matcher's words: what the value must be."""
    verdict: bool | None = None
    """The judge's: the value is what `expected` says; null until the judge is asked."""
    confidence: float | None = None
    """The judge's confidence in its verdict, where it reports one."""


class CaseResult(BaseModel):
    """The grade of one case. Each check is true, false, or null where it does not apply."""

    model_config = ConfigDict(frozen=True)

    id: str
    tool_selection: bool | None
    """The calls pair one-to-one with the expected calls by name (with a `subset`, `superset`
    or `in_order` match, only the side the mode requires; ignored tools left out); null without
    `expected_calls` (an `ask` / `no_call` case without them is held to no call at all)."""
    schema_valid: bool | None
    """Every call parses and fits its tool's schema; null when there are no calls."""
    argument_values: bool | None
    """Calls match expected calls one-to-one, every expected argument acceptable; null when
    `expected_calls` is absent or empty."""
    passed: bool | None
    """The case's one verdict. The checks': false whenever a call is broken in itself
    (`InvalidJson`, `UnknownName`, `SchemaMismatch`) or the reference fails it; with
    `assert_tools` they must hold too (and alone decide when `expected_calls` is absent).
    A case that expects no call (`expected_behavior: no_call`, or `expected_calls: []`) and
    whose reply makes none and has text passes. Where the checks leave it open (no reference,
    `needs_judge`), the judge's (`judge grade`); null where neither decides (no judge, an
    abstention, `judge_error`). See `decided_by`."""
    tool_assertions: bool | None = None
    """Every `assert_tools` assertion holds; null when the case has none."""
    needs_judge: bool = False
    """`passed` is null because only the judge can decide: the case expects the assistant to
    ask the user (`expected_behavior: ask`), the reply rightly makes no call, and whether its
    text asks is not for code to say. Written only when true."""
    call_scores: CallScores | None = None
    """Partial credit against non-empty `expected_calls`; null otherwise."""
    judge_values: tuple[JudgedValue, ...] = ()
    """The arguments that `$judge` matchers leave to the judge (each a `NeedsJudge` failure
    until it answers), with its verdicts once `judge grade` asked. Written only when any."""
    failures: tuple[Failure, ...] = ()
    judge: JudgeOutcome | None = None
    """The LLM judge's verdicts (`judge grade`); absent from `judge check` results."""
    decided_by: Literal["checks", "judge"] | None = None
    """Who decided `passed` once a judge outcome is attached: the checks (what code proved is
    never overturned), the judge (where the checks left it open), or null (neither). Written
    with a judge outcome; in `judge check` results every non-null `passed` is the checks'."""
    judge_dispute: bool = False
    """The judge's verdict contradicts what the checks decided (kept: a calibration signal or
    a wrong reference, never a pass). Written only when true."""
    value_origins: tuple[ValueOrigin, ...] | None = None
    """Where each string and number argument value came from (`user`, `system`,
    `tool_result`, `assistant`, `schema`, `nowhere`), and the JSON pointer of the place:
    evidence, not a failure. Null where the case could not be read."""
    injection: tuple[InjectionEvidence, ...] | None = None
    """Values (or targets inside them: URLs, e-mail addresses, IBANs, files) that only tool
    results reading as instructions to the assistant gave: evidence of a followed prompt
    injection, not a failure by itself. Null where the case could not be read."""
    evidence_undecided: str | None = None
    """Why `value_origins` and `injection` are null in a case that was read: finding them
    took longer than the case's budget (a few seconds: far more than a megabyte of tool
    results needs), and the case is graded without them rather than held up. Written only
    when set."""
    ungrounded_values: tuple[UngroundedValue, ...] | None = None
    """Argument values the conversation never mentions, the values of origin `nowhere`
    (`judge grade`): evidence, not a failure."""
    trajectory: TrajectoryReport | None = None
    """With a trajectory match mode: the calls graded and how they pair with the reference."""
    final_state: StateReport | None = None
    """With an environment: the states the reference and the candidate reach."""
    case_hash: str | None = None
    """The sha256 of the case graded, as read (`judge grade`): resuming an output reuses a
    result only while its case hashes the same. Written only when set."""
    graded_with: str | None = None
    """A digest of the settings beside the judge that graded the case (`--match`, the
    environment): resuming reuses a result only while they are the same. Written only when
    set."""

    def to_json_dict(self) -> dict[str, Any]:
        """The result as plain JSON data (the JSON Lines format), built without validation."""
        data: dict[str, Any] = {
            "id": self.id,
            "tool_selection": self.tool_selection,
            "schema_valid": self.schema_valid,
            "argument_values": self.argument_values,
            "passed": self.passed,
            "tool_assertions": self.tool_assertions,
            "call_scores": None if self.call_scores is None else self.call_scores.model_dump(),
            "failures": [
                {"call": f.call, "kind": f.kind.value, "path": f.path, "message": f.message}
                for f in self.failures
            ],
        }
        if self.needs_judge:
            data["needs_judge"] = True
        if self.judge_values:
            data["judge_values"] = [v.model_dump() for v in self.judge_values]
        if self.value_origins is not None:
            data["value_origins"] = [o.model_dump() for o in self.value_origins]
        if self.injection is not None:
            data["injection"] = [i.model_dump() for i in self.injection]
        if self.evidence_undecided is not None:
            data["evidence_undecided"] = self.evidence_undecided
        if self.trajectory is not None:
            data["trajectory"] = self.trajectory.model_dump(mode="json")
        if self.final_state is not None:
            data["final_state"] = self.final_state.model_dump(mode="json")
        if self.ungrounded_values is not None:
            data["ungrounded_values"] = [u.model_dump() for u in self.ungrounded_values]
        if self.judge is not None:
            data["judge"] = self.judge.model_dump(mode="json")
            data["decided_by"] = self.decided_by
            if self.judge_dispute:
                data["judge_dispute"] = True
        if self.case_hash is not None:
            data["case_hash"] = self.case_hash
        if self.graded_with is not None:
            data["graded_with"] = self.graded_with
        return data


_CHECK_COLUMNS = ("tool_selection", "schema_valid", "argument_values", "passed", "tool_assertions")


class CheckResults(list[CaseResult]):
    """The results of `check`, in case order."""

    def to_pandas(self) -> pd.DataFrame:
        """One row per case; checks and `passed` (the one verdict) as nullable booleans,
        `decided_by`, `failures` as a list of dicts, `failure_kinds` for filtering,
        `value_origins` and `injection` as lists of dicts (NaN where the case could not be
        read), and the judge's columns (`judge_status`, `judge_passed`, `judge_selection`,
        `judge_arguments`, `judge_dispute`; null without a judge)."""
        import pandas as pd

        rows = [r.to_json_dict() for r in self]
        for row, result in zip(rows, self, strict=True):
            row["failure_kinds"] = sorted({f["kind"] for f in row["failures"]})
            row["call_f1"] = row["call_scores"]["f1"] if row["call_scores"] else None
            row["decided_by"] = _decided_by(result)
            row["judge_dispute"] = result.judge_dispute
            judge = result.judge
            row["judge_status"] = judge.status if judge is not None else None
            row["judge_passed"] = judge.passed if judge is not None else None
            row["judge_selection"] = judge.selection.verdict if judge and judge.selection else None
            row["judge_arguments"] = judge.arguments_verdict if judge is not None else None
        columns = ["id", *_CHECK_COLUMNS, "decided_by", "call_f1", "failures", "failure_kinds"]
        columns += ["value_origins", "injection", *_JUDGE_COLUMNS]
        frame = pd.DataFrame(rows, columns=columns)
        booleans = (*_CHECK_COLUMNS, "judge_dispute", "judge_passed")
        return frame.astype(dict.fromkeys(booleans, "boolean"))


_JUDGE_COLUMNS = (
    "judge_status",
    "judge_passed",
    "judge_selection",
    "judge_arguments",
    "judge_dispute",
)


def _decided_by(result: CaseResult) -> str | None:
    """`decided_by`, with a `judge check` result's non-null `passed` the checks'."""
    if result.judge is None and result.passed is not None:
        return "checks"
    return result.decided_by
