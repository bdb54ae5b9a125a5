"""Grade the tool calls of LLM agents.

    from judge import check, load_cases
    results = check("cases.jsonl")
    frame = results.to_pandas()

The package is layered, one way down: each layer imports only the layers listed before it.
In the order data flows:

- `judge.cases`: the case model, every response shape, loaders (JSONL, DataFrame, BFCL);
- `judge.endpoints`: OpenAI-compatible clients, the one retry policy, the embedded model;
- `judge.checks`: deterministic checks (structure, values, trajectories, final state,
  grounding) and the result record;
- `judge.adapters`: the checks inside pytest, promptfoo, openevals/LangSmith and Inspect;
- `judge.judging`: the LLM judge (rubrics, questions, replies, cache, the pipeline);
- `judge.calibrate`: kappa against hand labels, samples, labelling, the gate;
- `judge.runs`: many candidate models on the same cases, and their comparison;
- `judge.service`: the HTTP service and the published JSON Schemas;
- `judge.cli`: the command line.

`judge._errors` (the exception tree) sits under them all. This module is the public API;
what needs the OpenAI SDK, numpy statistics or FastAPI loads on first use.
"""

import importlib
from typing import TYPE_CHECKING, Any

from judge._errors import CaseError, InputError, JudgeError
from judge.cases._calls import Response, ToolCall
from judge.cases._case import Case, ExpectedCall, Labels, Tool
from judge.cases._loading import LoadedCases, iter_cases, load_cases
from judge.cases._match import Match
from judge.checks._check import check, check_case, iter_check
from judge.checks._env import (
    Environment,
    StateDiff,
    StateEnvironment,
    StateReport,
    ToolFailed,
    replay,
)
from judge.checks._grounding import UngroundedValue
from judge.checks._outcome import (
    Agreement,
    ArgumentVerdict,
    JudgeOutcome,
    Provenance,
    RubricRef,
    SelectionVerdict,
    Usage,
)
from judge.checks._result import CaseResult, CheckResults, Failure, FailureKind
from judge.checks._trajectory import TrajectoryReport
from judge.checks._values import ArgumentRule, Rules, json_equal
from judge.runs._repeats import RepeatStats, pass_at_k, pass_hat_k, repeat_stats

# What needs the OpenAI SDK, Jinja, numpy statistics or FastAPI is imported on first use, so that
# `import judge` and `judge check` start in a fraction of the time.
_LAZY = {
    "JudgeEndpointError": "judge.endpoints._client",
    "RetryPolicy": "judge.endpoints._retry",
    "Judge": "judge.judging._grade",
    "Rubric": "judge.judging._rubric",
    "RubricError": "judge.judging._rubric",
    "RubricSet": "judge.judging._rubric",
    "load_rubrics": "judge.judging._rubric",
    "ReplyError": "judge.judging._grade",
    "grade": "judge.judging._grade",
    "Comparison": "judge.runs._compare",
    "ModelStats": "judge.runs._compare",
    "PairedDifference": "judge.runs._compare",
    "compare_runs": "judge.runs._compare",
    "RunRecord": "judge.runs._records",
    "read_runs": "judge.runs._records",
    "json_schema": "judge.service._schema",
    "create_app": "judge.service._app",
    "Limits": "judge.service._body",
}

if TYPE_CHECKING:
    from judge.endpoints._client import JudgeEndpointError
    from judge.endpoints._retry import RetryPolicy
    from judge.judging._grade import Judge, ReplyError, grade
    from judge.judging._rubric import Rubric, RubricError, RubricSet, load_rubrics
    from judge.runs._compare import Comparison, ModelStats, PairedDifference, compare_runs
    from judge.runs._records import RunRecord, read_runs
    from judge.service._app import create_app
    from judge.service._body import Limits
    from judge.service._schema import json_schema

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
