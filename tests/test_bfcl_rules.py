"""`judge bfcl` converts to BFCL's own rules (issue 51): on a sample of every category bfcl-eval
ships (`tests/reference/bfcl/data/`), `judge check` on its output says what bfcl-eval's own
`ast_checker` (vendored, `tests/reference/bfcl/bfcl_eval/`) says of the gold answers and of
systematic edits of them, but for the differences listed here, each BFCL's own fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema_rs import Draft7Validator

from judge import check
from judge.cli import main
from tests.reference.bfcl.agreement import CATEGORIES, FIXTURES, files, measure, read_lines

KNOWN: dict[str, set[tuple[str, str, str]]] = {
    "parallel": {
        # `mod: ["", null]` for a number parameter whose default is not null
        ("parallel_152", "gold_full", "schema"),
        ("parallel_152", "drop_optional", "schema"),
    },
    "simple_java": {
        # `"meta": [{"format": "epoch_millis"}]`: BFCL iterates the string's letters
        *{
            ("simple_java_64", kind, "not_a_list")
            for kind in ("gold", "case", "upper", "space", "punct", "nested_case", "syntax_alt")
        },
    },
}
"""The differences on the fixtures: (id, edit, cause), causes as `agreement.CAUSES` says."""


def converted(tmp_path: Path, category: str) -> dict[str, dict[str, Any]]:
    questions, answers = files(FIXTURES, category)
    out = tmp_path / f"{category}.jsonl"
    given = ["--possible-answers", str(answers)] if answers else []
    done = CliRunner().invoke(main, ["bfcl", str(questions), *given, "-o", str(out)])
    assert done.exit_code == 0, done.output
    return {case["id"]: case for case in read_lines(out)}


@pytest.mark.parametrize("category", CATEGORIES)
def test_judge_check_agrees_with_bfcl_eval(tmp_path: Path, category: str) -> None:
    tally = measure(FIXTURES, category, cases=converted(tmp_path, category))
    found = {(d["id"], d["kind"], d["cause"]) for d in tally.differences}
    assert found == KNOWN.get(category, set()), json.dumps(tally.differences, indent=1)
    each = 2 if "irrelevance" in category else 10  # (a call, or none, to an irrelevance item)
    assert tally.candidates >= each * len(read_lines(files(FIXTURES, category)[0]))


@pytest.mark.parametrize("category", CATEGORIES)
def test_converted_tools_are_json_schema(tmp_path: Path, category: str) -> None:
    language = "python" if "java" not in category else "other"
    for case in converted(tmp_path, category).values():
        for tool in case["tools"]:
            parameters = tool["function"]["parameters"]
            Draft7Validator(parameters)  # raises on a schema that is none
            for value in parameters["properties"].values():
                assert "enum" not in value  # BFCL does not enforce it: said in words
                if language != "python":  # a value in the language's syntax, as a string
                    assert value["type"] == "string"


def test_per_key_options_of_a_dict_are_nested_matchers(tmp_path: Path) -> None:
    # Regression (issue 51): dict parameters kept BFCL's per-key option lists as literal
    # values, so a correct answer failed.
    question = {
        "id": "simple_python_0",
        "question": [[{"role": "user", "content": "Enrol Ann."}]],
        "function": [
            {
                "name": "enrol",
                "description": "Enrol a student.",
                "parameters": {
                    "type": "dict",
                    "properties": {"student": {"type": "dict", "description": "Who."}},
                    "required": ["student"],
                },
            }
        ],
    }
    student = {"department": ["Science"], "school": ["Bluebird High School", "Bluebird HS"]}
    answer = {"id": "simple_python_0", "ground_truth": [{"enrol": {"student": [student]}}]}
    questions, answers = write(tmp_path, question, answer)
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), "--possible-answers", answers, "-o", str(out)]
    )
    assert done.exit_code == 0, done.output
    [case] = read_lines(out)
    [matcher] = case["expected_calls"][0]["arguments"]["student"]["$any"]
    assert matcher == {
        "$object": {
            "department": {"$any": ["Science"]},
            "school": {"$any": ["Bluebird High School", "Bluebird HS"]},
        },
        "extra": "forbid",
    }
    given = {"department": "science", "school": "Bluebird HS"}
    [result] = check([case | {"response": [{"name": "enrol", "arguments": {"student": given}}]}])
    assert result.passed is True, result.failures


def write(
    tmp_path: Path, question: Any, answer: Any, name: str = "simple_python"
) -> tuple[Path, str]:
    questions = tmp_path / f"BFCL_v4_{name}.json"
    answers = tmp_path / "possible_answer.json"
    questions.write_text("\n" + json.dumps(question) + "\n")  # on line 2
    answers.write_text(
        "\n"
        + "\n".join(json.dumps(a) for a in ([answer] if isinstance(answer, dict) else answer))
        + "\n"
    )
    return questions, str(answers)


def first_item(category: str) -> tuple[dict[str, Any], dict[str, Any]]:
    questions, answers = files(FIXTURES, category)
    assert answers is not None
    return read_lines(questions)[0], read_lines(answers)[0]


def with_type(category: str, kind: str, **extra: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The category's first fixture item, its first answered parameter declared `kind`."""
    question, answer = first_item(category)
    [(name, arguments)] = answer["ground_truth"][0].items()
    function = next(f for f in question["function"] if f["name"] == name)
    first = next(iter(arguments))
    function["parameters"]["properties"][first] = {"type": kind, "description": "x", **extra}
    return question, answer


