from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.chat_server import ChatServer, serving
from tests.helpers import PROVIDER_KEYS
from tests.openrouter_server import OpenRouterServer, openrouter


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with serving() as running:
        yield running


@pytest.fixture
def fake() -> Iterator[OpenRouterServer]:
    with openrouter() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests never reach a hosted API, whatever the machine's environment holds.
    for name in PROVIDER_KEYS:
        monkeypatch.delenv(name, raising=False)
