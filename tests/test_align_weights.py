"""`judge align`'s `weights` candidate: a scored rubric's decision refitted on the user's labels,
its prompt unchanged. The judge is a scripted server on 127.0.0.1 asked the quick rubrics'
one-token questions; it reads every case backwards (a `-good` call gets `no` to every
question, a `-bad` one `yes`), so its answers tell right from wrong and its own weights read
them the wrong way round. The refit is measured on folds it never saw (a leak fails a test),
chosen where it beats the base, applied by `judge grade --aligned` with no new request, and a
spec whose weights this judge cannot weigh is refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.calibrate import _align_weights
from judge.judging._aligned import AlignedSpec, load_aligned, spec_sha256
from judge.judging._rubric import builtin_rubrics_dir
from tests.chat_server import Reply, answer, one_token, serving
from tests.helpers import invoke
from tests.test_align import asked, labelled, write

QUICK = str(builtin_rubrics_dir("quick"))


def backwards(body: dict[str, Any]) -> Reply:
    """Every question answered `yes` for a `-bad` call and `no` for a `-good` one."""
    return one_token(0.05 if "-good" in asked(body) else 0.95)


def align(tmp_path: Path, rows: list[dict[str, Any]], *extra: str) -> tuple[Any, Path, int]:
    sample = write(tmp_path / "labelled.jsonl", rows)
    out = tmp_path / "aligned.json"
    with serving(backwards) as server:
        done = invoke(server, tmp_path, "align", sample, "-o", str(out), "--rubrics", QUICK,
                      *extra)  # fmt: skip
        requests = len(server.chat_requests)
    return done, out, requests


def test_weights_refitted_on_the_labels_win_held_out_and_grade_applies_them(
    tmp_path: Path,
) -> None:
    done, out, _ = align(tmp_path, labelled(30), "--candidates", "base,weights")
    assert done.exit_code == 0, done.output
    spec = load_aligned(out)
    for dimension in ("selection", "arguments"):
        found = spec.dimensions[dimension]
        assert found.choice == "weights", found.why
        assert found.weights is not None and found.weights.combine
        held = found.measured["candidates"]
        assert set(held) == {"base", "weights"}
        assert held["weights"]["n"] == 30 and held["weights"]["kappa"] > 0.8
        assert held["base"]["kappa"] < 0.2  # the rubric's own weights read it backwards
        assert found.measured["after"]["kappa"] > 0.8
    assert spec_sha256(spec) is not None  # the weights join the fingerprint
    fresh = [
        row | {"id": f"new{i}", "labels": None}
        for i, row in enumerate(labelled(6))
    ]  # fmt: skip
    cases = write(tmp_path / "fresh.jsonl", fresh)
    graded = tmp_path / "graded.jsonl"
    with serving(backwards) as server:
        plain = invoke(server, tmp_path, "grade", cases, "-o", str(tmp_path / "plain.jsonl"),
                       "--rubrics", QUICK)  # fmt: skip
        asked_plain = len(server.chat_requests)
        aligned = invoke(server, tmp_path, "grade", cases, "-o", str(graded), "--rubrics", QUICK,
                         "--aligned", str(out))  # fmt: skip
        asked_aligned = len(server.chat_requests) - asked_plain
    assert plain.exit_code in (0, 1) and aligned.exit_code in (0, 1), aligned.output
    assert asked_plain > 0 and asked_aligned == 0  # the same prompts: every answer cached
    for line in graded.read_text().splitlines():
        record = json.loads(line)
        good = record["id"] in {"new0", "new2", "new4"}
        assert record["judge"]["selection"]["verdict"] == ("correct" if good else "incorrect")
        [verdict] = record["judge"]["arguments"]
        assert verdict["verdict"] == ("correct" if good else "incorrect")


def test_a_case_is_never_weighed_by_a_refit_on_its_own_label(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every refit's training cases and the cases it decides are disjoint."""
    calls: list[tuple[set[int], set[int]]] = []
    original = _align_weights.BaseItems.verdicts

    def recorded(self: Any, d: Any, train: Any, base: dict[int, str | None]) -> Any:
        calls.append((set(train), set(base)))
        return original(self, d, train, base)

    monkeypatch.setattr(_align_weights.BaseItems, "verdicts", recorded)
    done, _, _ = align(tmp_path, labelled(30), "--candidates", "base,weights")
    assert done.exit_code == 0, done.output
    assert len(calls) == 2 * 15  # two dimensions, 5 outer + 10 inner training sets
    for train, held in calls:
        assert train and held and not train & held
        assert len(train | held) == 30


