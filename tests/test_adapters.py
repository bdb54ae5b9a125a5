"""The adapters, each run the way its harness runs it: pytest's assertion, promptfoo's
documented `get_assert(output, context)` contract, LangSmith's evaluator wrapper, and a real
Inspect AI eval on its scripted mockllm model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from judge.adapters.openevals import create_tool_call_evaluator
from judge.adapters.promptfoo import get_assert
from judge.adapters.pytest import assert_tool_calls
from tests.helpers import WEATHER, call, tool

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [tool("get_weather", WEATHER), tool("get_time", {"type": "object"})]
PARIS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
USER = [{"role": "user", "content": "weather in Paris"}]


def assistant(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


# -- pytest -------------------------------------------------------------------------------------


def test_assert_tool_calls_passes_and_returns_the_result() -> None:
    result = assert_tool_calls(
        assistant(call("get_weather", {"city": "Paris"})), expected=PARIS, tools=TOOLS
    )
    assert result.passed is True


@pytest.mark.parametrize(
    ("response", "expected", "message"),
    [
        pytest.param(
            [call("get_weather", {"city": "Lyon"})],
            PARIS,
            '  - call 0: WrongValue at /city: argument \'city\' is "Lyon", expected "Paris"',
            id="wrong-value",
        ),
        pytest.param(
            [call("get_wether", {"city": "Paris"})],
            PARIS,
            "UnknownName: 'get_wether' is not one of the case's tools (did you mean "
            "'get_weather'?)",
            id="near-miss-name",
        ),
        pytest.param(
            [call("get_weather", "{'city': 'Paris'}")], None, "InvalidJson", id="broken-json"
        ),
        pytest.param(
            [call("get_time", {})], [], "no tool call was expected, got 'get_time'", id="no-call"
        ),
        pytest.param(
            "It is sunny.",
            None,
            "no tool calls and no `expected` to grade them against",
            id="vacuous",
        ),
    ],
)
def test_assert_tool_calls_fails_with_a_readable_message(
    response: Any, expected: Any, message: str
) -> None:
    with pytest.raises(AssertionError) as raised:
        assert_tool_calls(response, expected=expected, tools=TOOLS)
    assert message in str(raised.value)


def test_assert_tool_calls_needs_the_tools() -> None:
    with pytest.raises(TypeError, match="tools"):
        assert_tool_calls([call("get_weather", {"city": "Paris"})], expected=PARIS)  # type: ignore[call-arg]


def test_assert_tool_calls_message_lists_every_check() -> None:
    with pytest.raises(AssertionError) as raised:
        assert_tool_calls([call("get_weather", {"city": "Lyon"})], expected=PARIS, tools=TOOLS)
    assert str(raised.value).splitlines()[:2] == [
        "tool calls do not match:",
        "case 'assert_tool_calls' failed: tool_selection=true, schema_valid=true, "
        "argument_values=false, tool_assertions=n/a, call_f1=0",
    ]


def test_every_adapter_asserts_tools_called_and_avoided() -> None:
    paris = [call("get_weather", {"city": "Paris"})]
    rule = {"avoided": ["get_weather"]}
    with pytest.raises(AssertionError, match="ForbiddenCall"):
        assert_tool_calls(paris, tools=TOOLS, assert_tools=rule)
    held = assert_tool_calls(paris, tools=TOOLS, assert_tools={"called": ["get_weather"]})
    assert held.tool_assertions is True and held.passed is True
    graded = get_assert(json.dumps(paris), {"config": {"tools": TOOLS, "assert_tools": rule}})
    assert graded["pass"] is False and graded["namedScores"]["tool_assertions"] == 0.0
    evaluator = create_tool_call_evaluator(tools=TOOLS)
    got = evaluator(outputs=assistant(*paris), reference_outputs={"assert_tools": rule})
    assert got["score"] is False and got["metadata"]["tool_assertions"] is False


# -- promptfoo ----------------------------------------------------------------------------------


def promptfoo_context(**config: Any) -> dict[str, Any]:
    """An assertion context as promptfoo documents it (vars hold text)."""
    return {
        "prompt": json.dumps(USER),
        "vars": {"tools": json.dumps(TOOLS), "expected_calls": json.dumps(PARIS)},
        "test": {"description": "weather", "vars": {}, "assert": []},
        "config": config,
        "provider": None,
        "providerResponse": None,
        "logProbs": None,
    }


@pytest.mark.parametrize(
    ("output", "passed", "named"),
    [
        pytest.param(
            [call("get_weather", {"city": "Paris"})],
            True,
            {"tool_selection": 1.0, "schema_valid": 1.0, "argument_values": 1.0, "call_f1": 1.0},
            id="tool-calls-as-parsed-by-promptfoo",
        ),
        pytest.param(
            json.dumps([call("get_weather", {"city": "Lyon"})]),
            False,
            {"tool_selection": 1.0, "schema_valid": 1.0, "argument_values": 0.0, "call_f1": 0.0},
            id="tool-calls-as-json-text",
        ),
        pytest.param(
            "I cannot help with that.",
            False,
            {"tool_selection": 0.0, "argument_values": 0.0, "call_f1": 0.0},
            id="plain-text-answer",
        ),
    ],
)
def test_promptfoo_assertion_returns_a_grading_result(
    output: Any, passed: bool, named: dict[str, float]
) -> None:
    graded = get_assert(output, promptfoo_context())
    assert set(graded) == {"pass", "score", "reason", "namedScores"}
    assert graded["pass"] is passed
    assert graded["score"] == (1.0 if passed else 0.0)
    assert graded["namedScores"] == named
    assert graded["reason"].startswith("case 'weather' ")


PROMPTFOO_CONFIG = """\
prompts: ['{{response}}']
providers: [echo]
defaultTest:
  assert:
    - type: python
      value: file://judge_assert.py
      config:
        tools: [{type: function, function: {name: get_weather, parameters: %s}}]
        expected_calls: [{name: get_weather, arguments: {city: Paris}}]
