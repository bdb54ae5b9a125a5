"""Builders for small cases, shared by the tests."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from judge import CaseResult, check_case, load_cases

if TYPE_CHECKING:
    from click.testing import Result

    from tests.chat_server import ChatServer

# The environment that could point a test at a hosted API or at a shared cache.
PROVIDER_KEYS = (
    "JUDGE_BASE_URL",
    "JUDGE_API_KEY",
    "JUDGE_MODEL",
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "JUDGE_CACHE_DIR",
    "JUDGE_SERVICE_TOKEN",
)

WEATHER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "units": {"type": "string", "enum": ["c", "f"]},
    },
    "required": ["city"],
}


def tool(name: str, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": name}
    if parameters is not None:
        fn["parameters"] = parameters
    return {"type": "function", "function": fn}


def call(name: str, arguments: Any) -> dict[str, Any]:
    """An OpenAI chat tool call; `arguments` text is kept raw, anything else is serialised."""
    raw = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return {"id": f"c_{name}", "type": "function", "function": {"name": name, "arguments": raw}}


def case(
    calls: list[dict[str, Any]],
    expected: list[dict[str, Any]] | None = None,
    tools: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "t",
        "messages": [{"role": "user", "content": "weather in Paris"}],
        "tools": tools
        if tools is not None
        else [tool("get_weather", WEATHER), tool("get_time", {"type": "object"})],
        "response": {"content": None, "tool_calls": calls},
        **extra,
    }
    if expected is not None:
        data["expected_calls"] = expected
    return data


def grade(data: dict[str, Any], **options: Any) -> CaseResult:
    loaded = load_cases([data])
    assert not loaded.errors, loaded.errors
    return check_case(loaded[0], **options)


def kinds(result: CaseResult) -> list[tuple[int | None, str]]:
    return [(f.call, f.kind.value) for f in result.failures]


def invoke(server: ChatServer, tmp_path: Path, *args: str) -> Result:
    """`judge ARGS` with the scripted server as the judge (model `m`, a cache of its own)."""
    from click.testing import CliRunner

    from judge.cli import main

    return CliRunner().invoke(
        main,
        [*args, "--base-url", server.url, "--model", "m", "--cache-dir", str(tmp_path / "cache")],
    )
