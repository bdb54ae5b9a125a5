"""`judge import` and `judge check --from`: traces recorded by real producers (the OpenTelemetry
SDK with OpenInference's OpenAI instrumentation around a real OpenAI client), GenAI-convention
spans and proxy logs, graded exactly as the same conversation written by hand."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from click.testing import CliRunner

from judge.cli import main
from judge.traces import import_traces
from tests.chat_server import Reply, completion, serving

WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
QUESTION = {"role": "user", "content": "What's the weather in Paris?"}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 18}'}
ANSWER = "It is 18 degrees in Paris."


def agent_reply(body: dict[str, Any]) -> Reply:
    """A model that calls get_weather, then answers from its result."""
    if any(m["role"] == "tool" for m in body["messages"]):
        return Reply(body=completion(ANSWER))
    reply = completion(None)
    reply["choices"][0]["message"]["tool_calls"] = [CALL]
    reply["choices"][0]["finish_reason"] = "tool_calls"
    return Reply(body=reply)


@pytest.fixture(scope="module")
def spans() -> Iterator[list[Any]]:
    """The spans of a two-step tool-calling exchange, recorded by OpenInference's OpenAI
    instrumentation around a real OpenAI client talking to a loopback endpoint."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        with serving(agent_reply) as server:
            client = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
            messages: list[dict[str, Any]] = [QUESTION]
            with provider.get_tracer("agent").start_as_current_span("agent run"):
                first = client.chat.completions.create(
                    model="m",
                    messages=messages,  # type: ignore[arg-type]
                    tools=[WEATHER],  # type: ignore[list-item]
                )
                messages.append(first.choices[0].message.model_dump(exclude_none=True))
                messages.append(RESULT)
                client.chat.completions.create(
                    model="m",
                    messages=messages,  # type: ignore[arg-type]
                    tools=[WEATHER],  # type: ignore[list-item]
                )
            client.close()
    finally:
        instrumentor.uninstrument()
    yield list(exporter.get_finished_spans())


def otlp_json(spans: list[Any]) -> str:
    """OTLP JSON through the SDK's own OTLP encoder (and protobuf's JSON mapping)."""
    from google.protobuf.json_format import MessageToJson  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return str(MessageToJson(encode_spans(spans), indent=None))


def sdk_json(spans: list[Any]) -> str:
    """What `ConsoleSpanExporter` prints: pretty-printed span JSON, one after another."""
    return "".join(span.to_json() + "\n" for span in spans)


def hand_written(tmp_path: Path) -> list[dict[str, Any]]:
    """The same conversation written by hand as cases, graded by `judge check`."""
    rows = [
        {"id": "first", "messages": [QUESTION], "tools": [WEATHER],
         "response": {"role": "assistant", "content": None, "tool_calls": [CALL]}},
        {"id": "second", "messages": [QUESTION, {"role": "assistant", "content": None,
         "tool_calls": [CALL]}, RESULT], "tools": [WEATHER],
         "response": {"role": "assistant", "content": ANSWER}},
    ]  # fmt: skip
    path = tmp_path / "hand.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return check(path)


def check(path: Path, *extra: str) -> list[dict[str, Any]]:
    out = path.with_suffix(".results.jsonl")
    done = CliRunner().invoke(main, ["check", str(path), "-o", str(out), *extra])
    assert done.exit_code == 0, done.output
    return [json.loads(line) for line in out.read_text().splitlines()]


def without_id(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "id"} for r in results]


@pytest.mark.parametrize("encode", [otlp_json, sdk_json], ids=["otlp-json", "sdk-span-json"])
def test_an_instrumented_openai_client_grades_as_the_hand_written_cases(
    spans: list[Any], tmp_path: Path, encode: Any
) -> None:
    traces = tmp_path / "traces.json"
    traces.write_text(encode(spans))
    cases = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(main, ["import", "otel", str(traces), "-o", str(cases)])
    assert done.exit_code == 0, done.output
    assert "2 cases from 2 LLM calls; 1 spans that are not LLM calls skipped" in done.stderr
    rows = [json.loads(line) for line in cases.read_text().splitlines()]
    llm = [s for s in spans if s.attributes.get("openinference.span.kind") == "LLM"]
    trace_id = format(llm[0].context.trace_id, "032x")
    assert [r["id"] for r in rows] == [
        f"{trace_id}:{format(s.context.span_id, '016x')}" for s in llm
    ]
    assert rows[1]["messages"] == [QUESTION, {"role": "assistant", "content": None,
                                              "tool_calls": [CALL]}, RESULT]  # fmt: skip
    assert rows[0]["tools"] == [WEATHER]
    assert rows[1]["response"] == {"role": "assistant", "content": ANSWER}
    meta = rows[0]["meta"]
    assert meta["trace_id"] == trace_id and meta["model"]
    assert meta["invocation_parameters"] == {"model": "m"}
    assert meta["source"] == f"{traces}:1"
    assert without_id(check(cases)) == without_id(hand_written(tmp_path))
    # judge check reads the trace file itself with the same conversion
    assert check(traces, "--from", "otel") == check(cases)