@pytest.mark.parametrize(
    ("make", "says"),
    [
        pytest.param(
            lambda: with_type("simple_python", "complex"),
            "has type 'complex', which BFCL cannot check",
            id="python-type-bfcl-lacks",
        ),
        pytest.param(
            lambda: with_type("simple_java", "Set"),
            "has java type 'Set', which BFCL cannot parse",
            id="java-set",
        ),
        pytest.param(
            lambda: with_type("simple_python", "array"),
            "is an array of None, which BFCL cannot check",
            id="array-without-items",
        ),
        pytest.param(
            lambda: (
                first_item("simple_python")[0],
                first_item("simple_python")[1] | {"ground_truth": [{"nowhere": {}}]},
            ),
            "the answer calls 'nowhere', which is none of the question's functions",
            id="answer-calls-no-function",
        ),
    ],
)
def test_what_bfcl_could_not_grade_is_refused(tmp_path: Path, make: Any, says: str) -> None:
    question, answer = make()
    name = question["id"].rsplit("_", 1)[0]
    questions, answers = write(tmp_path, question, answer, name)
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), "--possible-answers", answers, "-o", str(out)]
    )
    assert done.exit_code == 2, done.output
    assert f"{answers}:2: cannot be converted: " in done.stderr and says in done.stderr
    assert not out.exists()


def test_answers_to_other_questions_are_refused_with_the_counts(tmp_path: Path) -> None:
    questions, answers = files(FIXTURES, "simple_python")
    assert answers is not None
    fewer = tmp_path / "possible_answer.json"
    fewer.write_text("".join(json.dumps(a) + "\n" for a in read_lines(answers)[:-3]))
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), "--possible-answers", str(fewer), "-o", str(out)]
    )
    assert done.exit_code == 2, done.output
    counts = "37 answers, 40 questions, 0 answers to no question, 3 questions without an answer"
    assert f"{fewer}: its ids do not match the questions of {questions}: {counts}" in done.stderr
    assert not out.exists()


def test_answers_of_another_category_are_refused(tmp_path: Path) -> None:
    questions, _ = files(FIXTURES, "simple_python")
    _, other = files(FIXTURES, "multiple")
    out = tmp_path / "cases.jsonl"
    done = CliRunner().invoke(
        main, ["bfcl", str(questions), "--possible-answers", str(other), "-o", str(out)]
    )
    assert done.exit_code == 2, done.output
    assert (
        f"{other}: possible answers of category multiple, not of simple_python as {questions} is"
        in done.stderr
    )
    assert not out.exists()
