"""The JSON Schemas the judge's replies must fit (strict-mode compatible): reasoning first,
labels constrained to the verdict types' enums; and a `$judge` value's verdict, a bare yes or
no."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from judge.checks._outcome import (
    ANSWER_CATEGORIES,
    ARGUMENT_PROBLEMS,
    SELECTION_CATEGORIES,
    TRAJECTORY_PROBLEMS,
)

ACTIONS = ("call_tool", "ask_user", "answer_directly")


def selection_schema(max_reasoning: int | None, decide_action: bool = False) -> dict[str, Any]:
    """The JSON Schema the judge's selection reply must fit (strict-mode compatible). With
    `decide_action`, the needed and the taken action come before the verdict."""
    actions = {"type": "string", "enum": list(ACTIONS)}
    return _object(
        {
            "reasoning": _text(max_reasoning),
            **({"needed_action": actions, "assistant_action": actions} if decide_action else {}),
            "verdict": {"type": "string", "enum": ["correct", "incorrect"]},
            "category": {"type": "string", "enum": list(SELECTION_CATEGORIES)},
        }
    )


def arguments_schema(calls: list[int], max_reasoning: int | None) -> dict[str, Any]:
    """The reply schema for argument verdicts on exactly these calls, one each."""
    item = _object(
        {
            "call": {"type": "integer", "enum": calls},
            "reasoning": _text(max_reasoning),
            "verdict": {"type": "string", "enum": ["correct", "incorrect", "not_applicable"]},
            "problems": {
                "type": "array",
                "items": {"type": "string", "enum": list(ARGUMENT_PROBLEMS)},
            },
        }
    )
    verdicts = {"type": "array", "items": item, "minItems": len(calls), "maxItems": len(calls)}
    return _object({"verdicts": verdicts})


def trajectory_schema(max_reasoning: int | None) -> dict[str, Any]:
    """The reply schema of a trajectory verdict."""
    return _object(
        {
            "reasoning": _text(max_reasoning),
            "verdict": {"type": "string", "enum": ["correct", "incorrect"]},
            "problems": {
                "type": "array",
                "items": {"type": "string", "enum": list(TRAJECTORY_PROBLEMS)},
            },
        }
    )


def answer_schema(max_reasoning: int | None) -> dict[str, Any]:
    """The reply schema of an answer verdict."""
    return _object(
        {
            "reasoning": _text(max_reasoning),
            "verdict": {"type": "string", "enum": ["correct", "incorrect"]},
            "category": {"type": "string", "enum": list(ANSWER_CATEGORIES)},
        }
    )


class ValueVerdict(BaseModel):
    """The judge's verdict on one `$judge` value: whether it is what the matcher's words say."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Literal["yes", "no"]
    confidence: float | None = None
    """P(the verdict): the answer token's share of the logprobs, or the share of the samples
    that gave it; null where the endpoint gives neither."""
    confidence_source: Literal["logprobs", "samples", "none"] = "none"


def value_schema() -> dict[str, Any]:
    """The reply schema of a `$judge` value's verdict: `{"verdict": "yes" | "no"}`, nothing
    before it (one question about one value: the label is the whole reply)."""
    return _object({"verdict": {"type": "string", "enum": ["yes", "no"]}})


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _text(max_length: int | None) -> dict[str, Any]:
    return {"type": "string"} if max_length is None else {"type": "string", "maxLength": max_length}