def test_per_trace_is_the_whole_conversation_for_trajectories(
    spans: list[Any], tmp_path: Path
) -> None:
    traces = tmp_path / "traces.json"
    traces.write_text(otlp_json(spans))
    [case] = import_traces("otel", [traces], per="trace").cases
    assert [m["role"] for m in case["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert case["messages"][-1]["content"] == ANSWER and "response" not in case
    assert case["meta"]["llm_calls"] == 2 and len(case["meta"]["span_ids"]) == 2
    case["expected_calls"] = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    path = tmp_path / "trace.jsonl"
    path.write_text(json.dumps(case) + "\n")
    [result] = check(path, "--match", "strict")
    assert result["passed"] is True and result["trajectory"]["calls"][0]["name"] == "get_weather"


def genai_spans() -> str:
    """GenAI-convention spans made by the SDK: the current attributes, and the older form with
    one event per message."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("genai")
    with tracer.start_as_current_span("chat m") as span:
        span.set_attributes({
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.request.temperature": 0.0,
            "gen_ai.input.messages": json.dumps([
                {"role": "user", "parts": [{"type": "text", "content": QUESTION["content"]}]},
                {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1",
                 "name": "get_weather", "arguments": {"city": "Paris"}}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                 "response": {"temp_c": 18}}]},
            ]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                "parts": [{"type": "text", "content": ANSWER}]}]),
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "get_weather",
                "description": "Current weather of a city.",
                "parameters": WEATHER["function"]["parameters"]}]),
        })  # fmt: skip
    with tracer.start_as_current_span("chat m (events)") as span:
        span.set_attribute("gen_ai.request.model", "m")
        span.add_event("gen_ai.user.message", {"content": QUESTION["content"]})
        choice = json.dumps({"role": "assistant", "tool_calls": [CALL]})
        span.add_event(
            "gen_ai.choice", {"index": 0, "finish_reason": "tool_calls", "message": choice}
        )
    return otlp_json(list(exporter.get_finished_spans()))


def test_genai_convention_spans_are_read_in_both_forms(tmp_path: Path) -> None:
    traces = tmp_path / "genai.json"
    traces.write_text(genai_spans())
    found = import_traces("otel", [traces])
    assert not found.problems
    answered, called = found.cases
    assert answered["messages"][1]["tool_calls"][0]["function"] == {
        "name": "get_weather", "arguments": '{"city": "Paris"}'
    }  # fmt: skip
    assert answered["messages"][2] == {"role": "tool", "tool_call_id": "call_1",
                                       "content": '{"temp_c": 18}'}  # fmt: skip
    assert answered["response"] == {"role": "assistant", "content": ANSWER}
    assert answered["tools"][0]["name"] == "get_weather"
    assert answered["meta"]["invocation_parameters"] == {"temperature": 0.0}
    assert called["messages"] == [{"role": "user", "content": QUESTION["content"]}]
    assert called["response"]["tool_calls"] == [CALL]
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in found.cases))
    results = check(path)
    assert [r["schema_valid"] for r in results] == [None, False]  # no tools listed in events
    assert results[1]["failures"][0]["kind"] == "UnknownName"


def test_proxy_logs_are_request_response_pairs(tmp_path: Path) -> None:
    logs = tmp_path / "proxy.jsonl"
    request = {"model": "m", "messages": [QUESTION], "tools": [WEATHER], "temperature": 0}
    response = completion(None)
    response["choices"][0]["message"]["tool_calls"] = [CALL]
    logs.write_text(json.dumps({"request": request, "response": response}) + "\n")
    [case] = import_traces("openai", [logs]).cases
    assert case["messages"] == [QUESTION] and case["tools"] == [WEATHER]
    assert case["meta"]["model"] == "m" and case["meta"]["invocation_parameters"] == {
        "temperature": 0
    }
    [result] = check(logs, "--from", "openai")
    assert result["schema_valid"] is True


def test_bad_records_are_reported_and_skipped(spans: list[Any], tmp_path: Path) -> None:
    good = otlp_json(spans)
    gap = json.loads(good)
    attributes = gap["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    for item in attributes:
        item["key"] = item["key"].replace("llm.input_messages.0.", "llm.input_messages.2.")
    traces = tmp_path / "traces.jsonl"
    traces.write_text(
        "\n".join(["{not json", json.dumps({"kind": "log"}), json.dumps(gap), good]) + "\n"
    )
    cases = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(main, ["import", "otel", str(traces), "-o", str(cases)])
    assert done.exit_code == 0, done.output
    said = done.stderr
    assert f"skipped {traces}:1: not JSON" in said
    assert f"skipped {traces}:2: not an OpenTelemetry span" in said
    assert f"skipped {traces}:3: span " in said and "indices have a gap" in said
    assert len(cases.read_text().splitlines()) == 3  # the good document's two, the gap's other
    nothing = tmp_path / "nothing.jsonl"
    nothing.write_text("{not json\n")
    refused = CliRunner().invoke(main, ["import", "otel", str(nothing)])
    assert refused.exit_code == 2 and "nothing could be read" in refused.stderr


def test_the_shipped_example_trace_grades_as_the_readme_says(tmp_path: Path) -> None:
    example = Path(__file__).resolve().parents[1] / "examples" / "traces" / "weather.otlp.json"
    found = import_traces("otel", [example])
    assert len(found.cases) == 2 and found.skipped["span"] == 1 and not found.problems
    assert found.cases[1]["response"] == {"role": "assistant", "content": ANSWER}
    assert [r["schema_valid"] for r in check(example, "--from", "otel")] == [True, None]
