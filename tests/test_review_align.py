"""The review app's align action: `judge align`'s fitting on the labels given so far, with the
review's judge (a scripted server on 127.0.0.1 that follows the user's labels once their
examples are in its prompt, and is a coin flip by the case's text otherwise). The button is
disabled, with the reason, until a dimension has 20 labels; a run writes the aligned spec and
the page shows the held-out kappa before and after and the choice; a second run is refused
while one is under way; too few labels are refused, never a crash."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from judge.calibrate._review import Review
from judge.calibrate._review_align import ReviewAlign, aligned_beside
from judge.judging._aligned import AlignedSpec, load_aligned
from judge.judging._grade import Judge
from judge.service._review import create_review_app
from tests.chat_server import ChatServer, Reply, answer, serving
from tests.helpers import call, case
from tests.review_helpers import chromium, file_labels, judge_args, review_process


def asked(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"][1:])


def follows_the_user(body: dict[str, Any]) -> Reply:
    """The truth (`-good` is right) with the user's examples in its system prompt, else a
    coin flip by the case's text."""
    told = "<example " in body["messages"][0]["content"]
    text = asked(body)
    coin = "correct" if hashlib.sha256(text.encode()).digest()[0] % 2 else "incorrect"
    return answer(body, ("correct" if "-good" in text else "incorrect") if told else coin)


def slow(body: dict[str, Any]) -> Reply:
    return dataclasses.replace(follows_the_user(body), delay=0.05)


def write_labelled(path: Path, n: int, *, unlabelled: int = 0) -> Path:
    """`n` cases labelled on selection and arguments (even ones right), then `unlabelled`."""
    rows = []
    for i in range(n + unlabelled):
        good = i % 2 == 0
        row = case([call("get_weather", {"city": f"Town{i}-{'good' if good else 'bad'}"})]) | {
            "id": f"c{i:02d}",
            "messages": [{"role": "user", "content": f"weather in town {i}"}],
        }
        if i < n:
            label = "correct" if good else "incorrect"
            row["labels"] = {"selection": label, "arguments": label}
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def aligned_client(server: ChatServer, sample: Path, output: Path) -> tuple[TestClient, Review]:
    def judge_with(answers: bool, spec: AlignedSpec | None) -> Judge:
        return Judge(model="m", base_url=server.url, answers=answers, aligned=spec, cache=False)

    review = Review(sample, record=sample.with_name("calibration.json"))
    aligner = ReviewAlign(review, judge_with, output)
    app = create_review_app(review, aligner=aligner)
    return TestClient(app, base_url="http://127.0.0.1"), review


def test_too_few_labels_are_refused_with_the_counts(tmp_path: Path) -> None:
    with serving(follows_the_user) as server:
        sample = write_labelled(tmp_path / "sample.jsonl", 19, unlabelled=3)
        output = tmp_path / "aligned.json"
        client, _ = aligned_client(server, sample, output)
        state = client.get("/api/align").json()
        assert state["ready"] is False and state["running"] is False
        assert state["minimum"] == 20
        assert state["labels"] == {"selection": 19, "arguments": 19, "answer": 0}
        assert "20 labels" in state["reason"] and "selection 19" in state["reason"]
        refused = client.post("/api/align")
        assert refused.status_code == 422
        assert "no dimension has 20 labels" in refused.json()["detail"]
        assert not output.exists()
        assert server.chat_requests == []  # refused before any request


def test_without_a_judge_the_action_is_refused(tmp_path: Path) -> None:
    sample = write_labelled(tmp_path / "sample.jsonl", 24)
    review = Review(sample, record=tmp_path / "record.json")
    client = TestClient(create_review_app(review), base_url="http://127.0.0.1")
    state = client.get("/api/align").json()
    assert state["ready"] is False and "no judge" in state["reason"]
    assert state["path"] == str(aligned_beside(tmp_path / "record.json"))
    assert state["path"].endswith("record.aligned.json")
    assert client.post("/api/align").status_code == 422


def test_one_run_at_a_time(tmp_path: Path) -> None:
    with serving(slow) as server:
        sample = write_labelled(tmp_path / "sample.jsonl", 24)
        output = tmp_path / "aligned.json"
        client, _ = aligned_client(server, sample, output)
        assert client.get("/api/align").json()["ready"] is True
        replies: list[Any] = []
        first = threading.Thread(target=lambda: replies.append(client.post("/api/align")))
        first.start()
        deadline = time.monotonic() + 30
        while not client.get("/api/align").json()["running"]:
            assert first.is_alive() and time.monotonic() < deadline, "the run never started"
            time.sleep(0.01)
        # the server answers while the run goes on, and refuses a second run
        assert client.get("/api/queue").status_code == 200
        second = client.post("/api/align")
        assert second.status_code == 409, second.text
        assert "under way" in second.json()["detail"]
        first.join(timeout=120)
        [done] = replies
        assert done.status_code == 200, done.text
        found = done.json()
        assert set(found["dimensions"]) == {"selection", "arguments"}
        spec = load_aligned(output)
        for dimension, fit in found["dimensions"].items():
            measured = spec.dimensions[dimension].measured
            assert fit["before"] == measured["before"] and fit["after"] == measured["after"]
            assert fit["choice"] == spec.dimensions[dimension].choice
        state = client.get("/api/align").json()
        assert state["running"] is False and state["last"] == found
        assert client.post("/api/align").status_code == 200  # free again once it is done


