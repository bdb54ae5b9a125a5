"""Grade the tool calls of LLM agents.

from judge import load_cases, check
results = check("cases.jsonl")
frame = results.to_pandas()
"""

import importlib
from typing import TYPE_CHECKING, Any

from judge._calls import Response, ToolCall
from judge._case import Case, ExpectedCall, Labels, Tool
from judge._check import check, check_case, iter_check
from judge._env import (
    Environment,
    StateDiff,
    StateEnvironment,
    StateReport,
    ToolFailed,
    replay,
)
from judge._errors import CaseError, InputError, JudgeError
from judge._grounding import UngroundedValue
from judge._loading import LoadedCases, iter_cases, load_cases
from judge._match import Match
from judge._repeats import RepeatStats, pass_at_k, pass_hat_k, repeat_stats
from judge._result import CaseResult, CheckResults, Failure, FailureKind
from judge._rubric import Rubric, RubricError, RubricSet, load_rubrics
from judge._trajectory import TrajectoryReport
from judge._values import ArgumentRule, Rules, json_equal
from judge._verdict import (
    Agreement,
    ArgumentVerdict,
    JudgeOutcome,
    Provenance,
    RubricRef,
    SelectionVerdict,
    Usage,
)

# What needs the OpenAI SDK, numpy statistics or FastAPI is imported on first use, so that
# `import judge` and `judge check` start in a fraction of the time.
_LAZY = {
    "JudgeEndpointError": "judge._client",
    "RetryPolicy": "judge._retry",
    "Judge": "judge._grade",
    "ReplyError": "judge._grade",
    "grade": "judge._grade",
    "Comparison": "judge._compare",
    "ModelStats": "judge._compare",
    "PairedDifference": "judge._compare",
    "compare_runs": "judge._compare",
    "RunRecord": "judge._runs",
    "read_runs": "judge._runs",
    "json_schema": "judge._schema",
    "create_app": "judge._service",
    "Limits": "judge._service_body",
}

if TYPE_CHECKING:
    from judge._client import JudgeEndpointError
    from judge._compare import Comparison, ModelStats, PairedDifference, compare_runs
    from judge._grade import Judge, ReplyError, grade
    from judge._retry import RetryPolicy
    from judge._runs import RunRecord, read_runs
    from judge._schema import json_schema
    from judge._service import create_app
    from judge._service_body import Limits

__all__ = [
    "Agreement",
    "Environment",
    "Match",
    "RepeatStats",
    "StateDiff",
    "StateEnvironment",
    "StateReport",
    "ToolFailed",
    "TrajectoryReport",
    "ArgumentRule",
    "ArgumentVerdict",
    "Case",
    "CaseError",
    "CaseResult",
    "CheckResults",
    "Comparison",
    "ModelStats",
    "PairedDifference",
    "RunRecord",
    "ExpectedCall",
    "Failure",
    "FailureKind",
    "InputError",
    "Judge",
    "JudgeEndpointError",
    "JudgeError",
    "JudgeOutcome",
    "Labels",
    "LoadedCases",
    "Provenance",
    "ReplyError",
    "Response",
    "RetryPolicy",
    "Rubric",
    "RubricError",
    "RubricRef",
    "RubricSet",
    "Rules",
    "SelectionVerdict",
    "Tool",
    "ToolCall",
    "UngroundedValue",
    "Usage",
    "check",
    "pass_at_k",
    "pass_hat_k",
    "repeat_stats",
    "replay",
    "check_case",
    "compare_runs",
    "read_runs",
    "grade",
    "iter_cases",
    "iter_check",
    "json_equal",
    "json_schema",
    "create_app",
    "Limits",
    "load_cases",
    "load_rubrics",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'judge' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
