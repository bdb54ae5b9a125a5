"""`judge align`: nested cross-validation chooses, per dimension, the policy or labelled
examples where they make the judge agree more with the labels held out, and the base judge
where they do not; the spec it writes is what `judge grade --aligned` reads; a case is never
in its own prompt (nor a case of its conversation); bad input is refused before any request.

The judge is a scripted server on 127.0.0.1 that follows the user's labels (it can tell a
`-good` call from a `-bad` one) when their policy or an example is in its system prompt, and
is a coin flip, by the case's text, otherwise."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from judge.calibrate._align import alignment_of
from judge.calibrate._align_folds import assign_folds, conversation_key
from judge.cases._loading import load_cases
from judge.judging._aligned import load_aligned
from tests.chat_server import ChatServer, Reply, answer, serving
from tests.helpers import call, case, invoke

RULE = "RULE-7: a call to a -good city is right, one to a -bad city is wrong"
REQUEST = re.compile(r"weather in town \d+")


def asked(body: dict[str, Any]) -> str:
    """What the judge is asked about: every message but the system prompt."""
    return "\n".join(str(m.get("content")) for m in body["messages"][1:])


def coin(body: dict[str, Any]) -> str:
    digest = hashlib.sha256(asked(body).encode()).digest()
    return "correct" if digest[0] % 2 else "incorrect"


def truth(body: dict[str, Any]) -> str:
    return "correct" if "-good" in asked(body) else "incorrect"


def follows_the_user(body: dict[str, Any]) -> Reply:
    system = body["messages"][0]["content"]
    told = RULE in system or "<example " in system
    return answer(body, truth(body) if told else coin(body))


def deaf(body: dict[str, Any]) -> Reply:
    """A judge that the policy and the examples do not move."""
    return answer(body, coin(body))


def labelled(n: int, *, shared: bool = False, arguments: bool = True) -> list[dict[str, Any]]:
    """`n` labelled cases; with `shared`, two cases (one good, one bad) per conversation."""
    rows = []
    for i in range(n):
        good = i % 2 == 0
        town = i // 2 if shared else i
        city = f"Town{i}-{'good' if good else 'bad'}"
        label = "correct" if good else "incorrect"
        labels = {"selection": label} | ({"arguments": label} if arguments else {})
        rows.append(
            case([call("get_weather", {"city": city})])
            | {"id": f"c{i}", "messages": [{"role": "user", "content": f"weather in town {town}"}],
               "labels": labels, "meta": {"label_note": f"labelled {i}"}}
        )  # fmt: skip
    return rows


def write(path: Path, rows: list[dict[str, Any]]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def policy_file(tmp_path: Path, text: str = RULE) -> str:
    path = tmp_path / "policy.md"
    path.write_text(text)
    return str(path)


def align(
    server: ChatServer, tmp_path: Path, rows: list[dict[str, Any]], *extra: str
) -> tuple[Any, Path]:
    sample = write(tmp_path / "labelled.jsonl", rows)
    out = tmp_path / "aligned.json"
    return invoke(server, tmp_path, "align", sample, "-o", str(out), *extra), out


@pytest.mark.parametrize(
    ("judge", "with_policy", "chosen"),
    [
        pytest.param(follows_the_user, True, "policy", id="policy-helps-the-simpler-wins-a-tie"),
        pytest.param(follows_the_user, False, "examples", id="examples-help"),
        pytest.param(deaf, True, "base", id="nothing-helps-base-kept"),
    ],
)
def test_nested_cross_validation_keeps_what_beats_the_base_held_out(
    tmp_path: Path, judge: Callable[[dict[str, Any]], Reply], with_policy: bool, chosen: str
) -> None:
    extra = ("--policy", policy_file(tmp_path)) if with_policy else ()
    with serving(judge) as server:
        done, out = align(server, tmp_path, labelled(24), *extra)
    assert done.exit_code == 0, done.output
    spec = load_aligned(out)
    for dimension in ("selection", "arguments"):
        found = spec.dimensions[dimension]
        assert found.choice == chosen, found.why
        measured = found.measured
        assert set(measured["candidates"]) == (
            {"base", "policy", "examples", "examples+policy", "nearest", "nearest+policy"}
            if with_policy else {"base", "examples", "nearest"}
        )  # fmt: skip
        for figures in (measured["before"], measured["after"], *measured["candidates"].values()):
            assert figures["n"] == 24 and figures["ci_low"] is not None
        if chosen == "base":
            assert found.why.startswith("base kept: no candidate beat the base held out")
            assert measured["after"]["kappa"] == measured["before"]["kappa"]
        else:
            assert measured["after"]["kappa"] == 1.0 > measured["before"]["kappa"]
            assert f"{measured['before']['kappa']:.2f}" in found.why
    assert "examples" not in chosen or len(spec.dimensions["selection"].examples) == 4
    examples = spec.dimensions["selection"].examples
    assert {e.label for e in examples} == ({"correct", "incorrect"} if examples else set())
    assert len(spec.fitted_on) == 24
    assert "held-out kappa" in done.output and "selection: 24 labels" in done.output


def test_the_spec_is_read_back_by_grade_and_changes_the_verdicts(tmp_path: Path) -> None:
    rows = labelled(24)
    with serving(follows_the_user) as server:
        done, out = align(server, tmp_path, rows, "--policy", policy_file(tmp_path))
        assert done.exit_code == 0, done.output
        fresh = write(tmp_path / "new.jsonl", [r | {"id": f"new-{r['id']}"} for r in rows])
        verdicts = {}
        for name, extra in (("plain", ()), ("aligned", ("--aligned", str(out)))):
            graded = tmp_path / f"{name}.jsonl"
            result = invoke(server, tmp_path, "grade", fresh, "-o", str(graded), *extra)
            assert result.exit_code in (0, 1), result.output
            found = [json.loads(line) for line in graded.read_text().splitlines()]
            by_id = {r["id"]: r["judge"]["selection"]["verdict"] for r in found}
            verdicts[name] = [by_id[f"new-{r['id']}"] for r in rows]  # results come as done
    labels = [r["labels"]["selection"] for r in rows]
    assert verdicts["aligned"] == labels
    assert verdicts["plain"] != labels


def test_folds_keep_a_conversation_together() -> None:
    cases = list(load_cases(labelled(30, shared=True)))
    fold_of = assign_folds(cases, 5, seed=3)
    by_conversation: dict[str, set[int]] = {}
    for found, fold in zip(cases, fold_of, strict=True):
        by_conversation.setdefault(conversation_key(found), set()).add(fold)
    assert len(by_conversation) == 15
    assert all(len(folds) == 1 for folds in by_conversation.values())
    assert sorted(fold_of.count(f) for f in range(5)) == [6, 6, 6, 6, 6]


def test_a_request_asked_under_another_system_prompt_is_in_the_same_fold() -> None:
    """An example shows only the last request: its twin under another system prompt would
    look like the graded case's own answer, so the folds keep the two together."""
    rows = labelled(30)
    for i, row in enumerate(rows[:10]):
        twin = rows[10 + i]
        twin["messages"] = [{"role": "system", "content": f"prompt {i}"}, *row["messages"]]
    fold_of = assign_folds(list(load_cases(rows)), 5, seed=3)
    assert all(fold_of[i] == fold_of[10 + i] for i in range(10))
    alone = [dict(r, id=f"no-user-{i}", messages=[{"role": "system", "content": f"s{i}"}])
             for i, r in enumerate(labelled(5))]  # fmt: skip
    assert sorted(assign_folds(list(load_cases(alone)), 5, seed=1)) == [0, 1, 2, 3, 4]


