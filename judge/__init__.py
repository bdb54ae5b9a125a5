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

from judge import _core
from judge._errors import CaseError, CaseFileWarning, InputError, JudgeError, UnknownFieldWarning

_core.choose()  # the compiled core only where it was built from the sources beside it

# Every name is imported on first use, so that `import judge` and `judge check` start in a
# fraction of the time: what needs the OpenAI SDK, Jinja, numpy statistics or FastAPI, and the
# pydantic models, which the check path reads without.
_LAZY = {
    "Response": "judge.cases._calls",
    "ToolCall": "judge.cases._calls",
    "Case": "judge.cases._case",
    "ExpectedCall": "judge.cases._case",
    "Labels": "judge.cases._case",
    "Tool": "judge.cases._case",
    "LoadedCases": "judge.cases._loading",
    "iter_cases": "judge.cases._loading",
    "load_cases": "judge.cases._loading",
    "Match": "judge.cases._match",
    "check": "judge.checks._check",
    "check_case": "judge.checks._check",
    "iter_check": "judge.checks._check",
    "Environment": "judge.checks._env",
    "StateDiff": "judge.checks._env",
    "StateEnvironment": "judge.checks._env",
    "StateReport": "judge.checks._env",
    "ToolFailed": "judge.checks._env",
    "replay": "judge.checks._env",
    "UngroundedValue": "judge.checks._grounding",
    "FailureKind": "judge.checks._kinds",
    "Summary": "judge.checks._summary",
    "summarize": "judge.checks._summary",
    "Agreement": "judge.checks._outcome",
    "ArgumentVerdict": "judge.checks._outcome",
    "JudgeOutcome": "judge.checks._outcome",
    "Provenance": "judge.checks._outcome",
    "RubricRef": "judge.checks._outcome",
    "SelectionVerdict": "judge.checks._outcome",
    "Usage": "judge.checks._outcome",
    "CaseResult": "judge.checks._result",
    "CheckResults": "judge.checks._result",
    "Failure": "judge.checks._result",
    "TrajectoryReport": "judge.checks._trajectory",
    "ArgumentRule": "judge.checks._rules",
    "Rules": "judge.checks._rules",
    "json_equal": "judge.checks._values",
    "RepeatStats": "judge.runs._repeats",
    "pass_at_k": "judge.runs._repeats",
    "pass_hat_k": "judge.runs._repeats",
    "repeat_stats": "judge.runs._repeats",
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
    "Estimate": "judge.calibrate._estimate",
    "estimate": "judge.calibrate._estimate",
}

if TYPE_CHECKING:
    from judge.calibrate._estimate import Estimate, estimate
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
    from judge.checks._kinds import FailureKind
    from judge.checks._outcome import (
        Agreement,
        ArgumentVerdict,
        JudgeOutcome,
        Provenance,
        RubricRef,
        SelectionVerdict,
        Usage,
    )
    from judge.checks._result import CaseResult, CheckResults, Failure
    from judge.checks._rules import ArgumentRule, Rules
    from judge.checks._summary import Summary, summarize
    from judge.checks._trajectory import TrajectoryReport
    from judge.checks._values import json_equal
    from judge.endpoints._client import JudgeEndpointError
    from judge.endpoints._retry import RetryPolicy
    from judge.judging._grade import Judge, ReplyError, grade
    from judge.judging._rubric import Rubric, RubricError, RubricSet, load_rubrics
    from judge.runs._compare import Comparison, ModelStats, PairedDifference, compare_runs
    from judge.runs._records import RunRecord, read_runs
    from judge.runs._repeats import RepeatStats, pass_at_k, pass_hat_k, repeat_stats
    from judge.service._app import create_app
    from judge.service._body import Limits
    from judge.service._schema import json_schema

__all__ = [
    "Agreement",
    "Environment",
    "Estimate",
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
    "CaseFileWarning",
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
    "Summary",
    "Tool",
    "ToolCall",
    "UngroundedValue",
    "UnknownFieldWarning",
    "Usage",
    "check",
    "estimate",
    "pass_at_k",
    "pass_hat_k",
    "repeat_stats",
    "replay",
    "summarize",
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


_SUBPACKAGES = frozenset(
    ("cases", "endpoints", "checks", "adapters", "judging", "calibrate", "runs", "service", "cli")
)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


if not TYPE_CHECKING:  # for a type checker, a misspelt name stays an error

    def __getattr__(name: str) -> Any:
        if name in _SUBPACKAGES:  # `judge.checks` without importing it first
            return importlib.import_module(f"judge.{name}")
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'judge' has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        globals()[name] = value
        return value