def test_a_reviewer_labels_the_twentieth_case_and_aligns(tmp_path: Path) -> None:
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with serving(follows_the_user) as server:
        sample = write_labelled(tmp_path / "sample.jsonl", 19, unlabelled=1)
        output = tmp_path / "spec.json"
        args = [str(sample), *judge_args(server.url, tmp_path), "--aligned-out", str(output)]
        with review_process(*args) as running, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                errors: list[str] = []
                page.on("pageerror", lambda error: errors.append(str(error)))
                page.goto(running.url + "/")
                button = page.locator("#align-button")
                page.wait_for_function("() => document.querySelector('#align-message')"
                                       ".textContent.includes('20 labels')")  # fmt: skip
                assert button.is_disabled()
                assert "selection 19" in page.inner_text("#align-message")

                # the unlabelled case is first in the queue: label it, the button comes on
                page.wait_for_function(
                    "() => document.querySelector('#case-id')?.textContent === 'c19'"
                )
                page.keyboard.press("2")  # c19 asks for a -bad town: incorrect
                page.wait_for_selector('input[name="selection"][value="incorrect"]:checked')
                assert file_labels(sample)["c19"]["selection"] == "incorrect"
                page.wait_for_function("() => !document.querySelector('#align-button').disabled")

                button.click()
                after = page.locator('#alignment [data-dimension="selection"] .after')
                after.wait_for(timeout=120_000)
                spec = load_aligned(output)
                measured = spec.dimensions["selection"].measured
                shown = {
                    "before": page.inner_text('#alignment [data-dimension="selection"] .before'),
                    "after": after.inner_text(),
                    "choice": page.inner_text('#alignment [data-dimension="selection"] .choice'),
                }
                assert shown == {
                    "before": f"{measured['before']['kappa']:.2f}",
                    "after": f"{measured['after']['kappa']:.2f}",
                    "choice": spec.dimensions["selection"].choice,
                }
                low, high = measured["after"]["ci_low"], measured["after"]["ci_high"]
                assert f"[{low:.2f}, {high:.2f}]" in page.inner_text(
                    '#alignment [data-dimension="selection"] .after-interval'
                )
                # arguments had 19 labels: left base, and said so
                assert "arguments: left base, 19 labels" in page.inner_text("#alignment")
                assert page.inner_text("#align-message") == "aligned"
                assert errors == []
            finally:
                browser.close()


def test_the_default_spec_sits_beside_the_record(tmp_path: Path) -> None:
    record = tmp_path / "out" / "calibration.json"
    assert aligned_beside(record) == tmp_path / "out" / "calibration.aligned.json"


RULE = "RULE-7: a call for a -good town is right, one for a -bad town is wrong"


def follows_the_policy(body: dict[str, Any]) -> Reply:
    """The truth with the reviewer's policy in its system prompt, else a coin flip."""
    told = RULE in body["messages"][0]["content"]
    text = asked(body)
    coin = "correct" if hashlib.sha256(text.encode()).digest()[0] % 2 else "incorrect"
    return answer(body, ("correct" if "-good" in text else "incorrect") if told else coin)


def test_the_align_action_measures_the_reviewers_policy(tmp_path: Path) -> None:
    """`judge review --policy`: the align button measures the policy as `judge align
    --policy` does, and keeps it where it wins held out."""
    with serving(follows_the_policy) as server:
        sample = write_labelled(tmp_path / "sample.jsonl", 24)
        output = tmp_path / "aligned.json"

        def judge_with(answers: bool, spec: AlignedSpec | None) -> Judge:
            return Judge(model="m", base_url=server.url, answers=answers, aligned=spec,
                         cache=False)  # fmt: skip

        review = Review(sample, record=tmp_path / "calibration.json")
        aligner = ReviewAlign(review, judge_with, output, policy=RULE)
        client = TestClient(create_review_app(review, aligner=aligner), base_url="http://127.0.0.1")
        done = client.post("/api/align")
        assert done.status_code == 200, done.text
    spec = load_aligned(output)
    chosen = spec.dimensions["selection"]
    assert chosen.choice == "policy" and chosen.policy == RULE
    assert "policy" in chosen.measured["candidates"]


def test_an_empty_policy_is_refused_naming_it(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from judge.cli import main

    sample = write_labelled(tmp_path / "sample.jsonl", 24)
    empty = tmp_path / "policy.md"
    empty.write_text("  \n")
    judge = ["--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    done = CliRunner().invoke(main, ["review", str(sample), "--policy", str(empty), *judge])
    assert done.exit_code == 2 and f"{empty}: the policy is empty" in done.output