tests:
  - description: right
    vars: {response: '%s'}
  - description: wrong
    vars: {response: '%s'}
"""


def promptfoo_binary() -> str | None:
    """promptfoo as `.ci/run` installs it (`.promptfoo/`), PROMPTFOO_BIN, or on PATH."""
    local = ROOT / ".promptfoo" / "node_modules" / ".bin" / "promptfoo"
    for candidate in (os.environ.get("PROMPTFOO_BIN"), str(local), shutil.which("promptfoo")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


@pytest.mark.skipif(promptfoo_binary() is None, reason="promptfoo is not installed (.ci/run)")
def test_promptfoo_runs_the_assertion_in_a_real_eval(tmp_path: Path) -> None:
    def response(city: str) -> str:
        return json.dumps({"tool_calls": [call("get_weather", {"city": city})]})

    (tmp_path / "judge_assert.py").write_text(
        "from judge.adapters.promptfoo import get_assert  # noqa: F401\n"
    )
    (tmp_path / "promptfooconfig.yaml").write_text(
        PROMPTFOO_CONFIG % (json.dumps(WEATHER), response("Paris"), response("Lyon"))
    )
    env = os.environ | {
        "PROMPTFOO_PYTHON": sys.executable,
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_CONFIG_DIR": str(tmp_path / "state"),
    }
    done = subprocess.run(
        [
            str(promptfoo_binary()),
            "eval",
            "-c",
            "promptfooconfig.yaml",
            "--no-cache",
            "-o",
            "out.json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = json.loads((tmp_path / "out.json").read_text())["results"]["results"]
    outcome = {r["testCase"]["description"]: r for r in results}
    assert outcome["right"]["success"] is True, done.stdout[-2000:]
    assert outcome["wrong"]["success"] is False
    graded = outcome["wrong"]["gradingResult"]
    assert "WrongValue at /city" in graded["reason"]
    assert graded["namedScores"] == {
        "tool_selection": 1,
        "schema_valid": 1,
        "argument_values": 0,
        "call_f1": 0,
    }


def test_promptfoo_config_wins_over_vars_and_refuses_a_vacuous_pass() -> None:
    graded = get_assert([call("get_time", {})], promptfoo_context(expected_calls=[]))
    assert graded["pass"] is False
    assert "UnexpectedCall" in graded["reason"]
    context = promptfoo_context()
    context["vars"] = {}
    graded = get_assert("Hello!", context)
    assert graded["pass"] is False
    assert graded["reason"].startswith("nothing to grade")


# -- openevals / LangSmith ----------------------------------------------------------------------


def test_openevals_evaluator_grades_a_trajectory() -> None:
    evaluator = create_tool_call_evaluator(tools=TOOLS)
    outputs = [
        *USER,
        assistant(call("get_weather", {"city": "Paris"})),
        {"role": "tool", "content": "sunny", "tool_call_id": "c_get_weather"},
        assistant(content="It is sunny in Paris."),
    ]
    reference = [*USER, assistant(call("get_weather", {"city": "Paris"}))]
    got = evaluator(inputs={"messages": USER}, outputs=outputs, reference_outputs=reference)
    assert got["key"] == "tool_calls"
    assert got["score"] is True
    assert got["metadata"]["passed"] is True
    wrong = evaluator(
        outputs=assistant(call("get_weather", {"city": "Lyon"})), reference_outputs=PARIS
    )
    assert wrong["score"] is False
    assert "WrongValue at /city" in wrong["comment"]
    unknown = evaluator(outputs=assistant(call("get_weather", {"city": "Lyon"})))
    assert unknown["score"] is True  # no reference: the call is well formed, as elsewhere
    assert (
        "passed (no expected calls or tool assertions: well-formedness only)" in unknown["comment"]
    )
    broken = evaluator(outputs=assistant(call("get_weather", {"days": 2})))
    assert broken["score"] is False
    nothing = evaluator(outputs=assistant(content="Hello!"))
    assert nothing["score"] is None
    assert "not gradable" in nothing["comment"]


def test_openevals_evaluator_without_tools_says_where_to_give_them() -> None:
    evaluator = create_tool_call_evaluator()
    with pytest.raises(ValueError, match=r"create_tool_call_evaluator\(tools=\.\.\.\)"):
        evaluator(inputs={"messages": USER}, outputs=assistant(), reference_outputs=[])
    offered_none = evaluator(inputs={"tools": []}, outputs=assistant(), reference_outputs=[])
    assert offered_none["score"] is True


def test_openevals_evaluator_reads_langchain_messages() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    evaluator = create_tool_call_evaluator(key="weather_call")
    message = AIMessage(
        content="", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]
    )
    got = evaluator(
        inputs={"messages": [HumanMessage("weather in Paris")], "tools": TOOLS},
        outputs={"messages": [message]},
        reference_outputs={"expected_calls": PARIS},
    )
    assert (got["key"], got["score"]) == ("weather_call", True)


def test_langsmith_runs_the_evaluator_and_reads_its_result() -> None:
    import uuid
    from datetime import UTC, datetime

    from langsmith.evaluation.evaluator import run_evaluator
    from langsmith.schemas import Example, Run

    evaluator = create_tool_call_evaluator(tools=TOOLS)

    def tool_calls(inputs: dict[str, Any], outputs: dict[str, Any], reference_outputs: Any) -> Any:
        return evaluator(inputs=inputs, outputs=outputs, reference_outputs=reference_outputs)

    now = datetime.now(UTC)
    example = Example(
        id=uuid.uuid4(),
        dataset_id=uuid.uuid4(),
        inputs={"messages": USER},
        outputs={"expected_calls": PARIS},
        created_at=now,
    )
    run = Run(
        id=uuid.uuid4(),
        name="agent",
        start_time=now,
        run_type="chain",
        inputs={"messages": USER},
        outputs={"messages": [assistant(call("get_weather", {"city": "Lyon"}))]},
        trace_id=uuid.uuid4(),
    )
    # Typed for (run, example); it reads the argument names, as LangSmith documents.
    result = run_evaluator(tool_calls).evaluate_run(run, example)  # type: ignore[arg-type]
    assert result.key == "tool_calls"
    assert result.score is False
    assert "WrongValue" in (result.comment or "")


# -- a case that cannot be read: failed, and said so, by every adapter ------------------------

UNREADABLE = {"tool_calls": 3}  # not a list: /response/tool_calls


def said_once(text: str) -> None:
    assert "could not be read" in text
    assert text.count("at /response/tool_calls") == 1, text


def test_pytest_assertion_fails_an_unreadable_case() -> None:
    with pytest.raises(AssertionError) as raised:
        assert_tool_calls(UNREADABLE, expected=PARIS, tools=TOOLS)
    said_once(str(raised.value))
    assert "InvalidCase" in str(raised.value)


def test_promptfoo_assertion_fails_an_unreadable_case() -> None:
    graded = get_assert(UNREADABLE, promptfoo_context())
    assert (graded["pass"], graded["score"]) == (False, 0.0)
    said_once(graded["reason"])
    without_expected = get_assert(UNREADABLE, promptfoo_context(expected_calls=None))
    assert without_expected["pass"] is False


def test_openevals_evaluator_fails_an_unreadable_case() -> None:
    evaluator = create_tool_call_evaluator(tools=TOOLS)
    for reference in (PARIS, None):
        got = evaluator(outputs=UNREADABLE, reference_outputs=reference)
        assert got["score"] is False, reference
        said_once(got["comment"])


# -- Inspect AI ---------------------------------------------------------------------------------


# inspect_ai passes tenacity a parameter tenacity has deprecated, and leaves anyio memory
# streams of its eval loop unclosed: warnings from inside Inspect, not ours to fix.
@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_inspect_scorer_in_a_real_eval_on_mockllm(tmp_path: Path) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool as inspect_tool

    from judge.adapters.inspect import tool_call_scorer

    @inspect_tool
    def get_weather() -> Any:
        async def execute(city: str, days: int = 1) -> str:
            """Weather for a city.

            Args:
                city: The city.
                days: How many days.
            """
            return "sunny"

        return execute

    samples = [
        Sample(id="right", input="weather in Paris", target=json.dumps(PARIS)),
        Sample(id="wrong", input="weather in Paris", target=json.dumps(PARIS)),
        Sample(id="typed", input="weather in Paris", metadata={"expected_calls": PARIS}),
        # expected calls without a name cannot be read: INCORRECT, not unscored
        Sample(id="unreadable", input="weather", metadata={"expected_calls": [{"arguments": {}}]}),
    ]
    # With usage given, mockllm does not count tokens (tiktoken would download an encoding).
    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    outputs = [
        ModelOutput.for_tool_call("mockllm/model", "get_weather", arguments).model_copy(
            update={"usage": usage}
        )
        for arguments in (
            {"city": "Paris"},
            {"city": "Lyon"},
            {"city": "Paris", "days": "2"},
            {"city": "Paris"},
        )
    ]
    model = get_model("mockllm/model", custom_outputs=outputs)
    task = Task(
        dataset=samples,
        solver=[use_tools(get_weather()), generate(tool_calls="none")],
        scorer=tool_call_scorer(),
    )
    (log,) = eval(task, model=model, log_dir=str(tmp_path), display="none", max_samples=1)
    assert log.status == "success", log.error
    scores = {s.id: (s.scores or {})["tool_call_scorer"] for s in log.samples or []}
    assert {k: v.value for k, v in scores.items()} == {
        "right": "C",
        "wrong": "I",
        "typed": "I",
        "unreadable": "I",
    }
    assert "WrongValue at /city" in (scores["wrong"].explanation or "")
    assert "SchemaMismatch at /days" in (scores["typed"].explanation or "")
    unreadable = scores["unreadable"].explanation or ""
    assert "could not be read" in unreadable
    assert unreadable.count("at /expected_calls/0/name") == 1, unreadable
    assert scores["right"].metadata and scores["right"].metadata["passed"] is True
    assert log.results and log.results.scores[0].metrics["accuracy"].value == pytest.approx(1 / 4)


def test_openevals_keeps_the_reference_calls_beside_assertions() -> None:
    evaluator = create_tool_call_evaluator(tools=TOOLS)
    reference = {
        "messages": [*USER, assistant(call("get_weather", {"city": "Paris"}))],
        "assert_tools": {"called": ["get_weather"]},
    }
    wrong = evaluator(
        outputs=assistant(call("get_weather", {"city": "Lyon"})), reference_outputs=reference
    )
    assert wrong["score"] is False and "WrongValue" in wrong["comment"]
    assert wrong["metadata"]["tool_assertions"] is True
