"""The value examples of the guides cannot rot: each JSON block marked `<!-- case: OUTCOME -->`
on the line before is a whole case, run through `judge check` as a user runs it, and does what
the page says (passes, fails, needs the judge, or is refused), with the message the prose
after it quotes; each fits the published case schema (the refused ones do not); and every
matcher has an example."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from jsonschema import Draft202012Validator

from judge.cases._matcher_form import MATCHER_KEYS
from judge.cli import main
from judge.service._schema import json_schema

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))
_MARKED = re.compile(
    r"^<!-- case: (passes|fails|needs judge|invalid) -->\n```json\n(.*?)^```\n(.*?)(?=^```|^#|\Z)",
    re.MULTILINE | re.DOTALL,
)
_WHERE = re.compile(r"^.*? at (?=/)")  # `cases.jsonl:1 (case 'x') at ` before the pointer


@dataclass(frozen=True)
class Example:
    page: Path
    line: int
    outcome: str
    case: dict[str, Any]
    prose: str
    """The text after the block, up to the next block or heading, whitespace collapsed."""

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line} ({self.case.get('id')})"


def examples() -> list[Example]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in _MARKED.finditer(text):
            line = text.count("\n", 0, match.start()) + 2
            prose = " ".join(match.group(3).split())
            found.append(Example(page, line, match.group(1), json.loads(match.group(2)), prose))
    return found


EXAMPLES = examples()
RUN = EXAMPLES


def test_every_matcher_has_an_example() -> None:
    shown = " ".join(
        json.dumps(e.case["expected_calls"]) for e in EXAMPLES if e.outcome != "invalid"
    )
    missing = sorted(key for key in MATCHER_KEYS if f'"{key}":' not in shown)
    assert not missing, f"no example of {missing}"
    assert {e.outcome for e in EXAMPLES} == {"passes", "fails", "needs judge", "invalid"}


def _check(example: Example, tmp_path: Path) -> dict[str, Any]:
    cases, results = tmp_path / "cases.jsonl", tmp_path / "results.jsonl"
    cases.write_text(json.dumps(example.case) + "\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["check", str(cases), "-o", str(results)])
    assert done.exit_code == 0, f"{example}: {done.output[-2000:]}"
    (result,) = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines()]
    assert isinstance(result, dict)
    return result


def _quoted(example: Example, message: str) -> None:
    said = " ".join(_WHERE.sub("", message).split())
    assert said in example.prose, f"{example}: the page does not quote {said!r}"


@pytest.mark.parametrize("example", RUN, ids=str)
def test_each_example_does_what_the_page_says(example: Example, tmp_path: Path) -> None:
    result = _check(example, tmp_path)
    failures = result["failures"]
    kinds = [f["kind"] for f in failures]
    if example.outcome == "passes":
        assert result["passed"] is True, f"{example}: {failures}"
    elif example.outcome == "fails":
        assert result["passed"] is False and "InvalidCase" not in kinds, f"{example}: {result}"
        _quoted(example, failures[0]["message"])
    elif example.outcome == "needs judge":
        assert (result["passed"], result.get("needs_judge")) == (None, True), f"{example}"
        assert kinds == ["NeedsJudge"], f"{example}: {failures}"
        _quoted(example, failures[0]["message"])
    else:
        assert kinds == ["InvalidCase"], f"{example}: {failures}"
        _quoted(example, failures[0]["message"])


@pytest.fixture(scope="module")
def case_schema() -> Draft202012Validator:
    done = CliRunner().invoke(main, ["schema", "case"])
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    assert document == json_schema("case")
    return Draft202012Validator(document)


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_each_example_fits_the_published_case_schema(
    example: Example, case_schema: Draft202012Validator
) -> None:
    problems = [f"{e.json_path}: {e.message[:200]}" for e in case_schema.iter_errors(example.case)]
    if example.outcome == "invalid":
        assert problems, f"{example}: the schema accepts a case the reader refuses"
    else:
        assert problems == [], f"{example}: {problems}"
