"""BFCL's own files (questions plus possible answers) become cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import check, load_cases
from judge.cli import main

QUESTION = {
    "id": "simple_python_0",
    "question": [
        [
            {
                "role": "user",
                "content": "Find the area of a triangle with a base of 10 units "
                "and height of 5 units.",
            }
        ]
    ],
    "function": [
        {
            "name": "geometry.area_triangle",
            "description": "Triangle area.",
            "parameters": {
                "type": "dict",
                "properties": {
                    "base": {"type": "integer"},
                    "height": {"type": "float"},
                    "unit": {"type": "string"},
                },
                "required": ["base", "height"],
            },
        }
    ],
}
ANSWER = {
    "id": "simple_python_0",
    "ground_truth": [
        {"geometry.area_triangle": {"base": [10], "height": [5.0], "unit": ["units", ""]}}
    ],
}


def test_bfcl_files_become_gradable_cases(tmp_path: Path) -> None:
    questions = tmp_path / "BFCL_v4_simple_python.json"
    answers = tmp_path / "possible_answer.json"
    questions.write_text(json.dumps(QUESTION) + "\n")
    answers.write_text(json.dumps(ANSWER) + "\n")
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), "--answers", str(answers), "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    [case] = load_cases(out)
    assert case.tools[0].name == "geometry_area_triangle"
    assert case.tools[0].parameters["type"] == "object"
    assert case.tools[0].parameters["properties"]["height"]["type"] == "number"
    assert case.meta["name_map"] == {"geometry.area_triangle": "geometry_area_triangle"}
    assert case.expected_calls is not None
    assert case.expected_calls[0].arguments == {
        "base": {"$any": [10]},
        "height": {"$any": [5.0]},
        "unit": {"$any": ["units", ""], "$optional": True},  # BFCL accepts "" as well
    }
    assert case.match is not None and case.match.args == "exact"
    # Give it a response and it grades with BFCL's semantics: an int for a float is fine,
    # and the optional unit may be left out.
    row = json.loads(out.read_text()) | {
        "response": [{"name": "geometry_area_triangle", "arguments": {"base": 10, "height": 5}}]
    }
    [result] = check([row])
    assert result.passed is True


def test_irrelevance_category_expects_no_call(tmp_path: Path) -> None:
    questions = tmp_path / "BFCL_v4_irrelevance.json"
    questions.write_text(json.dumps(QUESTION | {"id": "irrelevance_0"}) + "\n")
    out = tmp_path / "cases.jsonl"
    assert CliRunner().invoke(main, ["bfcl", str(questions), "-o", str(out)]).exit_code == 0
    [case] = load_cases(out)
    assert case.expected_calls == () and case.expected_behavior == "no_call"


def test_multi_turn_is_refused_clearly(tmp_path: Path) -> None:
    questions = tmp_path / "BFCL_v4_multi_turn_base.json"
    questions.write_text(json.dumps(QUESTION | {"question": [[], []]}) + "\n")
    done = CliRunner().invoke(main, ["bfcl", str(questions), "-o", str(tmp_path / "o.jsonl")])
    assert done.exit_code == 2
    assert "multi-turn" in done.stderr


@pytest.mark.parametrize(
    ("question", "answer", "where", "says"),
    [
        pytest.param({"question": [[]]}, None, "q", "no string `id`", id="question-without-id"),
        pytest.param([1, 2], None, "q", "expected a JSON object", id="question-not-an-object"),
        pytest.param(
            QUESTION | {"function": [{"description": "no name"}]},
            None,
            "q",
            "no 'name'",
            id="function-without-name",
        ),
        pytest.param(
            QUESTION | {"question": [{"role": "user"}]},
            None,
            "q",
            "not a list of messages",
            id="turn-not-a-list",
        ),
        pytest.param(QUESTION, {"id": "simple_python_0"}, "a", "no 'ground_truth'", id="no-truth"),
        pytest.param(
            QUESTION,
            ANSWER | {"ground_truth": [{"f": {"x": [1]}, "g": {"y": [2]}}]},
            "a",
            "one function name",
            id="two-functions-in-one-call",
        ),
        pytest.param(
            QUESTION,
            ANSWER | {"ground_truth": [{"f": {"x": 1}}]},
            "a",
            "'x' are not a list",
            id="values-not-a-list",
        ),
    ],
)
def test_a_malformed_file_names_the_file_and_line(
    tmp_path: Path, question: Any, answer: Any, where: str, says: str
) -> None:
    # Regression: KeyError / ValueError tracebacks instead of exit 2 with where and what.
    questions = tmp_path / "BFCL_v4_simple_python.json"
    answers = tmp_path / "possible_answer.json"
    questions.write_text("\n" + json.dumps(question) + "\n")  # on line 2
    answers.write_text("\n" + json.dumps(answer or ANSWER) + "\n")
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), "--answers", str(answers), "-o", str(out)]
    )
    assert done.exit_code == 2, done.output
    named = questions if where == "q" else answers
    assert f"{named}:2: not a BFCL item: " in done.stderr and says in done.stderr
    assert not out.exists()
