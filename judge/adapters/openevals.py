"""An openevals / LangSmith evaluator: `(inputs, outputs, reference_outputs) -> {key, score,
comment}`, like openevals' own trajectory match evaluators.

    from judge.adapters.openevals import create_tool_call_evaluator

    evaluator = create_tool_call_evaluator(tools=TOOLS)
    evaluator(
        inputs={"messages": [{"role": "user", "content": "Weather in Paris?"}]},
        outputs=assistant_message,            # or a list of messages (every call counts)
        reference_outputs=[{"name": "get_weather", "arguments": {"city": "Paris"}}],
    )  # {"key": "tool_calls", "score": True, "comment": "case ... passed: ...", "metadata": ...}

`outputs` is an OpenAI (or LangChain) assistant message, a list of messages, `{"messages":
[...]}`, or any response shape `judge check` reads. `reference_outputs` is the expected calls,
`{"expected_calls": [...]}`, or a reference trajectory of messages (its tool calls are expected);
absent means unknown, so only well-formedness is graded: `score` says whether the calls are well
formed, and is None when there are no calls either. A case that cannot be read scores False.
The tools offered come from the factory (`tools=`) or `inputs["tools"]`; with neither, the
evaluator raises `ValueError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from judge.adapters._grading import check_calls, describe, verdict
from judge.checks._rules import Rules

Evaluator = Callable[..., dict[str, Any]]


def create_tool_call_evaluator(
    *, tools: Any = None, rules: Rules | None = None, key: str = "tool_calls"
) -> Evaluator:
    """An evaluator that grades the tool calls in `outputs` against `reference_outputs`.
    `tools` (OpenAI, Responses or Anthropic form; `[]`: none offered) may instead come in
    each call's `inputs["tools"]`."""

    def evaluator(
        *,
        inputs: Any = None,
        outputs: Any,
        reference_outputs: Any = None,
        **kwargs: Any,
    ) -> dict[str, Any]:
        given = inputs if isinstance(inputs, dict) else {}
        offered = tools if tools is not None else given.get("tools")
        if offered is None:
            raise ValueError(
                f"evaluator {key!r}: no tools to grade the calls against; pass "
                "create_tool_call_evaluator(tools=...) or inputs={'tools': [...], ...} "
                "([] when no tool was offered)"
            )
        messages = _messages(inputs)
        result = check_calls(
            _response(outputs),
            tools=offered,
            expected_calls=_expected(reference_outputs),
            messages=[m for m in messages or [] if isinstance(m, dict)],
            case_id=str(given.get("id", key)),
            rules=rules,
            assert_tools=(
                reference_outputs.get("assert_tools")
                if isinstance(reference_outputs, dict)
                else None
            ),
        )
        return {
            "key": key,
            "score": verdict(result),
            "comment": describe(result),
            "metadata": result.to_json_dict(),
        }

    return evaluator


def _messages(value: Any) -> list[Any] | None:
    if isinstance(value, dict) and "messages" in value:
        value = value["messages"]
    if isinstance(value, list | tuple) and any(_is_langchain(m) for m in value):
        from langchain_core.messages import convert_to_openai_messages

        converted: list[Any] = convert_to_openai_messages(list(value))
        return converted
    return list(value) if isinstance(value, list | tuple) else None


def _response(outputs: Any) -> Any:
    if _is_langchain(outputs):
        outputs = [outputs]
    messages = _messages(outputs)
    if messages is None or not all(isinstance(m, dict) and "role" in m for m in messages):
        return outputs  # a message, a completion, a list of calls: the loader reads it
    # A trajectory: every assistant call counts, in order; the text is the last reply's.
    calls = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    texts = [m.get("content") for m in messages if m.get("role") == "assistant"]
    return {"content": texts[-1] if texts else None, "tool_calls": calls}


def _expected(reference: Any) -> Any:
    if reference is None:
        return None
    if isinstance(reference, dict) and "expected_calls" in reference:
        return reference["expected_calls"]
    if isinstance(reference, dict) and "assert_tools" in reference and "messages" not in reference:
        return None  # only assertions: no expected calls
    messages = _messages(reference)
    if messages and all(isinstance(m, dict) and "role" in m for m in messages):
        return [
            c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []
        ]
    return reference


def _is_langchain(value: Any) -> bool:
    return type(value).__module__.startswith("langchain_core.")
