"""Grade the tool calls of LLM agents.

from judge import load_cases, check
results = check("cases.jsonl")
frame = results.to_pandas()
"""

from judge._calls import Response, ToolCall
from judge._case import Case, ExpectedCall, Labels, Tool
from judge._check import check, check_case, iter_check
from judge._errors import CaseError, InputError, JudgeError
from judge._loading import LoadedCases, iter_cases, load_cases
from judge._result import CaseResult, CheckResults, Failure, FailureKind
from judge._values import ArgumentRule, Rules, json_equal

__all__ = [
    "ArgumentRule",
    "Case",
    "CaseError",
    "CaseResult",
    "CheckResults",
    "ExpectedCall",
    "Failure",
    "FailureKind",
    "InputError",
    "JudgeError",
    "Labels",
    "LoadedCases",
    "Response",
    "Rules",
    "Tool",
    "ToolCall",
    "check",
    "check_case",
    "iter_cases",
    "iter_check",
    "json_equal",
    "load_cases",
]