def test_examples_and_policy_without_examples_to_show_is_the_policy() -> None:
    cases = list(load_cases(labelled(4)))
    found = alignment_of("examples+policy", "why", RULE, cases, [], "selection", 4, 0)
    assert (found.choice, found.policy, found.examples) == ("policy", RULE, ())
    assert alignment_of("nearest", "why", None, cases, [], "selection", 4, 0).choice == "base"


def leak_watcher(leaks: list[str]) -> Callable[[dict[str, Any]], Reply]:
    """A judge that records every prompt in which an example is of the graded case's own
    conversation (its request shown among the examples)."""

    def judge(body: dict[str, Any]) -> Reply:
        system = body["messages"][0]["content"]
        shown = set(REQUEST.findall(system))
        own = set(REQUEST.findall(asked(body)))
        leaks.extend(sorted(shown & own))
        return follows_the_user(body)

    return judge


def test_no_case_nor_its_conversation_is_ever_in_its_own_prompt(tmp_path: Path) -> None:
    leaks: list[str] = []
    with serving(leak_watcher(leaks)) as server:
        done, out = align(server, tmp_path, labelled(40, shared=True))
        prompts = sum("<example " in s.body["messages"][0]["content"] for s in server.chat_requests)
    assert done.exit_code == 0, done.output
    assert prompts > 100  # the examples candidate was graded on every fold
    assert leaks == []
    assert load_aligned(out).dimensions["selection"].choice == "examples"
    # The watcher does see a leak: a sibling of the same conversation as an example.
    rows = labelled(4, shared=True)
    spec = {"version": 1, "dimensions": {"selection": {"choice": "examples", "why": "a leak",
            "examples": [_example_of(rows[1])]}}}  # fmt: skip
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps(spec))
    with serving(leak_watcher(leaks)) as server:
        invoke(server, tmp_path, "grade", write(tmp_path / "four.jsonl", rows), "--aligned",
               str(leaky))  # fmt: skip
    assert leaks == ["weather in town 0"]  # c0 was shown c1, of its own conversation


def _example_of(row: dict[str, Any]) -> dict[str, Any]:
    from judge.judging._aligned import case_content_sha256, example_text

    [found] = list(load_cases([row]))
    text = example_text(found)
    return {"id": found.id, "sha256": case_content_sha256(found), "label": "incorrect",
            "text": text}  # fmt: skip


