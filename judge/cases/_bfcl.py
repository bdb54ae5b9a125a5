"""Turn the Berkeley Function Calling Leaderboard's own files (questions, and their
`possible_answer` file, as shipped in the `bfcl-eval` package) into cases that `judge check`
grades as `bfcl-eval`'s AST checker does (`_bfcl_values`, `_bfcl_encoded`), with the tools a
function-calling model is given there (`_bfcl_schema`)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judge._errors import InputError
from judge.cases._bfcl_encoded import Unconvertible
from judge.cases._bfcl_schema import function_parameters
from judge.cases._bfcl_values import PYTHON_VALUES, argument_matcher
from judge.cases._json import DecodeError, loads


def bfcl_cases(questions: str | Path, answers: str | Path | None = None) -> list[dict[str, Any]]:
    """One case dict per BFCL question (single-turn categories), with `expected_calls` from
    the possible answers and the `match` settings that grade them as BFCL does, or `[]` for
    an irrelevance category. Cases have no `response`: a model run fills it in. A file that
    is not BFCL's, an answer file of other questions, or an answer BFCL could not grade
    either raises `InputError` naming the file and line."""
    category = category_of(Path(questions).stem.removeprefix("BFCL_v4_").removeprefix("BFCL_v3_"))
    items = _read(questions)
    cases = []
    for number, item in items:
        with _at(questions, number):
            cases.append(_case(item, category))
    expected = _answers(answers, questions, cases) if answers is not None else {}
    for (_, item), case in zip(items, cases, strict=True):
        if case["id"] in expected:
            where, calls = expected[case["id"]]
            with _at(answers or "", where):
                case["expected_calls"] = [_expected_call(call, item, category) for call in calls]
            case["expected_behavior"] = "call"
            case["match"] = {"args": "exact"}
            if language_of(category) == "python":
                case["match"]["values"] = dict(PYTHON_VALUES)
        elif "irrelevance" in category:
            case["expected_calls"] = []
            case["expected_behavior"] = "no_call"
    return cases


def category_of(name: str) -> str:
    """A category's name as BFCL's ids carry it (`live_simple_3-2-0` -> `live_simple`)."""
    return name.split(":")[0].rsplit("_", 1)[0] if name[-1:].isdigit() else name


def language_of(category: str) -> str:
    """The language BFCL's checker reads a category's answers in (its `is_java`, `is_js`)."""
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else "python"


def _case(item: Any, category: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise ValueError(f"expected a JSON object, got {type(item).__name__}")
    turns = item.get("question")
    if not isinstance(turns, list) or not turns:
        raise ValueError("no question")
    if len(turns) > 1:
        raise ValueError("multi-turn BFCL items are not supported; use a single-turn category")
    if not isinstance(turns[0], list):
        raise ValueError("the question's turn is not a list of messages")
    if not isinstance(item.get("id"), str):
        raise ValueError("no string `id`")
    names: dict[str, str] = {}
    language = language_of(category)
    return {
        "id": item["id"],
        "messages": list(turns[0]),
        "tools": [_tool(fn, names, language) for fn in item.get("function", [])],
        "meta": {
            "bfcl_id": item["id"],
            "bfcl_category": category,
            "name_map": names,
            "source": "bfcl",
        },
    }


@contextmanager
def _at(path: str | Path, number: int) -> Iterator[None]:
    """Turn what a malformed item raises into an `InputError` naming the file and line."""
    try:
        yield
    except Unconvertible as exc:
        raise InputError(f"{path}:{number}: cannot be converted: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        why = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise InputError(f"{path}:{number}: not a BFCL item: {why}") from None


def _read(path: str | Path) -> list[tuple[int, Any]]:
    try:
        lines = Path(path).read_bytes().splitlines()
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    items = []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                items.append((number, loads(line)))
            except DecodeError as exc:
                raise InputError(f"{path}:{number}: not valid JSON: {exc}") from None
    return items


def _answers(
    path: str | Path, questions: str | Path, cases: list[dict[str, Any]]
) -> dict[str, tuple[int, Any]]:
    """The ground truth of each question id, with its line; refused when the file answers
    other questions (another category's file, or the same category's of another version)."""
    found = {}
    for number, item in _read(path):
        with _at(path, number):
            found[item["id"]] = (number, item["ground_truth"])
    asked = {case["id"] for case in cases}
    if found.keys() == asked:
        return found
    theirs = sorted({category_of(i) for i in found})
    ours = sorted({category_of(i) for i in asked})
    if theirs != ours and not found.keys() & asked:
        raise InputError(
            f"{path}: possible answers of category {', '.join(theirs) or 'none'}, not of "
            f"{', '.join(ours) or 'none'} as {questions} is"
        )
    raise InputError(
        f"{path}: its ids do not match the questions of {questions}: {len(found)} answers, "
        f"{len(asked)} questions, {len(found.keys() - asked)} answers to no question, "
        f"{len(asked - found.keys())} questions without an answer"
    )


def _safe(name: str, names: dict[str, str]) -> str:
    """OpenAI-safe tool names (`.` is not allowed); the originals go in `meta.name_map`."""
    safe = name.replace(".", "_")
    if safe != name:
        names[name] = safe
    return safe


def _tool(fn: dict[str, Any], names: dict[str, str], language: str) -> dict[str, Any]:
    description, parameters = function_parameters(fn, language)
    return {
        "type": "function",
        "function": {
            "name": _safe(fn["name"], names),
            "description": description,
            "parameters": parameters,
        },
    }


def _expected_call(call: Any, item: dict[str, Any], category: str) -> dict[str, Any]:
    if not isinstance(call, dict) or len(call) != 1:
        raise ValueError("each ground-truth call is an object with one function name")
    [(name, arguments)] = call.items()
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments of {name!r} are not an object")
    for key, options in arguments.items():
        if not isinstance(options, list):
            raise ValueError(f"the acceptable values of {key!r} are not a list")
    function = next((f for f in item.get("function", []) if f.get("name") == name), None)
    if function is None:
        raise Unconvertible(f"the answer calls {name!r}, which is none of the question's functions")
    parameters = function.get("parameters") or {}
    declared = parameters.get("properties") or {}
    required = parameters.get("required") or []
    language = language_of(category)
    expected = {
        key: argument_matcher(key, options, declared.get(key), key in required, language)
        for key, options in arguments.items()
    }
    return {"name": name.replace(".", "_"), "arguments": expected}
