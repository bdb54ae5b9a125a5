"""Calibration statistics, the record, the gate, and `judge calibrate` end to end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sklearn.metrics import cohen_kappa_score

from judge import Case, CaseResult, Labels
from judge.calibrate._record import dimension_stats, pairs_of
from judge.checks._outcome import ArgumentVerdict, JudgeOutcome, SelectionVerdict
from tests.chat_server import ChatServer, Reply, answer
from tests.helpers import call, case, invoke


def table(cc: int, ci: int, ic: int, ii: int) -> list[tuple[str, str]]:
    """Pairs from a confusion table: rows are labels, columns verdicts."""
    return (
        [("correct", "correct")] * cc
        + [("correct", "incorrect")] * ci
        + [("incorrect", "correct")] * ic
        + [("incorrect", "incorrect")] * ii
    )


@pytest.mark.parametrize(
    ("counts", "kappa"),
    [
        # kappa = (po - pe) / (1 - pe), worked by hand from the table [[cc, ci], [ic, ii]]:
        # po = (cc + ii) / n; pe = (labels correct * verdicts correct
        #                           + labels incorrect * verdicts incorrect) / n^2.
        # po = 35/50 = 0.7; pe = (25*30 + 25*20) / 2500 = 0.5; kappa = 0.2 / 0.5.
        pytest.param((20, 5, 10, 15), 0.4, id="textbook-0.4"),
        # po = 1; pe = (25*25 + 25*25) / 2500 = 0.5.
        pytest.param((25, 0, 0, 25), 1.0, id="perfect"),
        # po = 0.5; pe = 0.5.
        pytest.param((10, 10, 10, 10), 0.0, id="chance"),
        # po = 0; pe = (20*20 + 20*20) / 1600 = 0.5; kappa = -0.5 / 0.5.
        pytest.param((0, 20, 20, 0), -1.0, id="always-wrong"),
        # po = 41/50 = 0.82; pe = (43*46 + 7*4) / 2500 = 0.8024; kappa = 0.0176 / 0.1976.
        pytest.param((40, 3, 6, 1), 22 / 247, id="skewed"),
        # po = 8/12; pe = (6*8 + 6*4) / 144 = 0.5; kappa = (2/3 - 1/2) / (1/2).
        pytest.param((5, 1, 3, 3), 1 / 3, id="small-table"),
    ],
)
def test_kappa_and_the_table(counts: tuple[int, int, int, int], kappa: float) -> None:
    pairs = table(*counts)
    stats = dimension_stats(pairs, {}, threshold=0.6)
    assert stats.kappa == pytest.approx(kappa)
    cc, ci, ic, ii = counts
    assert stats.confusion.matrix == ((cc, ci), (ic, ii))
    assert stats.agreement == pytest.approx((cc + ii) / sum(counts))
    assert stats.tpr == pytest.approx(cc / (cc + ci)) if cc + ci else stats.tpr is None
    assert stats.tnr == pytest.approx(ii / (ic + ii)) if ic + ii else stats.tnr is None


def test_bootstrap_interval_is_seeded_and_brackets_kappa() -> None:
    pairs = table(20, 5, 10, 15)
    first, again = dimension_stats(pairs, {}), dimension_stats(pairs, {})
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert first.ci_low is not None and first.ci_high is not None and first.kappa is not None
    assert first.ci_low < first.kappa < first.ci_high


@pytest.mark.parametrize(
    ("pairs", "says"),
    [
        pytest.param(table(3, 1, 1, 3), "too few labelled pairs", id="too-few"),
        pytest.param(table(30, 5, 0, 0), "one class only", id="one-class"),
        pytest.param([], "too few labelled pairs (0", id="empty"),
    ],
)
def test_degenerate_samples_give_no_kappa(pairs: list[tuple[str, str]], says: str) -> None:
    stats = dimension_stats(pairs, {}, threshold=0.6)
    assert stats.kappa is None and stats.ci_low is None
    assert says in (stats.degenerate or "")
    assert stats.passed is False


def test_a_small_sample_says_it_cannot_support_the_threshold() -> None:
    stats = dimension_stats(table(8, 2, 2, 8), {}, threshold=0.6)
    assert stats.kappa == pytest.approx(0.6)
    assert "too small to support" in (stats.note or "")


def outcome(selection: str | None, arguments: list[str], status: str = "ok") -> JudgeOutcome:
    return JudgeOutcome(
        status=status,  # type: ignore[arg-type]
        selection=None
        if selection is None
        else SelectionVerdict(reasoning="r", verdict=selection, category="right_call"),  # type: ignore[arg-type]
        arguments=tuple(
            ArgumentVerdict(call=i, reasoning="r", verdict=v)  # type: ignore[arg-type]
            for i, v in enumerate(arguments)
        ),
    )


@pytest.mark.parametrize(
    ("arguments", "verdict"),
    [
        pytest.param(["correct", "correct"], "correct", id="all-correct"),
        pytest.param(["correct", "incorrect"], "incorrect", id="one-incorrect"),
        pytest.param(["not_applicable", "correct"], "correct", id="not-applicable-ignored"),
        pytest.param(["not_applicable"], None, id="nothing-applicable-left-out"),
        pytest.param([], None, id="no-calls-left-out"),
    ],
)
def test_case_level_arguments_verdict(arguments: list[str], verdict: str | None) -> None:
    labelled = Case(id="x", labels=Labels(selection="correct", arguments="correct"))
    result = CaseResult(
        id="x",
        tool_selection=None,
        schema_valid=None,
        argument_values=None,
        passed=None,
        judge=outcome("correct", arguments),
    )
    pairs, excluded = pairs_of([labelled], [result], "arguments")
    assert pairs == ([] if verdict is None else [("correct", verdict)])
    assert excluded["no_verdict"] == (verdict is None)


def test_judge_errors_and_unlabelled_cases_are_excluded_and_counted() -> None:
    labelled = Case(id="x", labels=Labels(selection="correct"))
    unlabelled = Case(id="y")
    ok = CaseResult(
        id="x",
        tool_selection=None,
        schema_valid=None,
        argument_values=None,
        passed=None,
        judge=outcome("correct", []),
    )
    broken = ok.model_copy(update={"judge": outcome(None, [], status="judge_error")})
    pairs, excluded = pairs_of([labelled, labelled, unlabelled], [ok, broken, ok], "selection")
    assert pairs == [("correct", "correct")]
    assert excluded == {"judge_error": 1, "no_label": 1, "no_verdict": 0}


# -- end to end, against the scripted server ---------------------------------------------------


def labelled(i: int, good: bool) -> dict[str, Any]:
    word = "GOOD" if good else "BAD"
    label = "correct" if good else "incorrect"
    return case(
        [call("get_weather", {"city": "Paris"})],
        [{"name": "get_weather", "arguments": {"city": "Paris"}}],
        messages=[{"role": "user", "content": f"weather in Paris ({word} {i})"}],
    ) | {"id": f"c{i}", "labels": {"selection": label, "arguments": label}}


def by_marker(body: dict[str, Any]) -> Reply:
    text = json.dumps(body["messages"])
    return answer(body, "incorrect" if "BAD" in text else "correct")


def sample(tmp_path: Path, n: int = 24) -> Path:
    path = tmp_path / "sample.jsonl"
    path.write_text("".join(json.dumps(labelled(i, i % 2 == 0)) + "\n" for i in range(n)))
    return path


def test_calibrate_writes_the_record_results_and_disagreements(
    server: ChatServer, tmp_path: Path
) -> None:
    server.default = by_marker
    record_path = tmp_path / "calibration.json"
    report = tmp_path / "report.html"
    done = invoke(
        server,
        tmp_path,
        "calibrate",
        str(sample(tmp_path)),
        "-o",
        str(record_path),
        "--report",
        str(report),
    )
    assert done.exit_code == 0, done.output
    record = json.loads(record_path.read_text())
    assert record["passed"] is True and record["threshold"] == 0.6
    for name in ("selection", "arguments"):
        dim = record["dimensions"][name]
        assert (dim["kappa"], dim["agreement"], dim["n"]) == (1.0, 1.0, 24)
        assert dim["confusion"]["matrix"] == [[12, 0], [0, 12]]
        assert {"ci_low", "ci_high"} <= set(dim)
    assert record["fingerprint"]["model"] == "m"
    assert record["deterministic"]["selection"]["n"] == 24
    results = (tmp_path / "calibration.results.jsonl").read_text().splitlines()
    assert len(results) == 24 and json.loads(results[0])["judge"]["status"] == "ok"
    assert (tmp_path / "calibration.disagreements.jsonl").read_text() == ""
    page = report.read_text()
    assert "data:image/png;base64," in page and "PASSED" in page


def test_calibrate_exits_1_below_the_threshold_and_lists_disagreements(
    server: ChatServer, tmp_path: Path
) -> None:
    record_path = tmp_path / "calibration.json"
    done = invoke(server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record_path))
    assert done.exit_code == 1
    record = json.loads(record_path.read_text())  # written either way
    assert record["passed"] is False
    assert record["dimensions"]["selection"]["kappa"] == 0.0
    rows = [
        json.loads(x)
        for x in (tmp_path / "calibration.disagreements.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 24  # 12 cases x 2 dimensions
    assert {"id", "dimension", "label", "verdict", "reasoning"} == set(rows[0])


def calibrated(server: ChatServer, tmp_path: Path, *extra: str) -> Path:
    server.default = by_marker
    record = tmp_path / "calibration.json"
    invoke(server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record), *extra)
    return record


def cases_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(labelled(99, True)) + "\n")
    return path


def gated(server: ChatServer, tmp_path: Path, record: Path, *extra: str) -> Any:
    """`judge grade` of one case under a calibration record."""
    return invoke(
        server, tmp_path, "grade", str(cases_file(tmp_path)), "--calibration", str(record), *extra
    )


def trusted(out: Path) -> Any:
    return json.loads(out.read_text())["judge"]["trusted"]


def test_the_gate_lets_a_calibrated_judge_run_trusted(server: ChatServer, tmp_path: Path) -> None:
    record = calibrated(server, tmp_path)
    out = tmp_path / "r.jsonl"
    done = gated(server, tmp_path, record, "-o", str(out))
    assert done.exit_code == 0, done.output
    assert trusted(out) is True


def test_the_gate_refuses_another_judge(server: ChatServer, tmp_path: Path) -> None:
    record = calibrated(server, tmp_path)
    before = len(server.chat_requests)
    done = gated(server, tmp_path, record, "--temperature", "0.7")
    assert done.exit_code == 3
    assert "another judge" in done.stderr and "temperature" in done.stderr
    assert len(server.chat_requests) == before  # refused before asking anything


@pytest.mark.parametrize(
    ("changed", "says"),
    [
        pytest.param(["--samples", "3"], "samples", id="majority-of-samples"),
        pytest.param(["--judge-broken"], "judge_broken", id="judging-broken-calls"),
    ],
)
def test_the_gate_refuses_settings_that_change_verdicts(
    server: ChatServer, tmp_path: Path, changed: list[str], says: str
) -> None:
    record = calibrated(server, tmp_path)
    before = len(server.chat_requests)
    done = gated(server, tmp_path, record, *changed)
    assert done.exit_code == 3
    assert "another judge" in done.stderr and says in done.stderr
    assert len(server.chat_requests) == before


def test_the_gate_lets_a_calibrated_judge_judge_trajectories_too(
    server: ChatServer, tmp_path: Path
) -> None:
    # Calibration measures selection and arguments; the trajectory rubric does not change
    # those verdicts, so it does not make the record another judge's.
    record = calibrated(server, tmp_path)
    out = tmp_path / "r.jsonl"
    done = gated(server, tmp_path, record, "-o", str(out), "--trajectory")
    assert done.exit_code == 0, done.output
    assert "trajectory verdicts are not calibrated" in done.stderr
    line = json.loads(out.read_text())
    assert line["judge"]["trusted"] is True and line["judge"]["trajectory"] is not None


def test_the_gate_refuses_a_low_kappa_unless_forced(server: ChatServer, tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    invoke(server, tmp_path, "calibrate", str(sample(tmp_path)), "-o", str(record))
    refused = gated(server, tmp_path, record)
    assert refused.exit_code == 3
    assert "under the threshold 0.6" in refused.stderr
    out = tmp_path / "r.jsonl"
    forced = gated(server, tmp_path, record, "-o", str(out), "--force")
    assert forced.exit_code == 0
    assert trusted(out) is False


def test_strict_gate_uses_the_interval_lower_bound(server: ChatServer, tmp_path: Path) -> None:
    server.default = by_marker
    record = tmp_path / "calibration.json"
    # 12 labelled pairs with one flipped label: kappa clears 0.6, its lower bound does not.
    rows = [labelled(i, i % 2 == 0) for i in range(12)]
    rows[0]["labels"] = {"selection": "incorrect", "arguments": "incorrect"}
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    invoke(server, tmp_path, "calibrate", str(path), "-o", str(record))
    stats = json.loads(record.read_text())["dimensions"]["selection"]
    assert stats["kappa"] >= 0.6 > stats["ci_low"]
    lenient = gated(server, tmp_path, record, "-o", str(tmp_path / "a.jsonl"))
    assert lenient.exit_code == 0
    strict = gated(server, tmp_path, record, "--strict")
    assert strict.exit_code == 3
    assert "lower bound" in strict.stderr


def test_an_unreadable_record_is_refused(server: ChatServer, tmp_path: Path) -> None:
    bad = tmp_path / "calibration.json"
    bad.write_text("{}")
    done = invoke(server, tmp_path, "grade", str(cases_file(tmp_path)), "--calibration", str(bad))
    assert done.exit_code == 3
    assert "not a calibration record" in done.stderr


def test_vectorised_bootstrap_matches_scikit_learn_per_resample() -> None:
    import numpy as np

    from judge.calibrate._record import BOOTSTRAP_ROUNDS, BOOTSTRAP_SEED, LABELS, bootstrap_interval

    pairs = table(20, 5, 10, 15)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    index = rng.integers(0, len(pairs), (BOOTSTRAP_ROUNDS, len(pairs)))
    draws = []
    for row in index:
        picked = [pairs[i] for i in row]
        if len({a for a, _ in picked}) == 2:
            draws.append(
                cohen_kappa_score(
                    [a for a, _ in picked], [b for _, b in picked], labels=list(LABELS)
                )
            )
    low, high = np.percentile(draws, [2.5, 97.5])
    found_low, found_high = bootstrap_interval(pairs)
    assert found_low == pytest.approx(low)
    assert found_high == pytest.approx(high)


def test_the_gate_covers_the_answer_only_for_a_judge_of_answers(
    server: ChatServer, tmp_path: Path
) -> None:
    record = calibrated(server, tmp_path)
    data = json.loads(record.read_text())
    weak = dict(data["dimensions"]["selection"], kappa=0.1, ci_low=0.0, passed=False)
    data["dimensions"]["answer"] = weak
    record.write_text(json.dumps(data))
    assert gated(server, tmp_path, record, "-o", str(tmp_path / "a.jsonl")).exit_code == 0
    refused = gated(server, tmp_path, record, "--answers", "-o", str(tmp_path / "b.jsonl"))
    assert refused.exit_code == 3
    assert "answer kappa is 0.10" in refused.stderr
