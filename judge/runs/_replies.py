"""What a 200 reply may hold instead of an answer, and JSON for messages: shared by the
requests of candidates, simulated users and the judge's question about them."""

from __future__ import annotations

from typing import Any

import orjson

from judge.cases._calls import first_choice


def reply_error(body: Any) -> str | None:
    """Why a successful (200) reply holds no answer: OpenRouter reports an error met during
    generation as a choice with `finish_reason: "error"` and an `error` object, or as an
    `error` in the body. None for an answer."""
    if not isinstance(body, dict):
        return None
    choice = first_choice(body)
    error = choice.get("error") or body.get("error")
    if error is None and choice.get("finish_reason") != "error":
        return None
    detail = ""
    if isinstance(error, dict):
        code = f" (code {error['code']})" if error.get("code") is not None else ""
        detail = f": {error.get('message') or sorted_json(error)}{code}"
    elif error:
        detail = f": {error}"
    return f"the endpoint reported an error instead of an answer{detail}"


def sorted_json(value: Any) -> str:
    """`value` as JSON text with sorted keys, for a message."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