def test_weights_are_said_not_measured_for_a_judge_without_scored_answers(
    tmp_path: Path,
) -> None:
    rows = write(tmp_path / "labelled.jsonl", labelled(24))
    out = tmp_path / "aligned.json"
    with serving(lambda body: answer(body, "correct")) as server:
        done = invoke(server, tmp_path, "align", rows, "-o", str(out), "--candidates",
                      "base,weights")  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "selection: weights not measured" in done.output
    spec = load_aligned(out)
    assert set(spec.dimensions["selection"].measured["candidates"]) == {"base"}
    assert spec.dimensions["selection"].choice == "base"


def weights_spec(**combine: Any) -> dict[str, Any]:
    weights = {"combine": {"called": {"bias": 0.0, "weights": combine}}, "threshold": 0.5}
    return {"version": 1, "dimensions": {"selection": {
        "choice": "weights", "why": "measured", "weights": weights}}}  # fmt: skip


@pytest.mark.parametrize(
    ("rubrics", "combine", "said"),
    [
        pytest.param(None, {"right_tool": -1.0}, "rubric is not scored", id="json-rubrics"),
        pytest.param(QUICK, {"probe": 2.0}, "has no probe", id="probe-weights-without-probe"),
    ],
)
def test_weights_this_judge_cannot_weigh_are_refused(
    tmp_path: Path, rubrics: str | None, combine: dict[str, float], said: str
) -> None:
    spec = tmp_path / "aligned.json"
    spec.write_text(json.dumps(weights_spec(**combine)))
    cases = write(tmp_path / "cases.jsonl", labelled(2))
    with serving(backwards) as server:
        extra = ("--rubrics", rubrics) if rubrics else ()
        done = invoke(server, tmp_path, "grade", cases, "-o", str(tmp_path / "out.jsonl"),
                      "--aligned", str(spec), *extra)  # fmt: skip
        assert not server.chat_requests
    assert done.exit_code == 2
    assert said in done.output and "selection weights" in done.output


def test_a_weights_choice_without_weights_is_a_bad_spec() -> None:
    broken = weights_spec(right_tool=1.0)
    del broken["dimensions"]["selection"]["weights"]
    with pytest.raises(ValueError, match="weights go with the choice"):
        AlignedSpec.model_validate(broken)


def test_an_escalation_judge_takes_the_prompts_not_the_weights(tmp_path: Path) -> None:
    """Weights refitted on the first judge's answers are its own: a hosted escalation judge
    (not scored) grades with the spec's policy, not refused for the weights."""
    from click.testing import CliRunner

    from judge.cli import main
    from tests.test_aligned import RULE, follows_the_user, systems

    found = weights_spec(right_tool=-1.0)
    found["dimensions"]["arguments"] = {"choice": "policy", "why": "measured", "policy": RULE}
    spec = tmp_path / "aligned.json"
    spec.write_text(json.dumps(found))
    cases = write(tmp_path / "cases.jsonl", labelled(2))
    with serving(lambda body: one_token(0.5)) as one, serving(follows_the_user) as two:
        done = CliRunner().invoke(
            main,
            ["grade", cases, "-o", str(tmp_path / "out.jsonl"), "--base-url", one.url,
             "--model", "m", "--rubrics", QUICK, "--cache-dir", str(tmp_path / "cache"),
             "--abstain-below", "0.9", "--escalate-base-url", two.url, "--escalate-model",
             "strong", "--aligned", str(spec)],
            env={"JUDGE_API_KEY": "k"},
        )  # fmt: skip
        assert done.exit_code in (0, 1), done.output
        escalated = systems(two)
    assert RULE in escalated["arguments"] and RULE not in escalated["selection"]
