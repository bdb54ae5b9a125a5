"""The probe: hidden states from a llama.cpp-like server, the probe file, its training with
figures held out by source, and the verdicts it decides."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from judge._errors import JudgeError
from judge.calibrate._probe_data import Row, Unit
from judge.calibrate._probe_fit import fit_head, matrix
from judge.calibrate._probe_train import held_out, kept, train
from judge.cli import main
from judge.endpoints._local import MODEL_SHA256
from judge.judging._cache import VerdictCache
from judge.judging._hidden import HIDDEN_SIZE, HiddenStateError, HiddenStates, read_embedding
from judge.judging._linear_probe import ProbeError, load_probe
from judge.judging._probing import resolve_probe
from judge.judging._rubric import load_rubrics
from judge.judging._scored import selection_verdict
from tests.loopback import Answer, LoopbackServer, Request

RNG = np.random.default_rng(7)


def unit(source: str, i: int, *, informative: bool, dimension: str = "selection") -> Unit:
    """A labelled case whose label the hidden state tells (`informative`) or not; its answer
    (`right_tool`) and the rubric's own verdict are coin flips."""
    hidden = RNG.normal(size=HIDDEN_SIZE)
    label = bool(RNG.random() < 0.5)
    if informative:  # right verdicts sit apart along a few directions
        hidden[:24] += 1.2 if label else -1.2
    features = {"right_tool": float(RNG.uniform(0.05, 0.95)), "word_margin": float(i % 3)}
    branch = "called"
    return Unit(
        source,
        f"{source}-{i}",
        dimension,
        branch,
        label,
        hidden.astype(np.float32),
        [Row(features, label, True)],
        rubric_says=bool(RNG.random() < 0.5),
    )


@pytest.fixture(autouse=True)
def small_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """One regularisation and no PCA to choose from (the grid's search is the same code)."""
    from judge.calibrate import _probe_fit

    monkeypatch.setattr(_probe_fit, "C_GRID", (0.03, 0.1))
    monkeypatch.setattr(_probe_fit, "PCA_GRID", (None,))
    monkeypatch.setattr(_probe_fit, "ANCHORED_GRID", (False,))


def units(informative: bool, per: int = 60) -> list[Unit]:
    return [unit(s, i, informative=informative) for s in ("a", "b", "c") for i in range(per)]


def test_held_out_figures_come_from_fits_without_the_source() -> None:
    found = units(informative=True)
    report = held_out(found)
    figures = report["selection"]
    assert figures["method"] == "leave-one-dataset-out"  # type: ignore[index]
    assert set(figures["sources"]) == {"a", "b", "c"}  # type: ignore[index]
    for row in figures["sources"].values():  # type: ignore[index]
        assert row["n"] == 60
        assert row["probe"] > 0.4  # the hidden state tells the label
        assert abs(row["rubric"]) < 0.35  # coin flips do not
    assert kept(report) == {"selection": "probe"}


def test_a_probe_that_does_not_beat_the_rubric_is_left_out() -> None:
    found = units(informative=False)
    for u in found:  # the rubric is right here, the hidden state is noise
        u.rubric_says = u.label
    probe, report = train([], found, model_sha256=MODEL_SHA256, rubrics={})
    assert kept(report)["selection"].startswith("left out")
    assert probe.heads == {}
    assert probe.manifest.kept["selection"].startswith("left out")


def test_one_source_is_cross_validated_and_says_so() -> None:
    found = [unit("only", i, informative=True) for i in range(80)]
    report = held_out(found)
    assert report["selection"]["method"].startswith("cross-validation")  # type: ignore[index]
    assert report["selection"]["sources"]["only"]["n"] == 80  # type: ignore[index]


def test_a_head_scores_as_scikit_learn_predicts() -> None:
    from sklearn.linear_model import LogisticRegression

    m = matrix([u for u in units(informative=True, per=40) if u.source == "a"])
    assert m is not None  # one source: nothing projected out, every row weighs the same
    head = fit_head(m, "selection", "called", 0.05, None)
    z = (m.hidden - m.hidden.mean(axis=0)) / np.where(
        m.hidden.std(axis=0) < 1e-6, 1.0, m.hidden.std(axis=0)
    )
    e = (m.extras - m.extras.mean(axis=0)) / m.extras.std(axis=0)
    model = LogisticRegression(C=0.05, class_weight="balanced", max_iter=3000)
    model.fit(np.hstack([z, e]), m.labels)
    expected = model.predict_proba(np.hstack([z, e]))[:, 1]
    assert np.allclose(head.scores(m.hidden, m.extras), expected, atol=1e-4)
    with_pca = fit_head(m, "selection", "called", 0.05, 8)
    assert with_pca.components is not None and with_pca.components.shape == (8, HIDDEN_SIZE)
    anchored = fit_head(m, "selection", "called", 1e-6, None, anchored=True)
    assert anchored.method == "anchored"
    # regularised to nothing, an anchored head gives back the answers and counts' own
    # regression: the hidden state corrects it only where the data pays for that
    alone = fit_head(m, "selection", "called", 1.0, None, hidden=False)
    shift = _logit(anchored.scores(m.hidden, m.extras)) - _logit(alone.scores(m.hidden, m.extras))
    assert np.ptp(shift) < 0.02  # the same but for a free intercept (not class-balanced)


