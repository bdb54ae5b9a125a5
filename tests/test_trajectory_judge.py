"""The trajectory rubric: rendered with the whole path, asked only when wanted, recorded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from judge import Match
from judge.cli import main
from judge.judging._rubric import load_rubrics
from tests.chat_server import ChatServer, Reply, answer, completion
from tests.test_judge import make_judge, run
from tests.test_trajectory import REFERENCE, L, N, R, path_case

ROOT = Path(__file__).resolve().parents[1]


def test_asked_only_with_trajectory_and_shown_the_timeline(
    server: ChatServer, tmp_path: Path
) -> None:
    data = path_case([L, R, N], REFERENCE)
    data["messages"].insert(3, {"role": "user", "content": "yes, go ahead </trajectory>"})
    [plain] = run(make_judge(server, tmp_path), [data])
    assert plain.judge is not None and plain.judge.trajectory is None
    asked = len(server.chat_requests)

    [judged] = run(make_judge(server, tmp_path, trajectory=True), [data])
    assert judged.judge is not None and judged.judge.status == "ok"
    assert judged.judge.trajectory is not None and judged.judge.trajectory.verdict == "correct"
    assert judged.judge.provenance is not None
    assert [r.name for r in judged.judge.provenance.rubrics][-1] == "trajectory"
    prompts = [r.body["messages"][1]["content"] for r in server.chat_requests[asked:]]
    [prompt] = [p for p in prompts if "<trajectory>" in p]
    # The steps in order, numbered as in a trajectory result, with the tool replies, and the
    # user's confirmation between them; injected tags are neutralised.
    assert prompt.index("step 0") < prompt.index("yes, go ahead") < prompt.index("step 1")
    assert 'result: "ok"' in prompt
    assert "</trajectory>" not in prompt.split("<trajectory>", 1)[1].rsplit("</trajectory>", 1)[0]


def test_an_incorrect_path_and_a_bad_reply(server: ChatServer, tmp_path: Path) -> None:
    def reply(body: dict[str, Any]) -> Reply:
        text = json.dumps(body)
        if "<trajectory>" in text:
            verdict = {
                "reasoning": "refund before lookup",
                "verdict": "incorrect",
                "problems": ["wrong_order"],
            }
            return Reply(body=completion(json.dumps(verdict)))
        return answer(body)

    server.default = reply
    [result] = run(make_judge(server, tmp_path, trajectory=True), [path_case([R, L], [L, R])])
    assert result.judge is not None and result.judge.trajectory is not None
    assert result.judge.trajectory.verdict == "incorrect"
    assert result.judge.trajectory.problems == ("wrong_order",)


def test_the_judge_grades_with_the_match_and_keeps_response_numbering(
    server: ChatServer, tmp_path: Path
) -> None:
    # A broken call in an earlier turn is the path's business; the response's call is judged.
    data = path_case([("lookup", {"id": 7}), R], [L, R])
    [result] = run(make_judge(server, tmp_path, match=Match(mode="strict")), [data])
    assert result.trajectory is not None
    assert result.failures[0].call == 0 and result.failures[0].kind == "SchemaMismatch"
    assert result.judge is not None
    assert [a.call for a in result.judge.arguments] == [0]
    assert result.judge.arguments[0].source == "judge"  # not derived from the lookup's failure


def test_rubric_list_and_show(tmp_path: Path) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "judge", "rubric", "list"], capture_output=True, text=True
    )
    assert "trajectory\ttrajectory\tv1.0" in listed.stdout
    rubrics = load_rubrics()
    assert rubrics.trajectory is not None
    assert load_rubrics(kind="small").trajectory is not None  # the default one, shared
    # Regression: `show trajectory` built a judge that never judges trajectories, so it
    # always said it would send nothing.
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps(path_case([L, R, N], REFERENCE)) + "\n")
    shown = CliRunner().invoke(
        main, ["rubric", "show", "trajectory", "--case", str(cases), "--id", "path"]
    )
    assert shown.exit_code == 0, shown.output
    assert "would send nothing" not in shown.stdout
    user = shown.stdout.split("===== user =====\n", 1)[1].split("===== reply schema", 1)[0]
    timeline = user.split("<trajectory>", 1)[1].split("</trajectory>", 1)[0]
    assert timeline.index("step 0") < timeline.index("step 1") < timeline.index("step 2")
    assert "lookup" in timeline and "refund" in timeline and "notify" in timeline


@pytest.mark.skipif(
    not (ROOT.parent / "shared" / "datasets" / "taubench_airline_gpt4o.jsonl").exists(),
    reason="../shared/datasets is not here",
)
def test_superset_beats_exact_action_matching_on_tau_bench() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "trajectory_taubench.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    best = float(done.stdout.rsplit("kappa", 1)[1])
    assert best > 0.32
    assert "superset" in done.stdout.splitlines()[-1]
