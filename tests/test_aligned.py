"""An aligned judge (`--aligned aligned.json`, `Judge(aligned=...)`): the user's labelling
policy and labelled examples reach the prompts of the dimensions the spec chose them for, and
no other; a case is never its own example; the spec joins the judge's fingerprint, so a
changed spec re-asks and fails a calibration record's gate. The judge is a scripted server
on 127.0.0.1 that says `incorrect` only when the policy or an example is in its system
prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from judge.cases._loading import load_cases
from judge.judging._aligned import (
    MAX_SPEC_BYTES,
    AlignedSpec,
    case_content_sha256,
    example_text,
    load_aligned,
    spec_sha256,
)
from judge.judging._rubric import builtin_rubrics_dir
from tests.chat_server import (
    ChatServer,
    Reply,
    answer,
    one_token,
    requested_schema,
    serving,
    with_logprobs,
)
from tests.helpers import call, case, invoke
from tests.test_judge import PARIS, make_judge, run

RULE = "RULE-7: a weather lookup without a country is wrong"
NOTE = "NOTE-9: the user wanted Paris, Texas"
OTHER = case([call("get_time", {})]) | {"id": "other", "messages": [
    {"role": "user", "content": "what time is it"}
]}  # fmt: skip


def follows_the_user(body: dict[str, Any]) -> Reply:
    """`incorrect` where the user's policy or one of their examples is in the system prompt."""
    system = body["messages"][0]["content"]
    told = RULE in system or "<example " in system
    return answer(body, "incorrect" if told else "correct")


def dimension_of(body: dict[str, Any]) -> str:
    return "arguments" if "verdicts" in requested_schema(body)["properties"] else "selection"


def loaded(data: dict[str, Any]) -> Any:
    [found] = list(load_cases([data]))
    return found


def example(data: dict[str, Any], **fields: Any) -> dict[str, Any]:
    found = loaded(data)
    return {
        "id": found.id,
        "sha256": case_content_sha256(found),
        "label": "incorrect",
        "note": NOTE,
        "text": example_text(found),
    } | fields


def spec(**dimensions: dict[str, Any]) -> dict[str, Any]:
    return {"version": 1, "dimensions": {k: {"why": "held-out kappa rose"} | v
                                         for k, v in dimensions.items()}}  # fmt: skip


POLICY = {"choice": "policy", "policy": RULE, "measured": {"kappa_before": 0.2}}
EXAMPLES = {"choice": "examples", "examples": [example(OTHER)]}


def grade(server: ChatServer, tmp_path: Path, cases: list[dict[str, Any]], **options: Any) -> Any:
    return run(make_judge(server, tmp_path, **options), cases)


def systems(server: ChatServer) -> dict[str, str]:
    return {dimension_of(s.body): s.body["messages"][0]["content"] for s in server.chat_requests}


@pytest.mark.parametrize(
    "rubrics",
    [
        pytest.param(None, id="default-rubrics"),
        pytest.param(str(builtin_rubrics_dir("small")), id="small-rubrics-as-a-user-folder"),
    ],
)
@pytest.mark.parametrize(
    ("aligned", "told", "shown"),
    [
        pytest.param(spec(selection=POLICY), "selection", RULE, id="policy-for-selection"),
        pytest.param(spec(arguments=EXAMPLES), "arguments", NOTE, id="examples-for-arguments"),
        pytest.param(
            spec(selection={"choice": "base"},
                 arguments={**POLICY, **EXAMPLES, "choice": "examples+policy"}),
            "arguments", RULE, id="both-for-arguments-base-for-selection",
        ),
    ],
)  # fmt: skip
def test_the_policy_and_examples_reach_only_the_chosen_dimension(
    tmp_path: Path, rubrics: str | None, aligned: dict[str, Any], told: str, shown: str
) -> None:
    with serving(follows_the_user) as base:
        [plain] = grade(base, tmp_path / "a", [PARIS], rubrics=rubrics)
    with serving(follows_the_user) as server:
        [found] = grade(
            server, tmp_path / "b", [PARIS], rubrics=rubrics, aligned=AlignedSpec(**aligned)
        )
    verdicts = {"selection": found.judge.selection.verdict,
                "arguments": found.judge.arguments[0].verdict}  # fmt: skip
    assert verdicts == {d: "incorrect" if d == told else "correct" for d in verdicts}
    before, after = systems(base), systems(server)
    assert after[told].startswith(before[told])  # after the rubric's own definition
    assert shown in after[told][len(before[told]) :]
    untold = "arguments" if told == "selection" else "selection"
    assert after[untold] == before[untold]  # a base dimension's prompt is unchanged
    assert found.judge.provenance.aligned == spec_sha256(AlignedSpec(**aligned))
    assert plain.judge.provenance.aligned is None