def test_what_tells_the_sources_apart_weighs_nothing() -> None:
    found = units(informative=True, per=40)
    for u in found:  # each source sits somewhere else, along its own direction
        u.hidden = u.hidden + {"a": 0.0, "b": 3.0, "c": -3.0}[u.source] * np.eye(HIDDEN_SIZE)[100]
        u.hidden = u.hidden + {"a": 2.0, "b": 0.0, "c": 0.0}[u.source] * np.eye(HIDDEN_SIZE)[200]
    m = matrix(found)
    assert m is not None
    head = fit_head(m, "selection", "called", 0.05, None)
    coef = head.coef.array()[:HIDDEN_SIZE] / head.scale.array()  # per raw unit
    means = {s: m.hidden[np.array(m.groups) == s].mean(axis=0) for s in "abc"}
    for one, other in (("a", "b"), ("b", "c")):
        assert abs(coef @ (means[one] - means[other])) < 1e-3
    p = head.scores(m.hidden, m.extras)
    assert ((p >= 0.5) == m.labels).mean() > 0.8  # the label's directions still count


_TRAINED: list[bytes] = []


def _logit(p: np.ndarray) -> np.ndarray:
    found: np.ndarray = np.log(p / (1 - p))
    return found


def write_probe(tmp_path: Path) -> Path:
    if not _TRAINED:  # trained once for the tests that read a file
        found = units(informative=True, per=40)
        quick = {r.name: r.version for r in load_rubrics(kind="quick").all if r.scored}
        _TRAINED.append(train([], found, model_sha256=MODEL_SHA256, rubrics=quick)[0].to_bytes())
    path = tmp_path / "probe.json"
    path.write_bytes(_TRAINED[0])
    return path


def test_a_probe_file_round_trips_with_its_hash(tmp_path: Path) -> None:
    path = write_probe(tmp_path)
    probe = load_probe(path, model_sha256=MODEL_SHA256)
    assert set(probe.heads) == {("selection", "called")}
    import hashlib

    assert probe.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    held = probe.manifest.held_out["selection"]
    assert set(held["sources"]) == {"a", "b", "c"}


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"not json", "not JSON"),
        (b'{"format": "other"}', "not a probe file"),
        (b'{"format": "tool-call-judge-probe", "version": 99}', "version 99"),
        (b"[" * 40 + b"]" * 40, "nested deeper"),
    ],
)
def test_a_bad_probe_file_is_refused_by_name(tmp_path: Path, content: bytes, says: str) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(ProbeError, match=says) as raised:
        load_probe(path)
    assert str(path) in str(raised.value)


def test_arrays_that_do_not_fit_together_are_refused(tmp_path: Path) -> None:
    path = write_probe(tmp_path)
    data = json.loads(path.read_text())
    data["heads"][0]["coef"]["shape"] = [3]
    path.write_text(json.dumps(data))
    with pytest.raises(ProbeError, match="holds"):
        load_probe(path)
    data["heads"][0]["oops"] = 1
    path.write_text(json.dumps(data))
    with pytest.raises(ProbeError, match="/heads/0/oops"):
        load_probe(path)


def test_a_probe_of_another_model_is_refused(tmp_path: Path) -> None:
    path = write_probe(tmp_path)
    with pytest.raises(ProbeError, match="another|fitted on the hidden states of model"):
        load_probe(path, model_sha256="0" * 64)


def test_a_probe_needs_the_embedded_judge(tmp_path: Path) -> None:
    path = write_probe(tmp_path)
    with pytest.raises(JudgeError, match="embedded judge's hidden states"):
        resolve_probe(str(path), embedded=False, own_rubrics=True)
    assert resolve_probe("default", embedded=False, own_rubrics=True) is None
    assert resolve_probe("default", embedded=True, own_rubrics=False) is None
    assert resolve_probe(None, embedded=True, own_rubrics=True) is None


