"""The failure taxonomy every check and the judge share (free of the models)."""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """Why a call (or a case) failed. Shared by the deterministic checks and the judge."""

    INVALID_JSON = "InvalidJson"
    """The arguments are not JSON, or not a JSON object."""
    UNKNOWN_NAME = "UnknownName"
    """The name is not among the case's tools (exact match)."""
    SCHEMA_MISMATCH = "SchemaMismatch"
    """The arguments break the tool's own JSON Schema (Draft 7)."""
    INVALID_SCHEMA = "InvalidSchema"
    """The tool's own schema is broken, so its calls cannot be validated."""
    MISSING_CALL = "MissingCall"
    """An expected call was not made."""
    UNEXPECTED_CALL = "UnexpectedCall"
    """A call was made that was not expected (any call when none was)."""
    WRONG_TOOL = "WrongTool"
    """As many calls as expected, but a name differs."""
    WRONG_VALUE = "WrongValue"
    """An argument's value is not an acceptable one."""
    MISSING_ARGUMENT = "MissingArgument"
    """An expected, non-optional argument was left out."""
    WRONG_ORDER = "WrongOrder"
    """`strict` trajectories: a call matches a reference call but comes in another order."""
    STATE_MISMATCH = "StateMismatch"
    """Replayed into an environment, the calls reach another state than the reference's."""
    REQUIRED_TOOL_MISSING = "RequiredToolMissing"
    """`assert_tools.called`: a tool that must be called was not."""
    FORBIDDEN_CALL = "ForbiddenCall"
    """`assert_tools.avoided`: a tool that must be avoided was called."""
    CALL_COUNT = "CallCount"
    """`assert_tools.counts` / `max_calls`: a tool (or all tools) called too often or too few
    times."""
    STEP_LIMIT = "StepLimit"
    """An agent run reached `--max-steps` with the candidate still calling tools."""
    TRUNCATED = "Truncated"
    """A candidate's reply stopped at its token limit (`finish_reason: length`): its calls or
    its text may be incomplete, whatever the other checks found."""
    EMPTY_REPLY = "EmptyReply"
    """A case that expects the assistant to ask the user (`expected_behavior: ask`) or to answer
    without a call (`no_call`), whose reply makes no call and has no text either."""
    NEEDS_JUDGE = "NeedsJudge"
    """An argument whose expected value is a `$judge` matcher: only the judge can say whether
    it is acceptable (`judge grade` asks it; `judge check` leaves the case undecided)."""
    INVALID_CASE = "InvalidCase"
    """The case itself could not be read (or its reference not replayed); nothing was graded."""