def test_a_dimension_under_20_labels_is_left_base_and_said(tmp_path: Path) -> None:
    rows = labelled(24, arguments=False)
    for row in rows[:10]:
        row["labels"]["arguments"] = row["labels"]["selection"]
    with serving(follows_the_user) as server:
        done, out = align(server, tmp_path, rows)
    assert done.exit_code == 0, done.output
    assert "arguments: left base, 10 labels" in done.output
    spec = load_aligned(out)
    assert spec.dimensions["arguments"].choice == "base"
    assert "10 labels, too few" in spec.dimensions["arguments"].why
    assert spec.dimensions["selection"].choice == "examples"


def _under_20(tmp_path: Path) -> list[str]:
    return [write(tmp_path / "few.jsonl", labelled(19))]


def _duplicates(tmp_path: Path) -> list[str]:
    rows = labelled(24)
    return [write(tmp_path / "a.jsonl", rows[:12]), write(tmp_path / "b.jsonl", rows[11:])]


def _policy(text: str | bytes) -> Callable[[Path], list[str]]:
    def files(tmp_path: Path) -> list[str]:
        path = tmp_path / "policy.md"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return [write(tmp_path / "l.jsonl", labelled(24)), "--policy", str(path)]

    return files


def _missing(tmp_path: Path) -> list[str]:
    return [str(tmp_path / "nowhere.jsonl")]


def _aligned_given(tmp_path: Path) -> list[str]:
    spec = tmp_path / "spec.json"
    spec.write_text('{"version": 1}')
    return [write(tmp_path / "l.jsonl", labelled(24)), "--aligned", str(spec)]


def _output_over_input(tmp_path: Path) -> list[str]:
    return [write(tmp_path / "aligned.json", labelled(24))]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        pytest.param(_under_20, "no dimension has 20 labels to align on (labels: selection 19, "
                     "arguments 19, answer 0)", id="under-20-labels"),
        pytest.param(_duplicates, "duplicate case id 'c11': in ", id="duplicate-ids"),
        pytest.param(_policy("  \n"), "the policy is empty", id="empty-policy"),
        pytest.param(_policy("x" * 8001), "too long for the judge's context", id="long-policy"),
        pytest.param(_policy("x" * 40_000), "over 8,000 characters", id="policy-read-bounded"),
        pytest.param(_policy(b"\xff\xfe\x00bad"), "cannot read the policy", id="policy-not-text"),
        pytest.param(_missing, "does not exist", id="missing-file"),
        pytest.param(_aligned_given, "judge align fits a spec", id="aligned-given"),
        pytest.param(_output_over_input, "-o ", id="output-over-an-input"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_any_request(
    server: ChatServer, tmp_path: Path, given: Callable[[Path], list[str]], said: str
) -> None:
    args = given(tmp_path)
    done = invoke(server, tmp_path, "align", *args, "-o", str(tmp_path / "aligned.json"))
    assert done.exit_code == 2, done.output
    assert said in done.output
    assert not server.chat_requests


def test_calibrate_refuses_the_labels_the_spec_was_fitted_on(tmp_path: Path) -> None:
    rows = labelled(24)
    with serving(follows_the_user) as server:
        done, out = align(server, tmp_path, rows, "--policy", policy_file(tmp_path))
        assert done.exit_code == 0, done.output
        before = len(server.chat_requests)
        sample = write(tmp_path / "again.jsonl", rows[:5] + [
            r | {"id": f"new-{r['id']}", "messages": [{"role": "user", "content": "other"}]}
            for r in rows[5:]])  # fmt: skip
        refused = invoke(server, tmp_path, "calibrate", sample, "--aligned", str(out),
                         "-o", str(tmp_path / "cal.json"))  # fmt: skip
        assert len(server.chat_requests) == before  # refused before any request
        new = write(tmp_path / "new.jsonl", [
            r | {"id": f"new-{r['id']}", "messages": [{"role": "user", "content": f"new {i}"}]}
            for i, r in enumerate(rows)])  # fmt: skip
        measured = invoke(server, tmp_path, "calibrate", new, "--aligned", str(out),
                          "-o", str(tmp_path / "cal.json"))  # fmt: skip
    assert refused.exit_code == 2, refused.output
    assert "5 of the 24 labelled cases (c0, c1, c2, ...)" in refused.output
    assert "calibration needs new labels" in refused.output
    assert measured.exit_code == 0, measured.output  # new labels: the aligned judge passes


def test_an_output_it_could_not_write_is_refused_before_any_request(tmp_path: Path) -> None:
    sample = write(tmp_path / "labelled.jsonl", labelled(24))
    with serving(follows_the_user) as server:
        nowhere = str(tmp_path / "no-such-folder" / "aligned.json")
        done = invoke(server, tmp_path, "align", sample, "-o", nowhere)
        assert done.exit_code == 2 and "cannot write there" in done.output
        assert not server.chat_requests


def refusing(body: dict[str, Any]) -> Reply:
    return Reply(status=401, body={"error": {"message": "bad key"}})


def test_a_judge_that_refuses_the_key_is_an_endpoint_failure(tmp_path: Path) -> None:
    with serving(refusing) as server:
        done, out = align(server, tmp_path, labelled(24))
    assert done.exit_code == 4, done.output  # EXIT_ENDPOINT, not "unreadable input"
    assert not out.exists()
