"""How often `judge bfcl` + `judge check` and bfcl-eval's own AST checker (vendored here,
`bfcl_eval/`) say the same of the same candidate answers (`candidates.py`).

Used by `tests/test_bfcl_rules.py` on the fixture sample (`data/`) and by
`bench/bfcl_agreement.py` on every other item of the categories bfcl-eval ships."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judge import check
from judge.cases._bfcl import bfcl_cases, category_of, language_of
from tests.reference.bfcl.candidates import Call, Candidate, candidates
from tests.reference.bfcl.encoding import encode

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "data"
AST_CATEGORIES = (
    "simple_python", "multiple", "parallel", "parallel_multiple", "simple_java",
    "simple_javascript", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
)  # fmt: skip
CATEGORIES = (*AST_CATEGORIES, "irrelevance", "live_irrelevance")
MODEL = "judge-bfcl-FC"  # the stub model config: `.` in names given as `_`


@dataclass
class Tally:
    """Agreement of one category."""

    candidates: int = 0
    agreed: int = 0
    """Candidates judge and bfcl-eval both pass or both fail."""
    differences: list[dict[str, Any]] = field(default_factory=list)
    """The others: id, edit, cause, both verdicts, judge's failures, the calls."""
    causes: Counter[str] = field(default_factory=Counter)
    """The differences by cause (`CAUSES`)."""

    @property
    def share(self) -> float:
        return self.agreed / self.candidates if self.candidates else 1.0