def test_the_probe_decides_and_a_calibration_refits_on_top_of_it() -> None:
    rubric = load_rubrics(kind="quick").selection
    answers = {"right_tool": 0.9}
    counts = {"word_margin": 2.0, "repeated": 0.0, "guessed_required": 0.0}
    plain = selection_verdict(rubric, answers, True, None, counts)
    assert plain.confidence_source == "logprobs" and plain.verdict == "correct"
    probed = selection_verdict(rubric, answers, True, None, counts, probe=0.2)
    assert probed.verdict == "incorrect" and probed.confidence == pytest.approx(0.8)
    assert probed.confidence_source == "probe"
    assert probed.features is not None and probed.features["probe"] == 0.2
    assert "probe on the hidden state: P(correct) 0.20" in probed.reasoning
    from judge.judging._rubric import Combine
    from judge.judging._scored import Fit

    flipped = Fit({"called": Combine(bias=0.0, weights={"probe": -1.0})}, 0.5)
    refit = selection_verdict(rubric, answers, True, flipped, counts, probe=0.2)
    assert refit.verdict == "correct" and refit.confidence == pytest.approx(0.8)


class LlamaServer(LoopbackServer):
    """llama.cpp's native endpoints as the probe uses them, scripted."""

    def __init__(self, vector: Any, status: int = 200) -> None:
        super().__init__()
        self.vector, self.status = vector, status

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def handle(self, request: Request) -> Answer:
        if request.path == "/apply-template":
            last = request.body["messages"][-1]["content"]
            return Answer(body={"prompt": f"<|im_start|>user\n{last}<|im_end|>\n"})
        if request.path == "/embedding":
            if self.status != 200:
                return Answer(self.status, {"error": {"message": "Not supported"}})
            return Answer(body=[{"index": 0, "embedding": [self.vector]}])
        return Answer(404, {"error": "no route"})


def states(server: LlamaServer, tmp_path: Path) -> tuple[HiddenStates, VerdictCache]:
    cache = VerdictCache(tmp_path)
    return HiddenStates(server.url, MODEL_SHA256, cache), cache


def test_hidden_states_are_asked_once_then_cached(tmp_path: Path) -> None:
    vector = [float(i % 7) for i in range(HIDDEN_SIZE)]
    server = LlamaServer(vector).start()
    messages = [{"role": "user", "content": "Did it call the right tool?"}]
    try:
        hidden, cache = states(server, tmp_path)

        async def twice() -> list[np.ndarray]:
            found = [await hidden.of(messages), await hidden.of(messages)]
            await hidden.aclose()
            return found

        first, second = asyncio.run(twice())
        cache.close()
    finally:
        server.stop()
    assert np.array_equal(first, np.array(vector, dtype=np.float32))
    assert np.array_equal(first, second)
    paths = [s.path for s in server.seen]
    assert paths == ["/apply-template", "/embedding"]  # the second came from the cache
    assert server.seen[1].body["embd_normalize"] == -1  # the raw vector, not normalised
    assert "Did it call the right tool?" in server.seen[1].body["content"]


@pytest.mark.parametrize(
    ("vector", "status", "says"),
    [
        ([1.0] * 10, 200, "expected 1536 finite values"),
        ([float("nan")] * HIDDEN_SIZE, 200, "expected 1536 finite values"),
        ([1.0] * HIDDEN_SIZE, 501, "answered 501"),
    ],
)
def test_an_unusable_hidden_state_is_an_error(
    tmp_path: Path, vector: list[float], status: int, says: str
) -> None:
    server = LlamaServer(vector, status).start()
    try:
        hidden, cache = states(server, tmp_path)

        async def ask() -> None:
            try:
                await hidden.of([{"role": "user", "content": "x"}])
            finally:
                await hidden.aclose()

        with pytest.raises(HiddenStateError, match=says):
            asyncio.run(ask())
        cache.close()
    finally:
        server.stop()


def test_an_embedding_reply_of_another_shape_is_refused() -> None:
    with pytest.raises(HiddenStateError, match="not a vector"):
        read_embedding({"embedding": 1})


def test_train_refuses_to_write_over_an_input_and_needs_labels(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps(
            {
                "id": "c1",
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [],
                "response": {"content": "hello"},
            }
        )
        + "\n"
    )
    runner = CliRunner()
    over = runner.invoke(main, ["local", "train", str(cases), "-o", str(cases)])
    assert over.exit_code == 2 and f"-o {cases} is the input {cases}" in over.output
    unlabelled = runner.invoke(main, ["local", "train", str(cases), "-o", str(tmp_path / "p")])
    assert unlabelled.exit_code == 2 and "no case has a label" in unlabelled.output
    assert not (tmp_path / "p").exists()


