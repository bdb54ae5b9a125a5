"""Tool calls written as JSON text in the content, as the embedded model really emits them."""

from __future__ import annotations

import pytest

from judge.cases._calls import Response, ToolCall
from judge.cases._text_calls import calls_in_text, with_text_calls

FENCED = '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}\n```'
TOOLS = frozenset({"get_weather", "a", "b", "bye"})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(FENCED, [("get_weather", '{"city":"Paris"}')], id="json-fence-as-emitted"),
        pytest.param('```json\n{\n  "name": "bye"\n}\n```', [("bye", "{}")], id="no-arguments"),
        pytest.param(
            '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
            '<tool_call>\n{"name": "b", "arguments": {}}\n</tool_call>',
            [("a", '{"x":1}'), ("b", "{}")],
            id="qwen-tags",
        ),
        pytest.param(
            '[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": "{\\"y\\": 2"}]',
            [("a", '{"x":1}'), ("b", '{"y": 2')],
            id="bare-list-raw-arguments-kept",
        ),
        pytest.param(
            '{"type": "function", "function": {"name": "a", "arguments": {}}}',
            [("a", "{}")],
            id="openai-shape",
        ),
        pytest.param(
            'Sure, I will check: {"name": "get_weather", "arguments": {"city": "Oslo"}} and '
            "then tell you.",
            [("get_weather", '{"city":"Oslo"}')],
            id="call-after-a-sentence",
        ),
        pytest.param(
            'The data is {"x": 1}. Calling: {"name": "a", "arguments": {}}',
            [("a", "{}")],
            id="data-before-a-call-in-prose-is-skipped",
        ),
        pytest.param(
            '[{"name": "a", "arguments": {}}, {"name": "get_wether", "arguments": {}}]',
            [("a", "{}"), ("get_wether", "{}")],
            id="an-unknown-tool-beside-a-known-one-is-kept-to-be-graded",
        ),
        pytest.param('{"name": "Paris"}', None, id="a-name-that-is-no-tool-is-not-a-call"),
        pytest.param(
            'The capital is {"name": "Paris", "arguments": {}}.', None, id="no-tool-in-prose"
        ),
        pytest.param('{"name": "John", "age": 31}', None, id="json-data-is-not-a-call"),
        pytest.param("It is sunny in Paris.", None, id="plain-answer"),
        pytest.param("```python\nprint(1)\n```", None, id="other-code"),
        pytest.param("Use {braces} like {this", None, id="unbalanced-braces"),
    ],
)
def test_calls_in_text(text: str, expected: list[tuple[str, str]] | None) -> None:
    found = calls_in_text(text, TOOLS)
    assert (None if found is None else [(c.name, c.arguments) for c in found]) == expected


def test_structured_calls_are_taken_at_their_word() -> None:
    made = Response(content=FENCED, tool_calls=(ToolCall(name="x", arguments="{}"),))
    assert with_text_calls(made, TOOLS) is made
    moved = with_text_calls(Response(content=FENCED), TOOLS)
    assert moved.content is None and [c.name for c in moved.tool_calls] == ["get_weather"]
    kept = Response(content=FENCED)
    assert with_text_calls(kept, {"get_time"}) is kept  # the case has no such tool
