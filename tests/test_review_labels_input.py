"""`PUT /api/labels/{id}` with bodies JSON has no text for: a NaN or Infinity literal, a lone
surrogate in a value or a key, is a 422 naming the field and why, in a body that is itself
valid JSON (FastAPI's own reply echoes the value and fails, a 500); the sample file stays
as it was; and a seeded fuzz of the endpoint."""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from judge.calibrate._review import Review
from judge.judging._grade import Judge
from judge.service._review import create_review_app
from tests.fuzz import Budget, flip, json_bytes, retyped, truncate
from tests.review_helpers import file_labels, write_sample

CASE = "w10-sofia"
VALID = {"selection": "correct", "arguments": "incorrect", "note": "asks for Sofia, fine"}


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_sample(tmp_path_factory.mktemp("labels") / "sample.jsonl")


@pytest.fixture
def sample(pristine: Path, tmp_path: Path) -> Path:
    return Path(shutil.copy(pristine, tmp_path / "sample.jsonl"))


@pytest.fixture
def app(sample: Path) -> Iterator[TestClient]:
    """The review app over the sample (no results: labelling needs none); a server error
    comes back as a 500, not raised."""

    def judge_for(answers: bool) -> Judge:  # never asked: labels are written, not judged
        return Judge(model="m", base_url="http://127.0.0.1:9", answers=answers, cache=False)

    review = Review(sample, None, judge_for=judge_for)
    with TestClient(create_review_app(review), base_url="http://127.0.0.1",
                    raise_server_exceptions=False) as client:  # fmt: skip
        yield client


def put(app: TestClient, body: bytes, case_id: str = CASE) -> Any:
    return app.put(
        f"/api/labels/{case_id}", content=body, headers={"Content-Type": "application/json"}
    )


def strict_json(text: str) -> Any:
    """The reply's JSON, refusing what JSON does not allow (NaN, Infinity)."""

    def refuse(name: str) -> None:
        raise ValueError(f"{name} in a reply")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("body", "pointer", "says"),
    [
        pytest.param(b'{"note": NaN}', "/note", "got NaN, which JSON does not allow",
                     id="note-nan"),
        pytest.param(b'{"note": Infinity}', "/note", "got Infinity", id="note-infinity"),
        pytest.param(b'{"note": -Infinity}', "/note", "got -Infinity", id="note-minus-infinity"),
        pytest.param(b'{"note": "\\ud800"}', "/note", "a lone surrogate, \\ud800",
                     id="note-lone-surrogate"),
        pytest.param(b'{"note": "ok \\udfff then"}', "/note", "a lone surrogate, \\udfff",
                     id="note-lone-low-surrogate"),
        pytest.param(b'{"selection": NaN}', "/selection", "'correct' or 'incorrect' (got NaN",
                     id="selection-nan"),
        pytest.param(b'{"selection": "\\ud800"}', "/selection", "lone surrogate",
                     id="selection-lone-surrogate"),
        pytest.param(b'{"selection": "correct", "\\ud800": 1}', "", "lone surrogate",
                     id="key-lone-surrogate"),
    ],
)  # fmt: skip
def test_a_label_body_json_cannot_echo_is_a_422_with_the_reason(
    app: TestClient, sample: Path, body: bytes, pointer: str, says: str
) -> None:
    before = sample.read_bytes()
    reply = put(app, body)
    assert reply.status_code == 422, reply.text
    found = strict_json(reply.text)
    assert says in found["detail"] and f"body {pointer or '/'}: " in found["detail"]
    assert [e["pointer"] for e in found["errors"]][:1] == [pointer]
    assert "input" not in json.dumps(found["errors"])  # the value sent is never echoed
    assert sample.read_bytes() == before


def test_a_note_with_any_text_json_holds_is_written(app: TestClient, sample: Path) -> None:
    note = "emoji \U0001f600, NUL \x00, a pair \U00010348"  # a surrogate pair is text
    reply = put(app, json.dumps({"note": note}).encode())
    assert reply.status_code == 200, reply.text
    row = next(json.loads(x) for x in sample.read_text().splitlines() if CASE in x)
    assert row["meta"]["label_note"] == note


def _mutated(rng: random.Random) -> bytes:
    """The valid body with one random mutation: bytes flipped or cut, a value retyped (NaN,
    a lone surrogate, a huge integer...), or a key added."""
    how = rng.randrange(4)
    if how == 0:
        return flip(json.dumps(VALID).encode(), rng)
    if how == 1:
        return truncate(json.dumps(VALID).encode(), rng)
    if how == 2:
        return json_bytes(retyped(VALID, rng)[0])
    return json_bytes({**VALID, rng.choice(["colour", "\ud800", "", "note "]): 1})


@pytest.mark.parametrize("seed", [pytest.param(35, id="seed-35")])
def test_fuzzed_label_writes_are_written_or_refused_never_a_500(
    app: TestClient, sample: Path, seed: int
) -> None:
    """Every write is taken (and in the file) or refused with a 422 whose body is valid
    JSON; the sample stays a file of cases, each line JSON."""
    rng = random.Random(seed)
    with Budget(seconds=4.0, peak_bytes=16 * 1024 * 1024).running() as budget:
        while budget.more():
            body = _mutated(rng)
            reply = put(app, body)
            assert reply.status_code in (200, 400, 422), (body, reply.status_code, reply.text)
            found = strict_json(reply.text)
            if reply.status_code != 200:  # (400: a body that is not UTF-8)
                assert found["detail"], body
                continue
            sent = json.loads(body)
            labels = file_labels(sample)[CASE]
            for name in ("selection", "arguments"):
                if isinstance(sent.get(name), str) and sent[name] != "not_applicable":
                    assert labels[name] == sent[name], body
    for line in sample.read_text().splitlines():
        strict_json(line)