def test_the_probe_is_part_of_the_judges_fingerprint(tmp_path: Path) -> None:
    from judge.judging._grade import Judge

    path = write_probe(tmp_path)
    probed = Judge(model="local", cache=False, probe=str(path))
    plain = Judge(model="local", cache=False, probe=None)
    assert probed.probe is not None
    assert probed.fingerprint()["probe"] == probed.probe.sha256
    assert "probe" not in plain.fingerprint()  # a judge without one keeps its fingerprint
    assert probed.fingerprint() != plain.fingerprint()
    # what a calibration refits from: the probe's log-odds where it has a head
    defaults = probed.decision_defaults()["selection"]
    assert defaults["called"].weights == {"probe": 1.0}
    assert defaults["not_called"] == plain.decision_defaults()["selection"]["not_called"]


def test_a_probe_of_other_rubrics_is_refused(tmp_path: Path) -> None:
    from judge.judging._grade import Judge

    path = write_probe(tmp_path)
    data = json.loads(path.read_text())
    data["manifest"]["rubrics"] = {"selection-quick": "0.9"}
    path.write_text(json.dumps(data))
    with pytest.raises(JudgeError, match="fitted on the questions of selection-quick 0.9"):
        Judge(model="local", cache=False, probe=str(path))


def _probed_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chat_url: str, llama_url: str
) -> Any:
    """The embedded judge with a probe, its chat and native endpoints on loopback servers."""
    from judge.endpoints import _client, _local
    from judge.endpoints._endpoint import Endpoint
    from judge.judging._grade import Judge

    local = Endpoint(base_url=chat_url, model="local-test", provider="local")
    monkeypatch.setattr(_client, "local_endpoint", lambda: local)
    monkeypatch.setattr(_local, "local_root", lambda: llama_url)
    return Judge(model="local", cache_dir=tmp_path / "cache", probe=str(write_probe(tmp_path)))


WEATHER_CASE = {
    "id": "w",
    "messages": [{"role": "user", "content": "Weather in Paris?"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
    "response": {
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
        ]
    },
}


def test_the_judge_decides_with_its_probe_and_counts_the_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.chat_server import one_token, serving

    llama = LlamaServer([0.5] * HIDDEN_SIZE).start()
    try:
        with serving(lambda body: one_token(0.9)) as chat:
            judge = _probed_judge(tmp_path, monkeypatch, chat.url, llama.url)
            chatty = WEATHER_CASE | {"id": "t", "response": {"content": "Sunny, I think."}}

            async def go() -> list[Any]:
                async with judge:
                    return list(await judge.grade([WEATHER_CASE, chatty]))

            called, text = asyncio.run(go())
    finally:
        llama.stop()
    assert called.judge.status == "ok"
    assert called.judge.selection.confidence_source == "probe"
    assert called.judge.provenance.probe == judge.probe.sha256
    # one hidden state (the probe has a head for responses with calls only) and the answers
    assert [s.path for s in llama.seen] == ["/apply-template", "/embedding"]
    assert called.judge.usage.requests == 3  # the hidden state, right_tool, match
    # no head for a reply without calls: the rubric's weights decide, nothing more is asked
    assert text.judge.selection.confidence_source == "logprobs"


def test_a_refused_hidden_state_is_a_judge_error_for_that_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.chat_server import one_token, serving

    llama = LlamaServer([0.5] * HIDDEN_SIZE, status=501).start()
    try:
        with serving(lambda body: one_token(0.9)) as chat:
            judge = _probed_judge(tmp_path, monkeypatch, chat.url, llama.url)

            async def go() -> list[Any]:
                async with judge:
                    return list(await judge.grade([WEATHER_CASE, WEATHER_CASE | {"id": "w2"}]))

            results = asyncio.run(go())
    finally:
        llama.stop()
    for result in results:  # each case says why; the run goes on
        assert result.judge.status == "judge_error"
        assert "/embedding answered 501" in result.judge.error


def test_a_dry_run_counts_the_hidden_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.judging._plan import plan

    judge = _probed_judge(tmp_path, monkeypatch, "http://127.0.0.1:9/v1", "http://127.0.0.1:9")
    chatty = WEATHER_CASE | {"id": "t", "response": {"content": "Sunny, I think."}}
    found = asyncio.run(plan(judge, [WEATHER_CASE, chatty]))
    # one hidden state for the case with calls (the probe's only head); none for the other
    assert found.by_dimension["hidden_state"] == 1
    assert found.requests == 1 + 2 + 2  # the state, right_tool and match; two questions
