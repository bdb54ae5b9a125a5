"""What one client cannot do to `judge serve` (issue 52): reach it through a DNS name rebound to
127.0.0.1, sink a JSON batch with one case nested too deeply, or hold the service with a batch
that is slow to check (a slow environment). Each against a real `judge serve` on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.chat_server import ChatServer, serving
from tests.helpers import call, case, tool
from tests.review_helpers import review_process, write_sample
from tests.service_process import Service, judge_service
from tests.test_service import NDJSON, ndjson, paris

REBOUND = "rebind.evil.example"
SLOW_ENV = f"{Path(__file__).with_name('slow_environment.py')}:make_environment"
SPIN = 0.5  # seconds of CPU a replayed `spin` call takes (each case replays two)
DEEP = 1_000  # arrays in arrays: past what the JSON decoder follows in one document


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with serving() as running:
        yield running


@pytest.fixture(scope="module")
def service(chat: ChatServer) -> Iterator[Service]:
    judge = ("--base-url", chat.url, "--model", "m", "--no-cache")
    allowed = ("--allow-host", "judge.internal")
    with judge_service(*judge, *allowed, "--env", SLOW_ENV) as running:
        yield running


# -- the Host check -------------------------------------------------------------------------------


def answered(url: str, host: str, write: bool = False) -> int:
    """The status of a GET /healthz (or, `write`, a POST /v1/check from a page whose Origin
    agrees with `host`, as a rebinding page's does) addressed to `host`."""
    port = url.rsplit(":", 1)[1]
    headers = {"Host": f"{host}:{port}"}
    if not write:
        return httpx.get(url + "/healthz", headers=headers).status_code
    headers["Origin"] = f"http://{host}:{port}"
    return httpx.post(url + "/v1/check", json=[paris("a")], headers=headers).status_code


@pytest.mark.parametrize("write", [False, True])
def test_judge_serve_answers_only_loopback_and_allowed_names_without_a_token(
    service: Service, write: bool
) -> None:
    for host in ("127.0.0.1", "localhost", "[::1]", "judge.internal"):
        assert answered(service.url, host, write) == 200, host
    assert answered(service.url, REBOUND, write) == 421


def test_judge_review_answers_by_the_same_rule(tmp_path: Path) -> None:
    sample = write_sample(tmp_path / "sample.jsonl")
    with review_process(str(sample), "--allow-host", "judge.internal") as running:
        for host in ("127.0.0.1", "localhost", "judge.internal"):
            assert answered(running.url, host) == 200, host
        assert answered(running.url, REBOUND) == 421


# -- one bad case in a JSON array -----------------------------------------------------------------


def deep_batch() -> list[str]:
    """Three cases as JSON text; the second holds a value nested `DEEP` arrays deep."""
    deep = '{"id": "b", "meta": {"x": ' + "[" * DEEP + "]" * DEEP + "}}"
    return [json.dumps(paris("a")), deep, json.dumps(paris("c"))]


def test_a_case_nested_too_deeply_fails_alone_in_a_json_array(service: Service) -> None:
    cases = deep_batch()
    array = httpx.post(
        service.url + "/v1/check",
        content="[" + ",".join(cases) + "]",
        headers={"Content-Type": "application/json"},
    )
    assert array.status_code == 200, array.text
    lines = httpx.post(service.url + "/v1/check", content="\n".join(cases), headers=NDJSON)
    as_ndjson = [json.loads(line) for line in lines.text.splitlines()]
    assert array.json()["results"] == as_ndjson  # the same result NDJSON gives that line
    first, deep, last = as_ndjson
    assert (first["id"], first["passed"], last["id"], last["passed"]) == ("a", True, "c", True)
    [failure] = deep["failures"]
    assert deep["id"] == "request:2" and failure["kind"] == "InvalidCase"
    assert failure["message"] == "request:2: not valid JSON: JSON is nested too deeply"
    graded = httpx.post(
        service.url + "/v1/grade", content="[" + ",".join(cases) + "]", timeout=60
    ).json()["results"]
    assert [r["id"] for r in graded] == ["a", "request:2", "c"]
    assert graded[1]["failures"] == deep["failures"]


def test_a_json_array_that_is_not_json_past_a_deep_case_is_still_refused(
    service: Service,
) -> None:
    body = "[" + deep_batch()[1] + ', {"id": oops}]'
    reply = httpx.post(service.url + "/v1/check", content=body)
    assert reply.status_code == 400
    assert "case 2 of the array" in reply.json()["detail"]


# -- a batch slow to check holds no other client --------------------------------------------------


def slow_case(n: int) -> dict[str, Any]:
    """A case whose final-state check takes `2 * SPIN` s of CPU: the reference's call and the
    response's, each replayed into the slow environment."""
    spin = {"name": "spin", "arguments": {"seconds": SPIN}}
    spinning = [tool("spin", {"type": "object", "properties": {"seconds": {"type": "number"}}})]
    return case([call("spin", spin["arguments"])], [spin], spinning) | {"id": f"slow-{n}"}


@pytest.mark.parametrize("form", ["json", "ndjson"])
@pytest.mark.parametrize("path", ["/v1/check", "/v1/grade"])
def test_healthz_answers_while_a_slow_batch_is_checked(
    service: Service, path: str, form: str
) -> None:
    cases = [slow_case(n) for n in range(4)]  # 4 s of checks
    body, headers = (
        (json.dumps(cases).encode(), {"Content-Type": "application/json"})
        if form == "json"
        else (ndjson(cases), NDJSON)
    )
    replies: list[httpx.Response] = []

    def post() -> None:
        replies.append(httpx.post(service.url + path, content=body, headers=headers, timeout=300))

    batch = threading.Thread(target=post)
    batch.start()
    waits: list[float] = []  # each /healthz asked while the batch was in flight
    while batch.is_alive():
        asked = time.monotonic()
        assert httpx.get(service.url + "/healthz", timeout=300).status_code == 200
        waits.append(time.monotonic() - asked)
        time.sleep(0.05)
    batch.join()
    assert replies and replies[0].status_code == 200, replies
    assert waits and max(waits) < 2 * SPIN, waits  # less than one case's checks take


def test_a_slow_batch_holds_no_other_clients_grading(service: Service) -> None:
    grade = service.url + "/v1/grade"
    assert httpx.post(grade, json=[paris("first")], timeout=60).status_code == 200  # (warm)
    slow = [slow_case(n) for n in range(2)]  # 2 s of checks
    batch = threading.Thread(target=lambda: httpx.post(grade, json=slow, timeout=300))
    batch.start()
    time.sleep(0.2)  # its checks under way
    asked = time.monotonic()
    quick = httpx.post(grade, json=[paris("quick")], timeout=60)
    waited = time.monotonic() - asked
    in_flight = batch.is_alive()
    batch.join()
    assert quick.status_code == 200 and quick.json()["results"][0]["id"] == "quick"
    assert in_flight and waited < 2 * SPIN, waited  # not behind the slow cases
