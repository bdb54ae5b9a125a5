"""The service token as users set it (`echo ... > file`, `$(cat file)`): whitespace around it is
not part of it; beyond loopback none, or a short one, is refused with the reason. And a closed
pipe on standard output (`judge check f.jsonl | head`) ends the command quietly with exit 0."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from judge.service._token import MIN_TOKEN_CHARS, service_token, token_refusal
from tests.review_helpers import clean_env, write_sample
from tests.service_process import judge_service
from tests.test_service import paris

GOOD = "k3y-0123456789abcdef"


@pytest.mark.parametrize(
    ("raw", "read"),
    [(f"{GOOD}\n", GOOD), (f"  {GOOD}\r\n", GOOD), ("\n", None), ("", None), (None, None)],
)
def test_the_token_is_read_without_surrounding_whitespace(
    raw: str | None, read: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JUDGE_SERVICE_TOKEN", raising=False)
    if raw is not None:
        monkeypatch.setenv("JUDGE_SERVICE_TOKEN", raw)
    assert service_token() == read


def test_a_token_ending_in_a_newline_still_lets_its_holder_in() -> None:
    with judge_service(token=f"{GOOD}\n") as running, httpx.Client(base_url=running.url) as http:
        good = http.post(
            "/v1/check", json=[paris("a")], headers={"Authorization": f"Bearer {GOOD}"}
        )
        assert good.status_code == 200
        assert http.post("/v1/check", json=[paris("a")]).status_code == 401
        # a page elsewhere cannot make a browser that holds the token post to it either
        evil = {"Authorization": f"Bearer {GOOD}", "Origin": "http://evil.example"}
        refused = http.post("/v1/check", json=[paris("a")], headers=evil)
        assert refused.status_code == 403 and "another origin" in refused.json()["detail"]


@pytest.mark.parametrize(
    ("host", "token", "refused"),
    [
        ("127.0.0.1", "x", False),
        ("localhost", None, False),
        ("0.0.0.0", None, True),  # judge serve and judge review alike
        ("0.0.0.0", "x" * (MIN_TOKEN_CHARS - 1), True),
        ("::", "x" * MIN_TOKEN_CHARS, False),
    ],
)
def test_no_token_or_a_short_one_is_refused_beyond_loopback(
    host: str, token: str | None, refused: bool
) -> None:
    assert (token_refusal(host, token) is not None) is refused


@pytest.mark.parametrize(
    ("token", "says"),
    [
        ("short\n", f"JUDGE_SERVICE_TOKEN has 5 characters: one that guards 0.0.0.0, beyond "
                    f"loopback, needs at least {MIN_TOKEN_CHARS}"),
        ("", "0.0.0.0 is not a loopback address: set JUDGE_SERVICE_TOKEN"),  # (serve started)
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["serve", "review"])
def test_judge_serve_and_review_say_why_they_refuse_a_public_address(
    command: str, token: str, says: str, tmp_path: Path
) -> None:
    args = [str(write_sample(tmp_path / "sample.jsonl"))] if command == "review" else []
    refused = subprocess.run(
        [sys.executable, "-m", "judge", command, *args, "--host", "0.0.0.0", "--port", "0"],
        capture_output=True, env=clean_env(JUDGE_SERVICE_TOKEN=token), timeout=60,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert says.encode() in refused.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_reader_that_stops_early_ends_judge_check_quietly(tmp_path: Path, jobs: str) -> None:
    cases = tmp_path / "cases.jsonl"
    line = Path(__file__).resolve().parents[1].joinpath("examples", "cases.jsonl").read_text()
    lines = [json.loads(x) for x in line.splitlines() if x.strip()]
    with cases.open("w") as out:  # about 5,400 results, far past a pipe's buffer; unique ids
        for i in range(600):
            out.writelines(
                json.dumps({**c, "id": f"{c.get('id', n)}#{i}"}) + "\n" for n, c in enumerate(lines)
            )
    errors = tmp_path / "stderr"
    with errors.open("wb") as err:
        judge = subprocess.Popen(
            [sys.executable, "-m", "judge", "check", str(cases), "--jobs", jobs, "--no-progress"],
            stdout=subprocess.PIPE, stderr=err, env=clean_env(),
        )  # fmt: skip
        assert judge.stdout is not None
        assert judge.stdout.readline().startswith(b"{")
        judge.stdout.close()  # as `head -1` does
        assert judge.wait(timeout=60) == 0
    assert errors.read_bytes() == b""
