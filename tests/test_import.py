"""`judge import` and `judge check --from`: traces recorded by real producers (the OpenTelemetry
SDK with OpenInference's OpenAI instrumentation around a real OpenAI client), GenAI-convention
spans and proxy logs, graded exactly as the same conversation written by hand."""

from __future__ import annotations

import gc
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


def check(path: Path, *extra: str, out: Path | None = None) -> list[dict[str, Any]]:
    out = out or path.with_suffix(".results.jsonl")
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
    assert "2 cases from 2 LLM calls; 1 records that are not LLM calls skipped" in done.stderr
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
    assert without_id([result]) == without_id(hand_written(tmp_path)[:1])


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
    graded = check(example, "--from", "otel", out=tmp_path / "results.jsonl")  # not in the repo
    assert [r["schema_valid"] for r in graded] == [True, None]


def inspect_log(tmp_path: Path, log_format: Any) -> Path:
    """A real `inspect eval` on its mockllm model: a tool call, its result, then an answer."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool as inspect_tool

    @inspect_tool
    def get_weather() -> Any:
        async def execute(city: str) -> str:
            """Current weather of a city.

            Args:
                city: The city.
            """
            return RESULT["content"]

        return execute

    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)  # no tiktoken download
    outputs = [
        ModelOutput.for_tool_call("mockllm/model", "get_weather", {"city": "Paris"}),
        ModelOutput.from_content("mockllm/model", ANSWER),
    ]
    model = get_model(
        "mockllm/model", custom_outputs=[o.model_copy(update={"usage": usage}) for o in outputs]
    )
    task = Task(
        dataset=[Sample(id="paris", input=QUESTION["content"])],
        solver=[use_tools(get_weather()), generate()],
    )
    (log,) = eval(task, model=model, log_dir=str(tmp_path), display="none", log_format=log_format)
    assert log.status == "success", log.error
    gc.collect()  # Inspect's unclosed streams are reported here, where they are ignored
    return Path(log.location)


# Inspect's own retry set-up uses a deprecated tenacity argument, and leaves streams to the GC.
@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("log_format", ["eval", "json"])
def test_an_inspect_eval_log_grades_as_the_hand_written_cases(
    tmp_path: Path, log_format: str
) -> None:
    log = inspect_log(tmp_path, log_format)
    found = import_traces("inspect", [log])
    assert not found.problems
    first, second = found.cases
    assert [first["id"], second["id"]] == ["paris:1:0", "paris:1:1"]
    call = first["response"]["tool_calls"][0]
    assert call["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert second["messages"][2] == {"role": "tool", "content": RESULT["content"],
                                     "tool_call_id": call["id"]}  # fmt: skip
    assert second["response"] == {"role": "assistant", "content": ANSWER}
    assert first["tools"][0]["function"]["parameters"]["required"] == ["city"]
    assert first["meta"]["model"] == "mockllm/model"
    hand = tmp_path / "hand.jsonl"
    said = "tool call for tool get_weather"  # what Inspect's mockllm says with its call
    assert first["response"]["content"] == said
    rows = [
        {"id": "a", "messages": [QUESTION], "tools": first["tools"],
         "response": {"role": "assistant", "content": said, "tool_calls": [CALL]}},
        {"id": "b", "messages": [QUESTION, {"role": "assistant", "content": said,
         "tool_calls": [CALL]}, RESULT], "tools": first["tools"],
         "response": {"role": "assistant", "content": ANSWER}},
    ]  # fmt: skip
    hand.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert without_id(check(log, "--from", "inspect")) == without_id(check(hand))
    [trace] = import_traces("inspect", [log], per="trace").cases
    assert trace["id"] == "paris:1" and trace["messages"][-1]["content"] == ANSWER


def langsmith_runs() -> str:
    """Runs recorded with LangSmith's own RunTree: a chain with two LLM runs, one logged in
    OpenAI form (as `wrap_openai` does), one with LangChain's serialised messages."""
    from langsmith.run_trees import RunTree

    root = RunTree(name="agent", run_type="chain", inputs={"question": QUESTION["content"]})
    first = root.create_child(
        name="ChatOpenAI",
        run_type="llm",
        inputs={"messages": [QUESTION], "model": "m", "tools": [WEATHER]},
    )
    first.end(outputs={"choices": [{"message": {"role": "assistant", "content": None,
                                                 "tool_calls": [CALL]}}]})  # fmt: skip
    second = root.create_child(
        name="ChatOpenAI",
        run_type="llm",
        inputs={"messages": [[
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
             "HumanMessage"], "kwargs": {"content": QUESTION["content"]}},
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
             "AIMessage"], "kwargs": {"content": "", "tool_calls": [
                 {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1"}]}},
            {"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages",
             "ToolMessage"], "kwargs": {"content": RESULT["content"], "tool_call_id": "call_1"}},
        ]]},
        extra={"invocation_params": {"model": "m", "temperature": 0, "tools": [WEATHER]}},
    )  # fmt: skip
    second.end(outputs={"generations": [[{"text": ANSWER, "message": {"lc": 1, "type":
        "constructor", "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {"content": ANSWER}}}]]})  # fmt: skip
    root.end(outputs={"answer": ANSWER})
    return "".join(
        json.dumps(run.model_dump(), default=str) + "\n" for run in (root, first, second)
    )


def test_langsmith_runs_grade_as_the_hand_written_cases(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    runs.write_text(langsmith_runs() + json.dumps({"id": "x"}) + "\n")
    found = import_traces("langsmith", [runs])
    assert found.skipped["run"] == 1  # the chain
    assert [p.why for p in found.problems] == ["not a LangSmith run (no run_type)"]
    first, second = found.cases
    assert first["id"] == first["meta"]["span_id"]  # the run's own id
    assert first["messages"] == [QUESTION] and first["tools"] == [WEATHER]
    assert second["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Paris"}'
    assert second["meta"]["invocation_parameters"] == {"model": "m", "temperature": 0}
    assert first["meta"]["trace_id"] == second["meta"]["trace_id"]
    results = check(runs, "--from", "langsmith")
    assert without_id(results) == without_id(hand_written(tmp_path))


def test_judge_grade_reads_trace_files_too(spans: list[Any], tmp_path: Path) -> None:
    from tests.helpers import invoke

    traces = tmp_path / "traces.json"
    traces.write_text(otlp_json(spans))
    out = tmp_path / "graded.jsonl"
    with serving() as judge_server:
        done = invoke(
            judge_server, tmp_path, "grade", str(traces), "--from", "otel", "-o", str(out)
        )
    assert done.exit_code == 0, done.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and all(r["judge"]["status"] == "ok" for r in rows)
    llm = {format(s.context.span_id, "016x") for s in spans if s.name == "ChatCompletion"}
    assert {r["id"].split(":")[1] for r in rows} == llm


def test_the_service_reads_trace_bodies(spans: list[Any]) -> None:
    from fastapi.testclient import TestClient

    from judge import create_app

    with TestClient(create_app(traces="otel", token=""), "http://127.0.0.1") as client:
        reply = client.post("/v1/check", content=otlp_json(spans))
        assert reply.status_code == 200, reply.text
        results = reply.json()["results"]
        assert [r["schema_valid"] for r in results] == [True, None]
        assert "X-Judge-Skipped-Records" not in reply.headers
        partly = client.post("/v1/check", content=otlp_json(spans).encode() + b"\n{not json\n")
        assert partly.status_code == 200 and len(partly.json()["results"]) == 2
        assert partly.headers["X-Judge-Skipped-Records"] == "1"
        assert "not JSON" in partly.headers["X-Judge-Skipped-First"]
        refused = client.post("/v1/check", content=b"{not json")
        assert refused.status_code == 422 and "no otel trace could be read" in refused.text


def sdk_span(span_id: str, attributes: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A span as the SDK's `to_json` writes it."""
    context = {"trace_id": "0x" + "ab" * 16, "span_id": "0x" + span_id * 8, "trace_state": "[]"}
    return {"name": "span", "context": context, "start_time": "2026-12-01T10:00:00Z",
            "attributes": attributes, "events": [], **extra}  # fmt: skip


def test_odd_spans_are_read_or_reported_one_by_one(tmp_path: Path) -> None:
    no_tools = {  # an LLM span that offered no tools and got no answer (a failed call)
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "hi",
    }
    bad = {  # tool_calls that are not objects: reported, not a crash
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0": "oops",
    }
    evaluation = sdk_span("03", {}, events=[{"name": "gen_ai.evaluation.result",
                                             "attributes": {"score": 1}}])  # fmt: skip
    good = tmp_path / "good.json"
    good.write_text(json.dumps([sdk_span("01", no_tools), sdk_span("02", bad), evaluation]))
    unreadable = tmp_path / "unreadable.json"
    unreadable.write_text("\ufeff{not json\n")
    found = import_traces("otel", [good])
    [case] = found.cases
    assert case["tools"] == [] and "response" not in case
    assert found.skipped["span"] == 1  # the evaluation event is no LLM call
    [problem] = found.problems
    assert problem.source == f"{good}:1" and "span 0202020202020202" in problem.why
    # one unreadable file among several: said, the others graded and written, then exit 2
    # (an input with nothing usable in it is never passed over in silence)
    out = tmp_path / "results.jsonl"
    done = CliRunner().invoke(
        main, ["check", "--from", "otel", str(good), str(unreadable), "-o", str(out)]
    )
    assert done.exit_code == 2, done.output
    assert f"skipped {unreadable}:1: not JSON" in done.stderr
    assert f"nothing could be read from {unreadable}: no LLM call in it" in done.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [case["id"]]


def test_langsmith_completion_prompts_and_inspect_samples_without_events(tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    run = {"id": "r1", "trace_id": "t1", "run_type": "llm", "inputs": {"prompts": ["Hi there"]},
           "outputs": {"generations": [[{"text": "Hello!"}]]}}  # fmt: skip
    empty = {**run, "id": "r2", "outputs": {"generations": [[]]}}
    runs.write_text(json.dumps(run) + "\n" + json.dumps(empty) + "\n")
    first, second = import_traces("langsmith", [runs]).cases
    assert first["messages"] == [{"role": "user", "content": "Hi there"}]
    assert first["response"] == {"role": "assistant", "content": "Hello!"}
    assert "response" not in second
    log = tmp_path / "log.json"
    sample = {
        "id": "s",
        "epoch": 1,
        "messages": [QUESTION, {"role": "assistant", "content": ANSWER}],
    }
    log.write_text(json.dumps({"eval": {}, "samples": [sample, "not a sample"]}))
    found = import_traces("inspect", [log])
    [case] = found.cases
    assert case["messages"] == [QUESTION] and case["response"]["content"] == ANSWER
    assert [p.source for p in found.problems] == [f"{log}:samples/1"]


def test_documents_are_read_a_chunk_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from judge.traces import _documents
    from judge.traces._documents import Problem, iter_documents

    monkeypatch.setattr(_documents, "_CHUNK", 7)  # every document cut by chunk boundaries
    docs = [{"n": i, "text": "é" * (i % 5), "list": [1, {"k": "v"}]} for i in range(30)]
    text = "\n".join(json.dumps(d) for d in docs[:10]) + "\n{not json\n"
    text += "".join(json.dumps(d, indent=2) + "\n" for d in docs[10:])
    problems: list[Problem] = []
    found = list(iter_documents(io.BytesIO(text.encode()), "f.jsonl", problems))
    assert [value for _, value in found] == docs
    assert [p.source for p in problems] == ["f.jsonl:11"]
    lines = text.split("\n")
    assert all(json.loads(lines[number - 1]) == value for number, value in found[:10])
    assert found[10][0] == 12 and lines[11] == "{"  # the first pretty one starts on line 12


def test_openllmetry_indexed_attributes(tmp_path: Path) -> None:
    attributes = {
        "llm.request.type": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": QUESTION["content"],
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.tool_calls.0.id": "call_1",
        "gen_ai.prompt.1.tool_calls.0.name": "get_weather",
        "gen_ai.prompt.1.tool_calls.0.arguments": '{"city": "Paris"}',
        "gen_ai.prompt.2.role": "tool",
        "gen_ai.prompt.2.content": RESULT["content"],
        "gen_ai.prompt.2.tool_call_id": "call_1",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": ANSWER,
        "llm.request.functions.0.name": "get_weather",
        "llm.request.functions.0.description": "Current weather of a city.",
        "llm.request.functions.0.parameters": json.dumps(WEATHER["function"]["parameters"]),
    }
    traces = tmp_path / "openllmetry.json"
    traces.write_text(json.dumps(sdk_span("01", attributes)))
    [case] = import_traces("otel", [traces]).cases
    assert case["messages"][1]["tool_calls"] == [CALL]
    assert case["messages"][2] == {"role": "tool", "content": RESULT["content"],
                                   "tool_call_id": "call_1"}  # fmt: skip
    assert case["tools"] == [WEATHER] and case["response"]["content"] == ANSWER
    hand = hand_written(tmp_path)[1:]
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps(case) + "\n")
    assert without_id(check(path)) == without_id(hand)


def test_import_makes_ids_unique_and_says_so(spans: list[Any], tmp_path: Path) -> None:
    # Regression: the same spans exported twice gave two cases with each id.
    first, again = tmp_path / "traces.json", tmp_path / "traces-again.json"
    first.write_text(otlp_json(spans))
    again.write_text(otlp_json(spans))
    cases = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(main, ["import", "otel", str(first), str(again), "-o", str(cases)])
    assert done.exit_code == 0, done.output
    made = [json.loads(line) for line in cases.read_text().splitlines()]
    ids = [case["id"] for case in made]
    assert ids[2:] == [f"{ids[0]}#2", f"{ids[1]}#2"] and len(set(ids)) == 4
    for case, twin in zip(made[:2], made[2:], strict=True):
        meta = {k: v for k, v in twin["meta"].items() if k not in ("original_id", "source")}
        assert twin["meta"]["original_id"] == case["id"] and "original_id" not in case["meta"]
        assert {**twin, "id": case["id"], "meta": meta} == {
            **case, "meta": {k: v for k, v in case["meta"].items() if k != "source"}
        }  # fmt: skip
    assert (
        f"judge import: 2 duplicate ids made unique (the original kept in meta.original_id): "
        f"{ids[0]!r} -> {ids[0] + '#2'!r} ({again}:1), {ids[1]!r} -> {ids[1] + '#2'!r} ({again}:1)"
    ) in done.stderr


def test_a_suffixed_id_that_is_taken_already_is_passed_over(tmp_path: Path) -> None:
    logs = tmp_path / "proxy.jsonl"
    request = {"model": "m", "messages": [QUESTION], "tools": [WEATHER]}
    lines = [{"request": request, "response": {**completion(ANSWER), "id": name}}
             for name in ("cmpl#2", "cmpl", "cmpl", "cmpl")]  # fmt: skip
    logs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    found = import_traces("openai", [logs])
    assert [c["id"] for c in found.cases] == ["cmpl#2", "cmpl", "cmpl#3", "cmpl#4"]
    assert [c["meta"].get("original_id") for c in found.cases] == [None, None, "cmpl", "cmpl"]
    assert found.ids.renamed == 2
    assert [r.source for r in found.ids.first] == [f"{logs}:3", f"{logs}:4"]


def test_one_sample_in_two_inspect_logs_is_two_traces_with_two_ids(tmp_path: Path) -> None:
    sample = {
        "id": "s",
        "epoch": 1,
        "messages": [QUESTION, {"role": "assistant", "content": ANSWER}],
    }
    logs = [tmp_path / "run-1.json", tmp_path / "run-2.json"]
    for log in logs:  # the same task run twice
        log.write_text(json.dumps({"eval": {}, "samples": [sample]}))
    traces = import_traces("inspect", logs, per="trace").cases
    assert [t["id"] for t in traces] == ["s:1", "s:1#2"]
    assert traces[1]["meta"]["original_id"] == "s:1"
    assert traces[1]["messages"] == traces[0]["messages"]