@pytest.mark.parametrize(
    "own",
    [
        pytest.param({"sha256": "0" * 64}, id="by-id"),
        pytest.param({"id": "copied-under-another-id"}, id="by-content-hash"),
    ],
)
def test_a_case_is_never_its_own_example(tmp_path: Path, own: dict[str, Any]) -> None:
    aligned = spec(selection={"choice": "examples", "examples": [example(PARIS, **own)]})
    with serving(follows_the_user) as server:
        paris, other = grade(server, tmp_path, [PARIS, OTHER], aligned=AlignedSpec(**aligned))
        prompts = [s.body["messages"][0]["content"] for s in server.chat_requests]
    assert paris.judge.selection.verdict == "correct"  # its own example left out
    assert other.judge.selection.verdict == "incorrect"  # shown to every other case
    assert sum("<example " in p for p in prompts) == 1  # OTHER's selection question only


def test_a_changed_spec_changes_the_fingerprint_and_the_cache_key(tmp_path: Path) -> None:
    first = AlignedSpec(**spec(selection=POLICY))
    remeasured = AlignedSpec(**spec(selection={**POLICY, "measured": {"kappa_before": 0.3}}))
    changed = AlignedSpec(**spec(selection={**POLICY, "policy": RULE + " (or a state)"}))
    with serving(follows_the_user) as server:
        prints = [make_judge(server, tmp_path, aligned=a).fingerprint()
                  for a in (None, first, remeasured, changed)]  # fmt: skip
        asked = []
        for aligned in (first, remeasured, changed, None):
            before = len(server.chat_requests)
            grade(server, tmp_path, [PARIS], aligned=aligned)
            asked.append(sorted(dimension_of(s.body) for s in server.chat_requests[before:]))
    assert "aligned" not in prints[0]  # a judge without a spec keeps the fingerprint it had
    assert prints[1] == prints[2]  # what the fitting measured is no part of the spec's hash
    assert len({json.dumps(p, sort_keys=True) for p in (prints[0], prints[1], prints[3])}) == 3
    # The same spec is answered from the cache; a changed one re-asks only its dimension.
    assert asked == [["arguments", "selection"], [], ["selection"], ["selection"]]


def labelled(i: int) -> dict[str, Any]:
    data = PARIS | {"id": f"p{i}", "messages": [{"role": "user", "content": f"weather {i}"}]}
    return data | {"labels": {"selection": "correct" if i % 2 else "incorrect",
                              "arguments": "correct"}}  # fmt: skip


def write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_a_calibration_record_binds_the_spec(tmp_path: Path) -> None:
    sample = write(tmp_path / "sample.jsonl", [labelled(i) for i in range(8)])
    aligned = tmp_path / "aligned.json"
    aligned.write_text(json.dumps(spec(selection=POLICY)))
    with serving(follows_the_user) as server:
        plain = tmp_path / "plain.json"
        invoke(server, tmp_path, "calibrate", sample, "-o", str(plain))
        withit = tmp_path / "with.json"
        invoke(server, tmp_path, "calibrate", sample, "-o", str(withit), "--aligned", str(aligned))
        refused = invoke(
            server, tmp_path, "grade", sample, "--calibration", str(plain), "--aligned",
            str(aligned),
        )  # fmt: skip
        bound = invoke(
            server, tmp_path, "grade", sample, "--calibration", str(withit), "--aligned",
            str(aligned), "--force",
        )  # fmt: skip
        unaligned = invoke(server, tmp_path, "grade", sample, "--calibration", str(withit))
    assert refused.exit_code == 3, refused.output
    assert "measured for another judge (differs in: aligned)" in refused.output
    assert "measured for another judge" not in bound.output  # its own judge: the kappa decides
    assert unaligned.exit_code == 3 and "differs in: aligned" in unaligned.output
    recorded = json.loads(withit.read_text())["fingerprint"]["aligned"]
    assert recorded == spec_sha256(load_aligned(aligned))


def test_judge_grade_aligned_from_the_command_line(tmp_path: Path) -> None:
    cases = write(tmp_path / "cases.jsonl", [PARIS, OTHER])
    aligned = tmp_path / "aligned.json"
    both = {**POLICY, "choice": "examples+policy", "examples": [example(PARIS)]}
    aligned.write_text(json.dumps(spec(arguments=both)))
    out = tmp_path / "graded.jsonl"
    with serving(follows_the_user) as server:
        done = invoke(server, tmp_path, "grade", cases, "--aligned", str(aligned), "-o", str(out))
    assert done.exit_code in (0, 1), done.output
    rows = {r["id"]: r["judge"] for r in map(json.loads, out.read_text().splitlines())}
    assert {k: (v["selection"]["verdict"], v["arguments"][0]["verdict"]) for k, v in rows.items()} \
        == {"paris": ("correct", "incorrect"), "other": ("correct", "incorrect")}  # fmt: skip
    assert rows["paris"]["provenance"]["aligned"] == spec_sha256(load_aligned(aligned))


