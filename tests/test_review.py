"""`judge review`'s JSON API: the queue's order and filters, the case as the judge saw it,
label writes (in the sample file at once, in `judge label`'s form, checked against the menu,
never lost), agreement as `judge calibrate` measures it, the record, and who may reach it."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from judge.calibrate._labels import label_state
from judge.calibrate._review import Review
from judge.calibrate._sample import read_lines
from judge.judging._grade import Judge
from judge.service._review import create_review_app
from tests.chat_server import ChatServer, serving
from tests.review_helpers import (
    INJECTED,
    clean_env,
    file_labels,
    grade_sample,
    judge_args,
    review_process,
    scripted_judge,
    write_sample,
)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ChatServer, Path, Path]]:
    """The scripted judge, the sample (never written to: tests copy it) and its results."""
    folder = tmp_path_factory.mktemp("review")
    with serving(scripted_judge) as server:
        sample = write_sample(folder / "sample.jsonl")
        yield server, sample, grade_sample(server.url, folder, sample)


def copy(judged: tuple[ChatServer, Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    _, sample, results = judged
    return Path(shutil.copy(sample, tmp_path / "sample.jsonl")), results


def review_of(
    judged: tuple[ChatServer, Path, Path], sample: Path, results: Path | None, **options: Any
) -> Review:
    server = judged[0]

    def judge_for(answers: bool) -> Judge:
        return Judge(model="m", base_url=server.url, answers=answers, cache=False)

    return Review(sample, results, judge_for=judge_for, **options)


def client(review: Review, **options: Any) -> TestClient:
    return TestClient(create_review_app(review, **options), base_url="http://127.0.0.1")


def edited(results: Path, tmp_path: Path, changes: dict[str, dict[str, Any]]) -> Path:
    """The results with some verdicts changed (abstained, unsure, flipping)."""
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    for row in rows:
        for key, value in changes.get(row["id"], {}).items():
            target = row["judge"]
            *path, last = key.split(".")
            for part in path:
                target = target[int(part)] if part.isdigit() else target[part]
            target[last] = value
    out = tmp_path / "edited.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def test_the_queue_puts_disagreements_then_doubt_then_flips_then_the_rest(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    results = edited(
        results,
        tmp_path,
        {
            "w05-quito": {"selection.verdict": "uncertain", "selection.leaning": "correct"},
            "w06-tokyo": {"selection.confidence": 0.55, "selection.confidence_source": "logprobs"},
            "w09-perth": {"flip_rate": 0.33, "samples": 3},
        },
    )
    found = client(review_of(judged, sample, results)).get("/api/queue").json()
    order = [(c["id"], c["group"]) for c in found["cases"]]
    groups = [g for _, g in order]
    assert groups == sorted(groups, key=["disagreement", "uncertain", "flipped", "rest"].index)
    # the Springfield calls labelled right on selection, judged wrong; Lima judged wrong; the
    # wrong tool (get_time) labelled wrong, judged right
    disagreeing = {i for i, g in order if g == "disagreement"}
    assert disagreeing == {"w01-oslo", "w02-lima", "w04-cairo", "w07-dakar", "w03-rome",
                           "w08-hanoi"}  # fmt: skip
    assert {i for i, g in order if g == "uncertain"} == {"w05-quito", "w06-tokyo"}
    assert [i for i, g in order if g == "flipped"] == ["w09-perth"]
    reasons = {c["id"]: c["reason"] for c in found["cases"]}
    assert reasons["w02-lima"] == (
        "disagrees with the judge on selection: labelled correct, judged incorrect; "
        "arguments: labelled correct, judged incorrect"
    )
    assert reasons["w05-quito"] == "the judge abstained on selection"
    assert reasons["w06-tokyo"] == "low confidence (0.55 < 0.7)"
    assert "flip rate 0.33 over 3 samples" in reasons["w09-perth"]
    # within the rest, what is still to label comes first
    rest = [c["state"] for c in found["cases"] if c["group"] == "rest"]
    assert rest == sorted(rest, key=lambda s: s == "labelled")
    assert found["progress"]["labelled"] == 10 and found["progress"]["total"] == 14


def test_filters_narrow_the_queue_and_progress_counts_every_stratum(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    broken = json.loads(sample.read_text().splitlines()[0]) | {"id": "y-broken-json"}
    broken["response"]["tool_calls"][0]["function"]["arguments"] = "{'city': 'Paris'"
    broken.pop("labels")
    with sample.open("a") as handle:  # a case with a failure to filter by (never judged)
        handle.write(json.dumps(broken) + "\n")
    app = client(review_of(judged, sample, results))

    def ids(**query: str) -> list[str]:
        return [c["id"] for c in app.get("/api/queue", params=query).json()["cases"]]

    assert sorted(ids(tool="get_time")) == ["w03-rome", "w08-hanoi", "x-script"]
    assert ids(tool="(no call)") == ["t-hello"]
    assert sorted(ids(**{"meta.category": "wrong_value"})) == [
        "w01-oslo", "w04-cairo", "w07-dakar", "w10-sofia",
    ]  # fmt: skip
    assert sorted(ids(state="unlabelled")) == [
        "t-hello", "w10-sofia", "w11-delhi", "x-script", "y-broken-json",
    ]  # fmt: skip
    assert sorted(ids(group="disagreement", tool="get_time")) == ["w03-rome", "w08-hanoi"]
    assert ids(failure="InvalidJson") == ["y-broken-json"]
    assert "y-broken-json" not in ids(failure="(none)") and len(ids(failure="(none)")) == 14
    progress = app.get("/api/queue").json()["progress"]
    assert progress["strata"]["meta.category"]["wrong_value"] == {"labelled": 3, "total": 4}
    assert progress["strata"]["state"]["unlabelled"] == {"labelled": 0, "total": 5}
    assert progress["strata"]["failure"]["InvalidJson"] == {"labelled": 0, "total": 1}
    refused = app.get("/api/queue", params={"colour": "red"})
    assert refused.status_code == 422 and "cannot filter by colour" in refused.json()["detail"]


def test_a_case_is_shown_as_the_judge_saw_it(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    app = client(review_of(judged, sample, results))
    found = app.get("/api/cases/w01-oslo")
    assert found.status_code == 200 and found.headers["etag"] == f'"{found.json()["revision"]}"'
    case = found.json()
    assert case["conversation"][0]["content"] == "What is the weather in Oslo?"
    assert [t["name"] for t in case["tools"]] == ["get_weather", "get_time"]
    assert case["tools"][0]["parameters"]["required"] == ["city"]
    assert case["calls"] == [
        {"index": 0, "name": "get_weather", "arguments": {"city": "Springfield"}}
    ]
    assert case["ungrounded"] and case["ungrounded"][0]["value"] == "Springfield"
    assert case["judge"]["selection"]["verdict"] == "incorrect"
    assert case["judge"]["arguments"][0]["verdict"] == "incorrect"
    assert case["labels"] == {"selection": "correct", "arguments": "incorrect", "answer": None}
    assert case["needs"] == {"selection": True, "arguments": True, "answer": False}
    assert case["group"] == "disagreement" and case["state"] == "labelled"
    hello = app.get("/api/cases/t-hello").json()
    assert hello["needs"] == {"selection": True, "arguments": False, "answer": True}
    assert hello["judge"]["answer"]["verdict"] == "correct"
    # text is data: what a case holds comes back as the string it is
    assert INJECTED in app.get("/api/cases/x-script").json()["conversation"][0]["content"]
    assert app.get("/api/cases/nope").status_code == 404


def test_a_label_is_in_the_file_before_the_reply_in_judge_labels_form(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    before = sample.read_bytes().splitlines()
    app = client(review_of(judged, sample, results, reviewer="ana"))
    put = app.put("/api/labels/w10-sofia", json={"selection": "correct", "arguments": "incorrect"})
    assert put.status_code == 200 and put.json()["state"] == "labelled"
    assert put.json()["conflict"] is None
    after = sample.read_bytes().splitlines()
    changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
    assert changed == [10]  # only that case's line: every other byte for byte
    labels = file_labels(sample)["w10-sofia"]
    assert labels["selection"] == "correct" and labels["arguments"] == "incorrect"
    assert labels["reviewer"] == "ana" and labels["labelled_at"].endswith("+00:00")
    # not applicable is written as `judge label` writes it; a note where the CSV puts it
    app.put("/api/labels/w11-delhi", json={"selection": "incorrect", "arguments": "not_applicable"},
            headers={"X-Judge-Reviewer": "bo"})  # fmt: skip
    app.put("/api/labels/w11-delhi", json={"note": "asks for Delhi, fine"})
    row = next(json.loads(x) for x in sample.read_text().splitlines() if '"w11-delhi"' in x)
    assert row["labels"]["arguments"] is None and row["labels"]["reviewer"] == "bo"
    assert row["meta"]["label_note"] == "asks for Delhi, fine"
    app.put("/api/labels/t-hello", json={"selection": "correct", "answer": "correct"})
    # the same labels for `judge label` (done), the case model and the CSV round trip
    raw, cases = read_lines(str(sample))
    states = {
        c.id: label_state(json.loads(r).get("labels"), c) for r, c in zip(raw, cases, strict=True)
    }
    assert states["w10-sofia"] == states["w11-delhi"] == states["t-hello"] == "labelled"
    exported = tmp_path / "labels.csv"
    subprocess.run(
        [sys.executable, "-m", "judge", "labels", "export", str(sample), "-o", str(exported)],
        check=True, capture_output=True, env=clean_env(),
    )  # fmt: skip
    assert "asks for Delhi, fine" in exported.read_text()
    # clearing a label (null) removes it
    app.put("/api/labels/t-hello", json={"answer": None})
    assert "answer" not in file_labels(sample)["t-hello"]


@pytest.mark.parametrize(
    ("case_id", "body", "status", "says"),
    [
        ("w10-sofia", {"selection": "maybe"}, 422, "correct"),
        ("w10-sofia", {"arguments": "n/a"}, 422, "not_applicable"),
        ("w10-sofia", {"selection": "correct", "colour": "red"}, 422, "colour"),
        ("w10-sofia", {}, 422, "nothing to write"),
        ("w10-sofia", {"answer": "correct"}, 422, "no answer to label"),
        ("t-hello", {"arguments": "correct"}, 422, "makes no call"),
        ("w10-sofia", {"note": "x" * 10_001}, 422, "10000"),
        ("nope", {"selection": "correct"}, 404, "no case 'nope'"),
    ],
)
def test_bad_label_writes_are_refused_with_the_reason(
    judged: tuple[ChatServer, Path, Path],
    tmp_path: Path,
    case_id: str,
    body: dict[str, Any],
    status: int,
    says: str,
) -> None:
    sample, results = copy(judged, tmp_path)
    before = sample.read_bytes()
    reply = client(review_of(judged, sample, results)).put(f"/api/labels/{case_id}", json=body)
    assert reply.status_code == status
    assert says in json.dumps(reply.json())
    assert sample.read_bytes() == before


def test_a_body_that_is_not_json_is_refused_not_a_server_error(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    app = client(review_of(judged, sample, results))
    for body in (b"{not json", b"[1, 2]", b'"correct"'):
        reply = app.put(
            "/api/labels/w10-sofia", content=body, headers={"Content-Type": "application/json"}
        )
        assert reply.status_code == 422, reply.text


def test_two_tabs_on_one_file_lose_no_answer_and_the_later_is_warned(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    tab_a = client(review_of(judged, sample, results))
    tab_b = client(review_of(judged, sample, results))  # another process on the same file
    seen_a = tab_a.get("/api/cases/w10-sofia").headers["etag"]
    seen_b = tab_b.get("/api/cases/w10-sofia").headers["etag"]
    first = tab_a.put("/api/labels/w10-sofia", json={"selection": "incorrect"},
                      headers={"If-Match": seen_a})  # fmt: skip
    assert first.json()["conflict"] is None
    second = tab_b.put("/api/labels/w10-sofia", json={"arguments": "correct"},
                       headers={"If-Match": seen_b})  # fmt: skip
    conflict = second.json()["conflict"]
    assert conflict is not None and "another reviewer changed this case" in conflict["message"]
    assert conflict["replaced"]["labels"]["selection"] == "incorrect"
    # both answers are in the file: each write changed only what it was given
    labels = file_labels(sample)["w10-sofia"]
    assert labels["selection"] == "incorrect" and labels["arguments"] == "correct"
    # the last write wins where both gave the same label
    tab_a.put("/api/labels/w10-sofia", json={"selection": "correct"},
              headers={"If-Match": seen_a})  # fmt: skip
    assert file_labels(sample)["w10-sofia"]["selection"] == "correct"
    # and a write from another tool (the file replaced under the app) is seen at once
    rows = [json.loads(x) for x in sample.read_text().splitlines()]
    rows[11]["labels"] = {"selection": "correct", "arguments": "correct"}
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert tab_a.get("/api/cases/w11-delhi").json()["state"] == "labelled"


def test_agreement_follows_the_labels_with_judge_calibrates_figures(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    server, _, _ = judged
    sample, results = copy(judged, tmp_path)
    app = client(review_of(judged, sample, results))
    before = app.get("/api/agreement").json()
    selection = before["dimensions"]["selection"]
    assert {"n", "kappa", "ci_low", "ci_high", "confusion"} <= set(selection)
    assert selection["n"] == 10 and before["judged"] == 14
    # agree with the judge where it called the calls wrong, and label three more
    for case_id in ("w01-oslo", "w04-cairo", "w07-dakar", "w02-lima"):
        app.put(f"/api/labels/{case_id}", json={"selection": "incorrect"})
    for case_id in ("w09-perth", "w10-sofia", "w11-delhi"):
        app.put(f"/api/labels/{case_id}", json={"selection": "correct"})
    after = app.get("/api/agreement").json()["dimensions"]["selection"]
    assert after["n"] == 12 and after["kappa"] is not None
    assert after["kappa"] != selection["kappa"]
    # judge calibrate, on the file as the app left it, measures the same kappa
    record = tmp_path / "cal.json"
    subprocess.run(
        [sys.executable, "-m", "judge", "calibrate", str(sample), "-o", str(record),
         *judge_args(server.url, tmp_path)],
        capture_output=True, env=clean_env(), timeout=120,
    )  # fmt: skip
    measured = json.loads(record.read_text())["dimensions"]["selection"]
    assert measured["kappa"] == pytest.approx(after["kappa"])
    assert measured["confusion"]["matrix"] == after["confusion"]["matrix"]


def test_the_button_writes_the_record_judge_grade_accepts(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    server, _, _ = judged
    sample, results = copy(judged, tmp_path)
    record = tmp_path / "calibration.json"
    app = client(review_of(judged, sample, results, record=record, min_kappa=-1.0))
    for case_id in ("w10-sofia", "w11-delhi"):  # ten pairs on each dimension
        app.put(f"/api/labels/{case_id}", json={"selection": "correct", "arguments": "correct"})
    assert app.get("/api/agreement").json()["record"]["writable"] is True
    written = app.post("/api/calibration")
    assert written.status_code == 200, written.text
    saved = json.loads(record.read_text())
    assert saved["sample"] == str(sample) and saved["results"] == str(results)
    assert saved["dimensions"]["selection"]["n"] == 12
    assert saved["dimensions"]["arguments"]["n"] == 10
    assert Path(written.json()["disagreements"]).exists()
    # the record is bound to the judge that gave the results: judge grade takes it
    graded = subprocess.run(
        [sys.executable, "-m", "judge", "grade", str(sample), "-o", str(tmp_path / "again.jsonl"),
         "--calibration", str(record), "--answers", *judge_args(server.url, tmp_path)],
        capture_output=True, env=clean_env(), timeout=120,
    )  # fmt: skip
    assert graded.returncode == 0, graded.stderr.decode()
    again = [json.loads(x) for x in (tmp_path / "again.jsonl").read_text().splitlines()]
    assert {row["judge"]["trusted"] for row in again if row["judge"]} == {True}


def test_the_record_is_refused_for_results_of_several_judges_or_another_judge(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    mixed = edited(results, tmp_path, {"w00-paris": {"provenance.model": "other"}})
    app = client(review_of(judged, sample, mixed))
    refused = app.post("/api/calibration")
    assert refused.status_code == 409
    assert "mixes judges (they differ in: model)" in refused.json()["detail"]
    assert app.get("/api/agreement").json()["record"]["writable"] is False

    def other_judge(answers: bool) -> Judge:
        return Judge(model="another", base_url=judged[0].url, answers=answers, cache=False)

    app = client(Review(sample, results, judge_for=other_judge))
    refused = app.post("/api/calibration")
    assert refused.status_code == 409 and "differs in: model" in refused.json()["detail"]
    app = client(review_of(judged, sample, None))
    assert app.post("/api/calibration").status_code == 409
    assert app.get("/api/agreement").json()["judged"] == 0


def test_a_token_guards_the_api_and_loopback_names_only_without_one(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    app = client(review_of(judged, sample, results), token="s3cret")
    assert app.get("/").status_code == 200  # the page holds no data
    assert app.get("/api/queue").status_code == 401
    assert app.put("/api/labels/w10-sofia", json={"selection": "correct"}).status_code == 401
    assert "selection" not in file_labels(sample)["w10-sofia"]
    bearer = {"Authorization": "Bearer s3cret"}
    assert app.get("/api/queue", headers=bearer).status_code == 200
    loopback = client(review_of(judged, sample, results))
    assert loopback.get("/api/queue").status_code == 200
    assert loopback.get("/api/queue", headers={"Host": "localhost:8100"}).status_code == 200
    assert loopback.get("/api/queue", headers={"Host": "127.0.0.2:8100"}).status_code == 200
    assert loopback.get("/api/queue", headers={"Host": "[::1]:8100"}).status_code == 200
    rebound = loopback.get("/api/queue", headers={"Host": "attacker.example:8100"})
    assert rebound.status_code == 421


def test_judge_review_refuses_a_public_address_without_a_token(tmp_path: Path) -> None:
    sample = write_sample(tmp_path / "sample.jsonl")
    refused = subprocess.run(
        [sys.executable, "-m", "judge", "review", str(sample), "--host", "0.0.0.0"],
        capture_output=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2
    assert b"not a loopback address: set JUDGE_SERVICE_TOKEN" in refused.stderr


def test_every_acknowledged_label_is_in_the_file_when_the_server_is_killed(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    server, _, _ = judged
    sample, results = copy(judged, tmp_path)
    with review_process(str(sample), "--results", str(results),
                        *judge_args(server.url, tmp_path)) as running:  # fmt: skip
        for case_id, value in (("w09-perth", "correct"), ("w10-sofia", "incorrect")):
            reply = httpx.put(f"{running.url}/api/labels/{case_id}", json={"selection": value})
            assert reply.status_code == 200
        os.kill(running.process.pid, signal.SIGKILL)
        running.process.wait()
    labels = file_labels(sample)  # written before the reply, not after it
    assert labels["w09-perth"]["selection"] == "correct"
    assert labels["w10-sofia"]["selection"] == "incorrect"
    assert not list(tmp_path.glob("*.partial"))


def _write_labels(path: str, ids: list[str], reviewer: str, start: Any) -> None:
    from judge.calibrate._labels import LabelFile

    start.wait()  # all three write at the same moment
    for value in ("incorrect", "correct"):
        for case_id in ids:
            LabelFile(path).write(case_id, {"selection": value}, reviewer=reviewer)


def test_processes_writing_one_file_at_once_lose_no_label(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    import multiprocessing

    sample, _ = copy(judged, tmp_path)
    ids = [c["id"] for c in map(json.loads, sample.read_text().splitlines())]
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(3)
    workers = [
        context.Process(target=_write_labels, args=(str(sample), ids[i::3], f"r{i}", start))
        for i in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    labels = file_labels(sample)
    assert all(labels[i]["selection"] == "correct" for i in ids)
    assert {labels[i]["reviewer"] for i in ids} == {"r0", "r1", "r2"}


def test_labels_import_takes_its_turn_with_the_other_writers(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    """`judge labels import` rewrites the sample under the same lock as a review's writes."""
    from judge.calibrate._labels import LabelFile

    sample, _ = copy(judged, tmp_path)
    exported = tmp_path / "labels.csv"
    subprocess.run([sys.executable, "-m", "judge", "labels", "export", str(sample), "-o",
                    str(exported)], check=True, capture_output=True)  # fmt: skip
    with exported.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    first = rows[0]
    flipped = "incorrect" if first["selection"] == "correct" else "correct"
    first["selection"] = flipped
    with exported.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(first))
        writer.writeheader()
        writer.writerows(rows)
    held = LabelFile(sample)
    with held._locked():
        importing = subprocess.Popen(
            [sys.executable, "-m", "judge", "labels", "import", str(sample), str(exported)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        with pytest.raises(subprocess.TimeoutExpired):
            importing.wait(timeout=3)  # waiting for the lock
    said, _ = importing.communicate(timeout=60)
    assert importing.returncode == 0, said
    assert file_labels(sample)[first["id"]]["selection"] == flipped  # written, once let in


def test_a_new_label_never_keeps_the_last_reviewers_name(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    client(review_of(judged, sample, results, reviewer="ana")).put(
        "/api/labels/w10-sofia", json={"selection": "correct"}
    )
    client(review_of(judged, sample, results)).put(
        "/api/labels/w10-sofia", json={"selection": "incorrect"}
    )
    assert "reviewer" not in file_labels(sample)["w10-sofia"]


def test_a_sample_broken_while_served_is_a_409_not_a_500(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path
) -> None:
    sample, results = copy(judged, tmp_path)
    app = client(review_of(judged, sample, results))
    with sample.open("a") as handle:
        handle.write("{not json\n")
    for reply in (
        app.get("/api/queue"),
        app.get("/api/cases/w10-sofia"),
        app.get("/api/agreement"),
        app.put("/api/labels/w10-sofia", json={"selection": "correct"}),
    ):
        assert reply.status_code == 409, reply.text
        assert "not valid JSON" in reply.json()["detail"]
    sample.unlink()
    assert app.get("/api/queue").status_code == 409


def test_a_label_write_is_synced_to_disk_before_it_returns(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from judge.calibrate._labels import LabelFile

    sample, _ = copy(judged, tmp_path)
    synced: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    LabelFile(sample).write("w10-sofia", {"selection": "correct"})
    assert len(synced) == 2  # the new file's content, then the folder holding its name
    assert file_labels(sample)["w10-sofia"]["selection"] == "correct"


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        pytest.param({}, True, id="no-browser"),
        pytest.param(
            {"Origin": "http://127.0.0.1", "Sec-Fetch-Site": "same-origin"}, True, id="its-own-page"
        ),  # fmt: skip
        pytest.param(
            {"Origin": "http://evil.example", "Content-Type": "text/plain"},
            False,
            id="a-form-elsewhere",
        ),  # fmt: skip
        pytest.param({"Sec-Fetch-Site": "cross-site"}, False, id="cross-site"),
        pytest.param({"Sec-Fetch-Site": "same-site"}, False, id="another-port"),
        pytest.param({"Origin": "null"}, False, id="a-sandboxed-page"),
    ],
)
def test_a_page_elsewhere_cannot_label_or_write_the_record(
    judged: tuple[ChatServer, Path, Path], tmp_path: Path, headers: dict[str, str], allowed: bool
) -> None:
    sample, results = copy(judged, tmp_path)
    record = tmp_path / "calibration.json"
    app = client(review_of(judged, sample, results, record=record, min_kappa=-1.0))
    before = sample.read_bytes()
    put = app.put("/api/labels/w10-sofia", json={"selection": "correct"}, headers=headers)
    posted = app.post("/api/calibration", headers=headers)
    if allowed:
        assert put.status_code == 200 and sample.read_bytes() != before
    else:
        assert (put.status_code, posted.status_code) == (403, 403)
        assert "refused" in put.json()["detail"]
        assert sample.read_bytes() == before and not record.exists()
    assert app.get("/api/queue", headers=headers).status_code == 200  # reading is not writing
