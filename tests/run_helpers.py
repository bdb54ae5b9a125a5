"""Cases and commands shared by the tests of `judge run`, `judge regrade` and `judge compare`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from judge.cli import main
from tests.chat_server import ChatServer, Reply
from tests.helpers import WEATHER, tool
from tests.openrouter_server import KEY, OpenRouterServer

CITIES = ("Paris", "Oslo", "Rome", "Lima")
TOOLS = [tool("get_weather", WEATHER), tool("get_time", {"type": "object"})]


def write_cases(path: Path, cities: tuple[str, ...] = CITIES, **expected: str) -> Path:
    lines = []
    for city in cities:
        want = expected.get(city, city)
        lines.append(
            json.dumps(
                {
                    "id": city.lower(),
                    "messages": [{"role": "user", "content": f"weather in {city}"}],
                    "tools": TOOLS,
                    "expected_calls": [{"name": "get_weather", "arguments": {"city": want}}],
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def run(fake: OpenRouterServer, cases: Path, *args: str, key: str = KEY) -> Result:
    return CliRunner(env={"FAKE_KEY": key}).invoke(
        main,
        ["run", str(cases), "--base-url", fake.url, "--api-key-env", "FAKE_KEY", *args],
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_model(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "model"}


def judge_args(server: ChatServer) -> list[str]:
    return ["--judge", "--judge-model", "judge-m", "--judge-base-url", server.url]


REFUSED = Reply(status=401, body={"error": {"message": "Invalid API key", "code": 401}})