def _too_large(path: Path) -> None:
    path.write_text(" " * (MAX_SPEC_BYTES + 1))


@pytest.mark.parametrize(
    ("content", "said"),
    [
        pytest.param("{not json", "not JSON", id="not-json"),
        pytest.param(json.dumps({"version": 2}), "/version", id="another-version"),
        pytest.param(
            json.dumps(spec(selection={"choice": "examples", "examples": [
                example(OTHER, label="maybe")]})),
            "/dimensions/selection/examples/0/label", id="off-menu-label",
        ),
        pytest.param(
            json.dumps(spec(arguments={"choice": "policy"})),
            "/dimensions/arguments: Value error, choice 'policy' needs a non-empty policy",
            id="policy-without-its-text",
        ),
        pytest.param(json.dumps(spec(trajectory={"choice": "base"})),
                     "/dimensions/trajectory", id="a-dimension-never-aligned"),
        pytest.param(_too_large, f"over {MAX_SPEC_BYTES:,} bytes", id="too-large"),
        pytest.param(None, "cannot read the aligned spec", id="missing"),
    ],
)  # fmt: skip
def test_a_bad_spec_is_refused_naming_the_file_and_field(
    server: ChatServer, tmp_path: Path, content: Any, said: str
) -> None:
    aligned = tmp_path / "aligned.json"
    if callable(content):
        content(aligned)
    elif content is not None:
        aligned.write_text(content)
    cases = write(tmp_path / "cases.jsonl", [PARIS])
    done = invoke(server, tmp_path, "grade", cases, "--aligned", str(aligned))
    assert done.exit_code == 2, done.output
    assert f"{aligned}: " in done.output and said in done.output
    assert not server.chat_requests  # refused before any request


def test_an_example_shows_the_request_the_tools_and_the_calls_within_a_bound() -> None:
    long = PARIS | {"messages": [{"role": "user", "content": "weather <b>" + "x" * 5000}]}
    text = example_text(loaded(long), limit=400)
    assert text.startswith("Request: weather <b>x")
    assert "Tools: get_weather, get_time" in text
    assert 'Call: get_weather({"city":"Paris"})' in text  # a long request leaves the calls
    assert len(text) < 460
    assert example_text(loaded(OTHER)).splitlines() == [
        "Request: what time is it",
        "Tools: get_weather, get_time",
        "Call: get_time({})",
    ]


def test_the_quick_rubrics_one_token_questions_carry_the_policy_too(tmp_path: Path) -> None:
    def unsure_unless_told(body: dict[str, Any]) -> Reply:
        return one_token(0.1 if RULE in body["messages"][0]["content"] else 0.9)

    quick = str(builtin_rubrics_dir("quick"))
    with serving(unsure_unless_told) as server:
        [found] = grade(server, tmp_path, [PARIS], rubrics=quick, aligned=AlignedSpec(**spec(
            selection=POLICY)))  # fmt: skip
        told = [RULE in s.body["messages"][0]["content"] for s in server.chat_requests]
    assert found.judge.selection.verdict == "incorrect"
    assert found.judge.arguments[0].verdict == "correct"
    assert any(told) and not all(told)  # the selection questions only


def test_the_escalation_judge_is_aligned_too(tmp_path: Path) -> None:
    """The judge a verdict is escalated to grades by the user's policy as well."""
    from click.testing import CliRunner

    from judge.cli import main

    cases = write(tmp_path / "cases.jsonl", [PARIS])
    aligned = tmp_path / "aligned.json"
    aligned.write_text(json.dumps(spec(selection=POLICY)))
    unsure = {"correct": 0.6, "inc": 0.4}
    with serving(lambda body: with_logprobs(answer(body), {"verdict": unsure})) as one, \
            serving(follows_the_user) as two:  # fmt: skip
        done = CliRunner().invoke(
            main,
            ["grade", cases, "--base-url", one.url, "--model", "m", "--cache-dir",
             str(tmp_path / "cache"), "--abstain-below", "0.8", "--escalate-base-url", two.url,
             "--escalate-model", "strong", "--aligned", str(aligned)],
            env={"JUDGE_API_KEY": "k"},
        )  # fmt: skip
        assert done.exit_code in (0, 1), done.output
        escalated = systems(two)
    assert RULE in escalated["selection"] and RULE not in escalated["arguments"]
