"""A promptfoo Python assertion (`type: python`, `value: file://...`).

promptfoo calls `get_assert(output, context)` with the provider's output (text, or the tool
calls it parsed) and an assertion context; this returns promptfoo's GradingResult dict
`{"pass", "score", "reason", "namedScores"}`. The tools and the expected calls are read from
the assertion's `config`, else from the test's `vars` (JSON text is decoded):

    # promptfooconfig.yaml
    tests:
      - vars: {city: Paris}
        assert:
          - type: python
            value: file://judge_assert.py  # from judge.adapters.promptfoo import get_assert
            config:
              tools: file://tools.json         # or inline, as OpenAI tools
              expected_calls: [{name: get_weather, arguments: {city: Paris}}]   # [] = no call
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from judge.adapters._grading import CHECKS, check_calls, describe, verdict
from judge.cases._json import maybe_json


def get_assert(output: Any, context: Mapping[str, Any]) -> dict[str, Any]:
    """Grade the provider's tool calls; a GradingResult dict for promptfoo."""
    config = context.get("config") or {}
    variables = context.get("vars") or {}

    def setting(name: str) -> Any:
        return maybe_json(config[name] if name in config else variables.get(name))

    messages = setting("messages")
    if messages is None and isinstance(context.get("prompt"), str):
        prompt = maybe_json(context["prompt"])  # a chat prompt arrives as JSON text
        messages = prompt if isinstance(prompt, list) else [{"role": "user", "content": prompt}]
    result = check_calls(
        maybe_json(output),
        tools=setting("tools"),
        expected_calls=setting("expected_calls"),
        messages=messages,
        case_id=str(variables.get("id") or context.get("test", {}).get("description") or "case"),
        assert_tools=setting("assert_tools"),
    )
    named = {name: float(value) for name in CHECKS if (value := getattr(result, name)) is not None}
    if result.call_scores is not None:
        named["call_f1"] = result.call_scores.f1
    passed = verdict(result)
    if passed is None:
        reason = (
            "nothing to grade: no tool calls, and no expected_calls in the assertion's "
            "config or the test's vars ([] asserts that no tool is called)"
        )
        return {"pass": False, "score": 0.0, "reason": reason, "namedScores": named}
    return {
        "pass": passed,
        "score": 1.0 if passed else 0.0,
        "reason": describe(result),
        "namedScores": named,
    }
