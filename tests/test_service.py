"""`judge serve` as a real process on 127.0.0.1: the same results as the CLI, NDJSON streaming,
bad bodies, limits, auth, the judge's cache and calibration gate."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import h11
import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from judge import create_app
from judge.calibrate._record import CalibrationRecord, fingerprint_sha256
from judge.cli import main
from judge.cli._common import parse_size
from judge.cli._service import serve_command as serve_cli
from tests.chat_server import ChatServer, Reply, answer, serving
from tests.helpers import call, case
from tests.service_process import Service, free_port, judge_service, serve_command

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "cases.jsonl"
NDJSON = {"Content-Type": "application/x-ndjson"}
MAX_CASES = 200
MAX_BYTES = 256 * 1024
CHUNK = 64  # check results per NDJSON write


def paris(case_id: str, city: str = "Paris", user: str = "weather in Paris") -> dict[str, Any]:
    data = case(
        [call("get_weather", {"city": city})],
        [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    )
    data["messages"] = [{"role": "user", "content": user}]
    return data | {"id": case_id}


def ndjson(rows: list[Any]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def cli_results(*args: str) -> list[dict[str, Any]]:
    """What the `judge` command writes, run as its own process."""
    done = subprocess.run([sys.executable, "-m", "judge", *args], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture(scope="module")
def chat() -> Iterator[ChatServer]:
    with serving() as running:
        yield running


@pytest.fixture
def script(chat: ChatServer) -> Iterator[ChatServer]:
    yield chat
    chat.default = answer
    chat.script.clear()


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("service-cache")


@pytest.fixture(scope="module")
def service(chat: ChatServer, cache_dir: Path) -> Iterator[Service]:
    with judge_service(
        "--base-url",
        chat.url,
        "--model",
        "m",
        "--cache-dir",
        str(cache_dir),
        "--max-cases",
        str(MAX_CASES),
        "--max-request-bytes",
        str(MAX_BYTES),
    ) as running:
        yield running


@pytest.fixture(scope="module")
def client(service: Service) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service.url, timeout=30) as http:
        yield http


# -- the same results as the CLI --------------------------------------------------------------


def test_check_json_array_equals_judge_check(client: httpx.Client, tmp_path: Path) -> None:
    lines = EXAMPLES.read_text().splitlines()
    cases_file = tmp_path / "cases.jsonl"
    cases_file.write_text("\n".join([*lines, '{"id": "bad", "tools": 3}', "[1]"]) + "\n")
    expected = cli_results("check", str(cases_file))
    reply = client.post(
        "/v1/check",
        params={"source": str(cases_file)},
        json=[json.loads(line) for line in cases_file.read_text().splitlines()],
    )
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "application/json"
    assert reply.json() == {"results": expected, "warnings": []}
    kinds = [r["failures"][0]["kind"] for r in expected[-2:]]
    assert kinds == ["InvalidCase", "InvalidCase"]


def test_check_ndjson_is_byte_for_byte_the_cli_output(client: httpx.Client, tmp_path: Path) -> None:
    cases_file = tmp_path / "cases.jsonl"
    body = EXAMPLES.read_bytes() + b"\n{not json\n" + EXAMPLES.read_bytes()[:200] + b"\n"
    cases_file.write_bytes(body)
    cli = subprocess.run(
        [sys.executable, "-m", "judge", "check", str(cases_file)], capture_output=True, check=False
    )
    reply = client.post(
        "/v1/check", params={"source": str(cases_file)}, content=body, headers=NDJSON
    )
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/x-ndjson"
    assert reply.content == cli.stdout
    bad = [json.loads(line) for line in reply.content.splitlines()][-2:]
    assert bad[0]["id"] == "cases.jsonl:11"
    assert "cases.jsonl:11: not valid JSON" in bad[0]["failures"][0]["message"]
    assert bad[1]["failures"][0]["kind"] == "InvalidCase"


def http_chunks(url: str, path: str, body: bytes) -> list[bytes]:
    """POST NDJSON and return the body as the chunks the server wrote (HTTP/1.1 chunked
    encoding, read with h11 on a plain socket, so no client buffering blurs them)."""
    where = urlsplit(url)
    assert where.hostname is not None and where.port is not None
    http = h11.Connection(our_role=h11.CLIENT)
    headers = [
        ("Host", f"{where.hostname}:{where.port}"),
        ("Content-Type", "application/x-ndjson"),
        ("Content-Length", str(len(body))),
    ]
    chunks: list[bytes] = []
    current = b""
    with socket.create_connection((where.hostname, where.port), timeout=30) as sock:
        sock.sendall(http.send(h11.Request(method="POST", target=path, headers=headers)) or b"")
        sock.sendall(http.send(h11.Data(data=body)) or b"")
        sock.sendall(http.send(h11.EndOfMessage()) or b"")
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                http.receive_data(sock.recv(65536))
            elif isinstance(event, h11.Response):
                assert event.status_code == 200
                assert (b"transfer-encoding", b"chunked") in event.headers
            elif isinstance(event, h11.Data):
                current += event.data
                if event.chunk_end:
                    chunks.append(current)
                    current = b""
            elif isinstance(event, h11.EndOfMessage):
                return chunks


def test_ndjson_check_results_are_written_in_chunks_of_64(service: Service) -> None:
    count = 3 * CHUNK + 8
    rows = [paris(f"p{i}", city="Paris" if i % 2 else "Lyon") for i in range(count)]
    chunks = http_chunks(service.url, "/v1/check", ndjson(rows))
    assert [chunk.count(b"\n") for chunk in chunks] == [CHUNK, CHUNK, CHUNK, 8]
    assert all(chunk.endswith(b"\n") for chunk in chunks)  # whole lines only
    results = [json.loads(line) for line in b"".join(chunks).splitlines()]
    assert [r["id"] for r in results] == [f"p{i}" for i in range(count)]
    assert [r["passed"] for r in results[:2]] == [False, True]


# -- bad bodies -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        pytest.param(b'[{"id": "a"}, ', 400, "not valid JSON", id="truncated-json"),
        pytest.param(b"", 400, "not valid JSON", id="empty-body"),
        pytest.param(
            b'{"id": "a"}', 422, "must be a JSON array of cases, got an object", id="object"
        ),
        pytest.param(b'"cases"', 422, "got a string", id="string"),
        pytest.param(b"null", 422, "got null", id="null"),
    ],
)
def test_bodies_that_are_not_a_list_of_cases_are_refused(
    client: httpx.Client, body: bytes, status: int, says: str
) -> None:
    reply = client.post("/v1/check", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == status
    assert says in reply.json()["detail"]


def test_a_bad_case_in_a_batch_is_a_result_not_an_error(client: httpx.Client) -> None:
    reply = client.post("/v1/check", json=[paris("good"), {"id": "b", "response": 5}, 7])
    assert reply.status_code == 200
    good, bad, number = reply.json()["results"]
    assert good["passed"] is True
    assert bad["id"] == "b"
    assert bad["failures"] == [
        {
            "call": None,
            "kind": "InvalidCase",
            "path": "/response",
            "message": "request:2 (case 'b') at /response: expected a message, a list of "
            "calls or text, got a number",
        }
    ]
    assert number["id"] == "request:3"
    assert "a case must be a JSON object, got a number" in number["failures"][0]["message"]


def test_what_the_format_does_not_know_comes_back_as_warnings(client: httpx.Client) -> None:
    typo = {**paris("typo2"), "mesages": []}
    reply = client.post("/v1/check", json=[typo, paris("twice"), paris("twice")])
    assert reply.status_code == 200
    assert reply.json()["warnings"] == [
        "request:1 case 'typo2': unknown field /mesages (did you mean /messages?)",
        "request:3 case 'twice': duplicate id (first at request:2)",
    ]


def test_an_empty_batch_gets_no_results(client: httpx.Client) -> None:
    assert client.post("/v1/check", json=[]).json() == {"results": [], "warnings": []}
    assert client.post("/v1/check", content=b"\n\n", headers=NDJSON).content == b""


# -- limits -----------------------------------------------------------------------------------


def test_too_many_cases_get_422(client: httpx.Client) -> None:
    rows = [paris(f"p{i}") for i in range(MAX_CASES + 1)]
    for reply in (
        client.post("/v1/check", json=rows),
        client.post("/v1/check", content=ndjson(rows), headers=NDJSON),
    ):
        assert reply.status_code == 422
        assert (
            f"holds {MAX_CASES + 1} cases, over this service's limit of {MAX_CASES}"
            in (reply.json()["detail"])
        )


def test_a_body_over_the_size_limit_gets_413(client: httpx.Client) -> None:
    big = [paris("big", user="x" * (MAX_BYTES + 1))]
    reply = client.post("/v1/check", json=big)
    assert reply.status_code == 413
    assert f"over this service's limit of {MAX_BYTES} bytes" in reply.json()["detail"]

    def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b"["
        for _ in range(MAX_BYTES // 1000 + 1):
            yield json.dumps(paris("c", user="y" * 1000)).encode() + b","
        yield b"1]"

    reply = client.post("/v1/check", content=chunked())
    assert reply.status_code == 413
    assert "at least" in reply.json()["detail"]


# -- service endpoints --------------------------------------------------------------------------


def test_healthz_rubrics_and_docs(client: httpx.Client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    rubrics = client.get("/v1/rubrics").json()
    # Exactly the rubrics the judge asks with: no trajectory rubric unless --trajectory.
    assert [r["dimension"] for r in rubrics["rubrics"]] == ["selection", "arguments"]
    assert [r["name"] for r in rubrics["rubrics"]] == [
        r["name"] for r in rubrics["judge"]["rubrics"]
    ]
    assert rubrics["judge"]["model"] == "m"
    assert rubrics["trusted"] is None
    document = client.get("/openapi.json").json()
    assert {"/v1/check", "/v1/grade", "/v1/rubrics", "/healthz"} <= set(document["paths"])
    body = document["paths"]["/v1/check"]["post"]["requestBody"]["content"]
    assert body["application/json"]["schema"]["items"] == {"$ref": "#/components/schemas/Case"}
    assert "ResponseInput" in document["components"]["schemas"]
    grade = document["paths"]["/v1/grade"]["post"]["responses"]
    assert {"200", "400", "413", "422", "502", "503"} <= set(grade)
    assert "503" in document["paths"]["/v1/rubrics"]["get"]["responses"]
    assert "502" not in document["paths"]["/v1/check"]["post"]["responses"]
    assert "securitySchemes" not in document["components"]  # no token, no scheme
    assert "swagger" in client.get("/docs").text.lower()


# -- the judge ---------------------------------------------------------------------------------


def test_grade_gives_the_verdicts_of_judge_grade(
    client: httpx.Client, script: ChatServer, tmp_path: Path
) -> None:
    rows = [paris("g-right"), paris("g-wrong", city="Lyon"), {"id": "g-bad", "tools": 1}]
    cases_file = tmp_path / "grade.jsonl"
    cases_file.write_bytes(ndjson(rows))
    cli_cache = tmp_path / "cli-cache"  # its own cache: both ask the judge, so usage is equal
    expected = cli_results(
        "grade",
        str(cases_file),
        "--base-url",
        script.url,
        "--model",
        "m",
        "--cache-dir",
        str(cli_cache),
    )
    reply = client.post("/v1/grade", json=rows, params={"source": str(cases_file)})
    assert reply.status_code == 200, reply.text
    results = reply.json()["results"]
    assert [r["id"] for r in results] == ["g-right", "g-wrong", "g-bad"]
    assert {r["id"]: r for r in results} == {r["id"]: r for r in expected}
    assert results[0]["judge"]["status"] == "ok"
    assert results[0]["judge"]["provenance"]["model"] == "m"


def test_grade_uses_the_cache_judge_grade_filled(
    client: httpx.Client, script: ChatServer, cache_dir: Path, tmp_path: Path
) -> None:
    cases_file = tmp_path / "cached.jsonl"
    cases_file.write_bytes(ndjson([paris("cached", user="weather in Paris, cached")]))
    cli_results(
        "grade",
        str(cases_file),
        "--base-url",
        script.url,
        "--model",
        "m",
        "--cache-dir",
        str(cache_dir),
    )
    asked = len(script.chat_requests)
    reply = client.post("/v1/grade", content=cases_file.read_bytes(), headers=NDJSON)
    (result,) = [json.loads(line) for line in reply.content.splitlines()]
    assert len(script.chat_requests) == asked  # nothing asked: every answer was cached
    assert result["judge"]["usage"]["cached"] == 2
    assert result["judge"]["status"] == "ok"


def test_grade_ndjson_streams_each_result_as_it_finishes(
    client: httpx.Client, script: ChatServer
) -> None:
    def slow_for_the_slow_case(body: dict[str, Any]) -> Reply:
        reply = answer(body)
        if any("SLOW" in str(m.get("content")) for m in body["messages"]):
            reply.delay = 2.0
        return reply

    script.default = slow_for_the_slow_case
    rows = [paris("slow", user="weather in Paris SLOW"), paris("fast", user="weather, Paris")]
    arrived: list[tuple[str, float]] = []
    start = time.monotonic()
    with client.stream("POST", "/v1/grade", content=ndjson(rows), headers=NDJSON) as reply:
        assert reply.status_code == 200
        for line in reply.iter_lines():
            arrived.append((json.loads(line)["id"], time.monotonic() - start))
    assert [name for name, _ in arrived] == ["fast", "slow"]
    assert arrived[0][1] < 1.5 <= arrived[1][1]


def refuse_marked(body: dict[str, Any]) -> Reply:
    """Refuse (401: a bad key) the questions about cases marked REFUSE, a second late;
    answer the others at once."""
    if any("REFUSE" in str(m.get("content")) for m in body["messages"]):
        return Reply(status=401, body={"error": {"message": "bad key"}}, delay=1.0)
    return answer(body)


@pytest.mark.parametrize(
    ("rows", "delivered"),
    [
        pytest.param(
            [{"id": "bad", "tools": 1}, paris("refused", user="weather in Paris REFUSE")],
            {"bad"},
            id="only-a-bad-case-before",
        ),
        pytest.param(
            [
                paris("judged", user="weather in Paris, judged before the cut"),
                {"id": "bad", "tools": 1},
                paris("refused", user="weather in Paris REFUSE"),
            ],
            {"judged", "bad"},
            id="a-judged-and-a-bad-case-before",
        ),
    ],
)
def test_a_grade_stream_cut_by_the_endpoint_keeps_the_results_before(
    client: httpx.Client,
    script: ChatServer,
    service: Service,
    rows: list[dict[str, Any]],
    delivered: set[str],
) -> None:
    script.default = refuse_marked
    got: dict[str, dict[str, Any]] = {}
    with (
        pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"),
        client.stream("POST", "/v1/grade", content=ndjson(rows), headers=NDJSON) as reply,
    ):
        assert reply.status_code == 200
        for line in reply.iter_lines():
            result = json.loads(line)
            got[result["id"]] = result
    assert set(got) == delivered  # the cut is visible: the body never completes
    assert got["bad"]["failures"][0]["kind"] == "InvalidCase"
    log = service.log()
    assert log.count("NDJSON stream cut short") >= 1
    assert "rejected the API key" in log
    assert "Traceback" not in log  # logged once, as one line


def test_an_endpoint_that_refuses_the_judge_gets_502(
    client: httpx.Client, script: ChatServer
) -> None:
    script.default = lambda body: Reply(status=401, body={"error": {"message": "bad key"}})
    reply = client.post("/v1/grade", json=[paris("refused", user="weather in Paris, refused")])
    assert reply.status_code == 502
    assert "the judge endpoint refused" in reply.json()["detail"]


# -- auth ---------------------------------------------------------------------------------------


def test_a_token_guards_everything_but_healthz(chat: ChatServer, tmp_path: Path) -> None:
    with (
        judge_service(
            "--base-url",
            chat.url,
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path),
            "--trajectory",
            token="s3cret",
        ) as running,
        httpx.Client(base_url=running.url) as http,
    ):
        assert http.get("/healthz").status_code == 200
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret"}):
            for method, path in (
                ("POST", "/v1/check"),
                ("POST", "/v1/grade"),
                ("GET", "/v1/rubrics"),
                ("GET", "/openapi.json"),
            ):
                reply = http.request(method, path, json=[paris("a")], headers=headers)
                assert reply.status_code == 401, (path, headers)
                assert reply.headers["www-authenticate"] == "Bearer"
                assert "bearer token" in reply.json()["detail"]
        good = {"Authorization": "Bearer s3cret"}
        reply = http.post("/v1/check", json=[paris("a")], headers=good)
        assert reply.status_code == 200
        assert reply.json()["results"][0]["passed"] is True
        rubrics = http.get("/v1/rubrics", headers=good).json()["rubrics"]
        assert [r["dimension"] for r in rubrics] == ["selection", "arguments", "trajectory"]
        document = http.get("/openapi.json", headers=good).json()
    # The docs declare the scheme, so /docs (and generated clients) send the token.
    assert document["components"]["securitySchemes"] == {
        "HTTPBearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "The token the service was started with (JUDGE_SERVICE_TOKEN).",
        }
    }
    for path in ("/v1/check", "/v1/grade"):
        operation = document["paths"][path]["post"]
        assert operation["security"] == [{"HTTPBearer": []}]
        assert "401" in operation["responses"]
    assert "security" not in document["paths"]["/healthz"]["get"]


# -- the calibration gate ------------------------------------------------------------------------


def record_for(fingerprint: dict[str, Any]) -> str:
    return CalibrationRecord(
        created="2026-01-01T00:00:00+00:00",
        sample="s.jsonl",
        results="r.jsonl",
        disagreements="d.jsonl",
        fingerprint=fingerprint,
        fingerprint_sha256=fingerprint_sha256(fingerprint),
        threshold=0.6,
        passed=False,
        cases=0,
        judge_errors=0,
        dimensions={},
    ).model_dump_json()


def test_the_gate_refuses_to_start_an_uncalibrated_judge(tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    record.write_text(record_for({"model": "another"}))
    done = subprocess.run(
        serve_command(
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--cache-dir",
            str(tmp_path),
            "--calibration",
            str(record),
            port=free_port(),
        ),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert b"judge serve: refused:" in done.stderr
    assert b"measured for another judge" in done.stderr


def test_forced_past_the_gate_every_verdict_is_untrusted(chat: ChatServer, tmp_path: Path) -> None:
    record = tmp_path / "calibration.json"
    record.write_text(record_for({"model": "another"}))
    with judge_service(
        "--base-url",
        chat.url,
        "--model",
        "m",
        "--cache-dir",
        str(tmp_path),
        "--calibration",
        str(record),
        "--force",
    ) as running:
        reply = httpx.post(running.url + "/v1/grade", json=[paris("forced")], timeout=30)
        assert "--force: running untrusted" in running.log()
    assert reply.json()["results"][0]["judge"]["trusted"] is False


def test_match_and_env_grade_trajectories_as_judge_check_does(tmp_path: Path) -> None:
    refunds = EXAMPLES.parent / "refunds"
    options = (
        "--match",
        "unordered",
        "--env",
        f"{refunds / 'environment.py'}:make_environment",
    )
    expected = cli_results("check", str(refunds / "cases.jsonl"), *options)
    with judge_service(*options, "--model", "local", "--no-cache") as service:
        reply = httpx.post(
            f"{service.url}/v1/check",
            params={"source": str(refunds / "cases.jsonl")},
            content=(refunds / "cases.jsonl").read_bytes(),
            headers=NDJSON,
            timeout=30,
        )
    assert reply.status_code == 200, reply.text
    got = [json.loads(line) for line in reply.text.splitlines()]
    assert got == expected
    assert all(r["trajectory"]["mode"] == "unordered" and r["final_state"] for r in got)


# -- options and the app factory ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "size"),
    [
        ("1048576", 1048576),
        ("100b", 100),
        ("512K", 512 * 1024),
        ("2 kb", 2 * 1024),
        ("32M", 32 * 1024**2),
        ("32MiB", 32 * 1024**2),
        ("1g", 1024**3),
    ],
)
def test_sizes_take_binary_units(given: str, size: int) -> None:
    option = next(p for p in serve_cli.params if p.name == "max_request_bytes")
    assert parse_size(click.Context(serve_cli), option, given) == size


@pytest.mark.parametrize(
    ("given", "says"),
    [
        ("1.5M", "is not a size"),
        ("12Q", "is not a size"),
        ("M", "is not a size"),
        ("-1", "is not a size"),
        ("0", "must be at least 1 byte"),
    ],
)
def test_a_bad_size_is_a_usage_error(given: str, says: str) -> None:
    done = CliRunner().invoke(main, ["serve", "--max-request-bytes", given])
    assert done.exit_code == 2
    assert "--max-request-bytes" in done.output
    assert says in done.output


def test_an_app_without_a_judge_checks_and_answers_503_for_the_judge() -> None:
    with TestClient(create_app(), "http://127.0.0.1") as http:
        assert http.post("/v1/check", json=[paris("a")]).json()["results"][0]["passed"] is True
        for reply in (http.post("/v1/grade", json=[paris("a")]), http.get("/v1/rubrics")):
            assert reply.status_code == 503
            assert reply.json()["detail"] == "this service runs no judge"


def test_the_service_grades_tool_assertions_and_partial_credit(client: httpx.Client) -> None:
    avoided = paris("avoid") | {"assert_tools": {"avoided": ["get_weather"]}}
    reply = client.post("/v1/check", json=[paris("good"), avoided])
    assert reply.status_code == 200
    good, bad = reply.json()["results"]
    assert good["call_scores"] == {
        "matched": 1,
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "arguments": 1.0,
    }
    assert good["tool_assertions"] is None
    assert (bad["tool_assertions"], bad["passed"]) == (False, False)
    assert [f["kind"] for f in bad["failures"]] == ["ForbiddenCall"]