def files(data: Path, category: str) -> tuple[Path, Path | None]:
    answers = data / "possible_answer" / f"BFCL_v4_{category}.json"
    return data / f"BFCL_v4_{category}.json", answers if answers.exists() else None


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sample_ids(ids: list[str], size: int) -> list[str]:
    """The fixture sample: `size` ids (at most half of them), by their hash: the same on every
    machine, spread over the file."""
    size = min(size, len(ids) // 2)
    ranked = sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    chosen = set(ranked[:size])
    return [i for i in ids if i in chosen]


def reference_verdict(
    item: dict[str, Any], truth: Any, category: str, calls: tuple[Call, ...]
) -> bool:
    """bfcl-eval's verdict: its `ast_checker` (no call at all: irrelevance's rule, else the
    checker's wrong count); an exception it raises counts as a failure."""
    if truth is None:
        return not calls
    if not calls:
        return False
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    checker = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    language = importlib.import_module("bfcl_eval.constants.enums").Language
    output = [{name.replace(".", "_"): arguments} for name, arguments in calls]
    try:
        result = checker.ast_checker(
            item["function"], output, truth, language(language_of(category)), category, MODEL
        )
    except Exception:
        return False
    return bool(result["valid"])


def encoded(
    candidate: Candidate, functions: list[dict[str, Any]], language: str
) -> tuple[Call, ...]:
    """The calls with their values as a model gives them in the category's language."""
    docs = {f["name"]: f.get("parameters", {}).get("properties", {}) for f in functions}
    style = candidate.kind.removeprefix("syntax_") if candidate.kind.startswith("syntax_") else ""
    return tuple(
        (
            name,
            {
                k: encode(v, docs.get(name, {}).get(k, {}), language, style)
                for k, v in arguments.items()
            },
        )
        for name, arguments in candidate.calls
    )


def _response(calls: tuple[Call, ...]) -> Any:
    if not calls:
        return {"role": "assistant", "content": "I cannot do that with the functions I have."}
    return [{"name": name.replace(".", "_"), "arguments": arguments} for name, arguments in calls]


def irrelevance_candidates(item: dict[str, Any]) -> list[Candidate]:
    if not item["function"]:
        return [Candidate("no_call", ())]
    first = item["function"][0]
    required = first.get("parameters", {}).get("required", [])
    return [
        Candidate("no_call", ()),
        Candidate("call", ((first["name"], {k: "x" for k in required}),)),
    ]


def measure(
    data: Path,
    category: str,
    *,
    cases: dict[str, dict[str, Any]] | None = None,
    only: set[str] | None = None,
    leave_out: set[str] | None = None,
) -> Tally:
    """Grade every candidate of every item of one category (those in `only`, none in
    `leave_out`) with `judge.check` on its converted case (`cases`, as `judge bfcl` wrote
    them; else converted here with `bfcl_cases`) and with bfcl-eval's checker."""
    questions, answers = files(data, category)
    items = {i["id"]: i for i in read_lines(questions)}
    truths = {a["id"]: a["ground_truth"] for a in read_lines(answers)} if answers else {}
    language = language_of(category_of(category))
    if cases is None:
        cases = {c["id"]: c for c in bfcl_cases(questions, answers)}
    rows, expected = [], []
    for item_id, item in items.items():
        if (only is not None and item_id not in only) or (leave_out and item_id in leave_out):
            continue
        truth = truths.get(item_id)
        for number, candidate in enumerate(_all_candidates(item, truth, language)):
            calls = encoded(candidate, item["function"], language)
            rows.append(
                cases[item_id] | {"id": f"{item_id}#{number}", "response": _response(calls)}
            )
            verdict = reference_verdict(item, truth, category, calls)
            expected.append((item, truth, candidate, calls, verdict))
    tally = Tally()
    for result, (item, truth, candidate, calls, bfcl) in zip(check(rows), expected, strict=True):
        tally.candidates += 1
        if result.passed is bfcl:
            tally.agreed += 1
            continue
        failures = [f"{f.kind}: {f.message}" for f in result.failures]
        cause = classify(item, truth, category, calls, failures)
        tally.causes[cause] += 1
        tally.differences.append({
            "id": item["id"], "kind": candidate.kind, "cause": cause, "bfcl": bfcl,
            "judge": result.passed, "why": failures[:2], "calls": [list(c) for c in calls],
        })  # fmt: skip
    return tally


def _all_candidates(item: dict[str, Any], truth: Any, language: str) -> list[Candidate]:
    if not truth:
        return irrelevance_candidates(item)
    found = candidates(item["id"], truth, item["function"])
    if language != "python":  # the gold in other syntax: valid, and near misses
        found += [Candidate(f"syntax_{style}", found[0].calls) for style in ("alt", "bad")]
    return found


CAUSES = {
    "schema": "the gold answer contradicts its schema (BFCL reads it as a variable's name)",
    "lacks": "the answer names a parameter the function lacks",
    "greedy": "BFCL pairs parallel calls greedily (another pairing matches)",
    "not_a_list": "an acceptable value is not a list of options (BFCL iterates its letters)",
    "float_item": "a float list item given as an integer (BFCL: a type error; no matcher says "
    "'a float, not an integer')",
    "other": "not classified",
}
"""Why judge and bfcl-eval differ on a candidate: BFCL's own faults, and what judge lacks."""


def classify(
    item: dict[str, Any], truth: Any, category: str, calls: tuple[Call, ...], failures: list[str]
) -> str:
    """The cause of one difference (a key of `CAUSES`)."""
    docs = {f["name"]: f.get("parameters", {}).get("properties", {}) for f in item["function"]}
    for call in truth or []:
        [(name, arguments)] = call.items()
        if any(key not in docs.get(name, {}) for key in arguments):
            return "lacks"
        for values in arguments.values():
            for value in values:
                if isinstance(value, dict) and any(not isinstance(v, list) for v in value.values()):
                    return "not_a_list"
    if failures and all(f.startswith("SchemaMismatch") for f in failures):
        return "schema"
    if "parallel" in category and not failures and len(calls) > 1:
        for order in itertools.permutations(calls):
            if reference_verdict(item, truth, category, order):
                return "greedy"
    for _, arguments in calls:
        for value in arguments.values():
            kinds = {type(v) for v in value} if isinstance(value, list) else set()
            if {int, float} <= kinds:
                return "float_item"
    return "other"
