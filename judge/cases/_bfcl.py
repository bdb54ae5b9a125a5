"""Turn the Berkeley Function Calling Leaderboard's own files (questions, and their
`possible_answer` file, as shipped in the `bfcl-eval` package) into cases."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judge._errors import InputError
from judge.cases._json import DecodeError, loads

_TYPES = {"dict": "object", "float": "number", "tuple": "array", "any": None}


def bfcl_cases(questions: str | Path, answers: str | Path | None = None) -> list[dict[str, Any]]:
    """One case dict per BFCL question (single-turn categories), with `expected_calls` from
    the possible answers (`{"$any": [...]}`, `"$optional"` where BFCL allows ""), or `[]` for
    an irrelevance category. Cases have no `response`: a model run fills it in. A file that
    is not BFCL's raises `InputError` naming the file and line."""
    expected = _answers(answers) if answers is not None else {}
    category = Path(questions).stem.removeprefix("BFCL_v4_").removeprefix("BFCL_v3_")
    cases = []
    for number, item in _read(questions):
        with _at(questions, number):
            case = _case(item, category)
        if case["id"] in expected:
            where, calls = expected[case["id"]]
            names = case["meta"]["name_map"]
            with _at(answers or "", where):
                case["expected_calls"] = [_expected_call(call, names) for call in calls]
            case["expected_behavior"] = "call"
        elif "irrelevance" in category:
            case["expected_calls"] = []
            case["expected_behavior"] = "no_call"
        cases.append(case)
    return cases


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
    return {
        "id": item["id"],
        "messages": list(turns[0]),
        "tools": [_tool(fn, names) for fn in item.get("function", [])],
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


def _answers(path: str | Path) -> dict[str, tuple[int, Any]]:
    """The ground truth of each question id, with its line."""
    found = {}
    for number, item in _read(path):
        with _at(path, number):
            found[item["id"]] = (number, item["ground_truth"])
    return found


def _safe(name: str, names: dict[str, str]) -> str:
    """OpenAI-safe tool names (`.` is not allowed); the originals go in `meta.name_map`."""
    safe = name.replace(".", "_")
    if safe != name:
        names[name] = safe
    return safe


def _tool(fn: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": _safe(fn["name"], names),
            "description": fn.get("description", ""),
            "parameters": _schema(fn.get("parameters", {"type": "object", "properties": {}})),
        },
    }


def _schema(node: Any) -> Any:
    """BFCL's Python-flavoured types as JSON Schema (`dict` -> `object`, `float` -> `number`)."""
    if isinstance(node, list):
        return [_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _schema(value) for key, value in node.items()}
    if isinstance(out.get("type"), str) and out["type"] in _TYPES:
        mapped = _TYPES[out["type"]]
        if mapped is None:
            del out["type"]
        else:
            out["type"] = mapped
    return out


def _expected_call(call: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    if not isinstance(call, dict) or len(call) != 1:
        raise ValueError("each ground-truth call is an object with one function name")
    [(name, arguments)] = call.items()
    expected = {}
    for key, acceptable in arguments.items():
        if not isinstance(acceptable, list):
            raise ValueError(f"the acceptable values of {key!r} are not a list")
        options = [v for v in acceptable if v != ""]
        matcher: dict[str, Any] = {"$any": options}
        if "" in acceptable:
            matcher["$optional"] = True
        expected[key] = matcher
    return {"name": names.get(name, name.replace(".", "_")), "arguments": expected}
