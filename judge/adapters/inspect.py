"""An Inspect AI scorer: `tool_call_scorer()` grades the tool calls a sample's assistant turns
made, against the tools the task offered.

    from judge.adapters.inspect import tool_call_scorer

    Task(
        dataset=[Sample(input="Weather in Paris?",
                        target='[{"name": "get_weather", "arguments": {"city": "Paris"}}]')],
        solver=[use_tools(get_weather()), generate(tool_calls="none")],
        scorer=tool_call_scorer(),
    )

The expected calls are `metadata["expected_calls"]`, else the target as JSON (`[]`: no call).
With neither, only well-formedness can be graded: the score is CORRECT / INCORRECT on
`schema_valid`, or unscored when there are no calls either. A sample whose pieces cannot be
read (malformed expected calls, say) is INCORRECT. The full result is the score's metadata;
failures are its explanation.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessageAssistant
from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Score,
    Scorer,
    Target,
    accuracy,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState
from inspect_ai.tool import ToolDef, ToolInfo

from judge.adapters._grading import check_calls, describe, verdict
from judge.cases._json import DecodeError, dumps, loads
from judge.checks._rules import Rules


@scorer(metrics=[accuracy(), stderr()])
def tool_call_scorer(rules: Rules | None = None) -> Scorer:
    """CORRECT when the calls are well formed and match the expected calls."""

    async def score(state: TaskState, target: Target) -> Score:
        calls: list[dict[str, Any]] = []
        texts: list[str] = []
        for message in state.messages:
            if isinstance(message, ChatMessageAssistant):
                texts.append(message.text)
                calls.extend(
                    _call(c.function, c.arguments, c.parse_error) for c in message.tool_calls or []
                )
        result = check_calls(
            {"content": texts[-1] if texts else None, "tool_calls": calls},
            tools=[_tool(t) for t in state.tools],
            expected_calls=_expected(state, target),
            messages=[
                {"role": m.role, "content": m.text}
                for m in state.messages
                if not isinstance(m, ChatMessageAssistant)
            ],
            case_id=str(state.sample_id),
            rules=rules,
        )
        answer = ", ".join(c["name"] for c in calls) or "(no call)"
        passed = verdict(result)
        if passed is None:
            return Score.unscored(
                reason="nothing to grade: no calls and no expected calls",
                answer=answer,
                explanation=describe(result),
                metadata=result.to_json_dict(),
            )
        return Score(
            value=CORRECT if passed else INCORRECT,
            answer=answer,
            explanation=describe(result),
            metadata=result.to_json_dict(),
        )

    return score


def _call(name: str, arguments: dict[str, Any], parse_error: str | None) -> dict[str, Any]:
    # Inspect keeps parsed arguments only; an unparseable payload survives in its error text,
    # which is not JSON either, so it is graded as InvalidJson.
    raw = parse_error if parse_error else dumps(arguments).decode()
    return {"name": name, "arguments": raw}


def _tool(tool: Any) -> dict[str, Any]:
    info = tool if isinstance(tool, ToolInfo | ToolDef) else ToolDef(tool)
    return {
        "name": info.name,
        "description": info.description,
        "parameters": info.parameters.model_dump(exclude_none=True),
    }


def _expected(state: TaskState, target: Target) -> Any:
    if "expected_calls" in (state.metadata or {}):
        return state.metadata["expected_calls"]
    if not target.text.strip():
        return None
    try:
        return loads(target.text)
    except DecodeError:
        raise ValueError(
            f"sample {state.sample_id!r}: the target must be JSON expected calls "
            f'(e.g. [{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}]), got '
            f"{target.text[:80]!r}"
        ) from None
