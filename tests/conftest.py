from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chat_server import ChatServer, serving


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with serving() as running:
        yield running


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never reach a hosted API, whatever the machine's environment holds.
    for name in (
        "JUDGE_BASE_URL",
        "JUDGE_API_KEY",
        "JUDGE_MODEL",
        "OPENROUTER_API_KEY",
        "OPENAI_API_KEY",
        "JUDGE_CACHE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
