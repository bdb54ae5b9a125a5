"""BFCL's own files (questions plus possible answers) become cases."""

from __future__ import annotations

import json
from pathlib import Path

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
        "unit": {"$any": ["units"], "$optional": True},
    }
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
