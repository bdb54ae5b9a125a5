"""`judge align`'s `probe` candidate: the embedded judge's probe heads trained on the user's
labels, within their distribution. The embedded judge runs on loopback servers: its chat
endpoint answers every one-token question with the same coin (its answers tell nothing), its
native endpoint gives hidden states that do tell a `-good` call from a `-bad` one. The probe
trained fold by fold wins held out (a leak fails a test), the spec carries its heads, `judge
grade --aligned` decides with them, and a judge that has no hidden states refuses the spec."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from judge.calibrate import _align_probe
from judge.cli import main
from judge.judging._aligned import load_aligned
from judge.judging._hidden import HIDDEN_SIZE
from tests.chat_server import one_token, serving
from tests.helpers import invoke
from tests.loopback import Answer, LoopbackServer, Request
from tests.test_align import labelled, write
from tests.test_align_weights import QUICK


class TellingStates(LoopbackServer):
    """llama.cpp's native endpoints: the template joins every message; the hidden state of a
    prompt about a `-good` call sits apart from a `-bad` one's along 24 directions."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, request: Request) -> Answer:
        if request.path == "/apply-template":
            text = "\n".join(str(m.get("content")) for m in request.body["messages"])
            return Answer(body={"prompt": text})
        if request.path == "/embedding":
            self.embedded += 1
            prompt = str(request.body.get("content"))
            seed = int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:4], "little")
            vector = np.random.default_rng(seed).normal(size=HIDDEN_SIZE)
            vector[:24] += 1.5 if "-good" in prompt else -1.5
            return Answer(body=[{"index": 0, "embedding": [vector.tolist()]}])
        return Answer(404, {"error": "no route"})


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The embedded judge's two endpoints on loopback servers."""
    from judge.endpoints import _client, _local
    from judge.endpoints._endpoint import Endpoint

    states = TellingStates().start()
    with serving(lambda body: one_token(0.6)) as chat:
        local = Endpoint(base_url=chat.url, model="local-test", provider="local")
        monkeypatch.setattr(_client, "local_endpoint", lambda: local)
        monkeypatch.setattr(_local, "local_root", lambda: states.url)
        try:
            yield chat, states
        finally:
            states.stop()


def judge_run(tmp_path: Path, *args: str) -> Result:
    return CliRunner().invoke(
        main, [*args, "--model", "local", "--cache-dir", str(tmp_path / "cache")]
    )


def test_a_probe_trained_on_the_labels_wins_held_out_and_grade_decides_with_it(
    tmp_path: Path, embedded: Any
) -> None:
    chat, states = embedded
    sample = write(tmp_path / "labelled.jsonl", labelled(40))
    out = tmp_path / "aligned.json"
    done = judge_run(tmp_path, "align", sample, "-o", str(out), "--candidates", "base,probe")
    assert done.exit_code == 0, done.output
    spec = load_aligned(out)
    for dimension in ("selection", "arguments"):
        found = spec.dimensions[dimension]
        assert found.choice == "probe", found.why
        assert {h.dimension for h in found.heads} == {dimension} and found.probe_rubrics
        held = found.measured["candidates"]
        assert set(held) == {"base", "probe"}
        assert held["probe"]["kappa"] > 0.8 and held["base"]["kappa"] < 0.3
        assert found.measured["after"]["kappa"] > 0.8
    asked = len(chat.chat_requests), states.embedded
    fresh = [row | {"id": f"new{i}", "labels": None} for i, row in enumerate(labelled(6))]
    graded = tmp_path / "graded.jsonl"
    done = judge_run(tmp_path, "grade", write(tmp_path / "fresh.jsonl", fresh), "-o",
                     str(graded), "--aligned", str(out))  # fmt: skip
    assert done.exit_code in (0, 1), done.output
    assert (len(chat.chat_requests), states.embedded) == asked  # the same prompts: cached
    for line in graded.read_text().splitlines():
        record = json.loads(line)
        good = record["id"] in {"new0", "new2", "new4"}
        assert record["judge"]["selection"]["verdict"] == ("correct" if good else "incorrect")
        assert record["judge"]["selection"]["confidence_source"] == "probe"


def test_a_case_is_never_decided_by_heads_fitted_on_its_own_label(
    tmp_path: Path, embedded: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[set[int], set[int]]] = []
    original = _align_probe.ProbeUnits.verdicts

    def recorded(self: Any, d: Any, train: Any, base: dict[int, str | None]) -> Any:
        calls.append((set(train), set(base)))
        return original(self, d, train, base)

    monkeypatch.setattr(_align_probe.ProbeUnits, "verdicts", recorded)
    sample = write(tmp_path / "labelled.jsonl", labelled(40))
    done = judge_run(tmp_path, "align", sample, "-o", str(tmp_path / "a.json"),
                     "--candidates", "base,probe")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert len(calls) == 2 * 15
    for train, held in calls:
        assert train and held and not train & held and len(train | held) == 40


def test_the_probe_is_not_measured_for_a_hosted_judge_and_its_spec_is_refused_there(
    tmp_path: Path, embedded: Any
) -> None:
    sample = write(tmp_path / "labelled.jsonl", labelled(40))
    out = tmp_path / "aligned.json"
    assert judge_run(tmp_path, "align", sample, "-o", str(out), "--candidates",
                     "base,probe").exit_code == 0  # fmt: skip
    with serving(lambda body: one_token(0.6)) as hosted:
        rows = write(tmp_path / "rows.jsonl", labelled(24))
        measured = invoke(hosted, tmp_path, "align", rows, "-o", str(tmp_path / "h.json"),
                          "--candidates", "base,probe", "--rubrics", QUICK)  # fmt: skip
        refused = invoke(hosted, tmp_path, "grade", rows, "-o", str(tmp_path / "g.jsonl"),
                         "--aligned", str(out))  # fmt: skip
    assert measured.exit_code == 0, measured.output
    assert "selection: probe not measured" in measured.output
    assert refused.exit_code == 2
    assert "probe reads the embedded judge's hidden states" in refused.output


def test_the_probe_is_measured_only_when_named(tmp_path: Path, embedded: Any) -> None:
    """It costs a hidden state a case: the default candidates leave it out, and read none."""
    _, states = embedded
    sample = write(tmp_path / "labelled.jsonl", labelled(40))
    out = tmp_path / "aligned.json"
    done = judge_run(tmp_path, "align", sample, "-o", str(out))
    assert done.exit_code == 0, done.output
    measured = load_aligned(out).dimensions["selection"].measured["candidates"]
    assert "probe" not in measured and "weights" in measured
    assert states.embedded == 0
