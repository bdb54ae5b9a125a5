"""A real `judge serve` process on 127.0.0.1, for the tests and the load bench."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.helpers import PROVIDER_KEYS


@dataclass
class Service:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_command(*args: str, port: int) -> list[str]:
    return [sys.executable, "-m", "judge", "serve", "--port", str(port), *args]


@contextmanager
def judge_service(*args: str, token: str | None = None, timeout: float = 60.0) -> Iterator[Service]:
    """Start `judge serve ARGS` on a free port and wait for /healthz; stop it afterwards."""
    env = {k: v for k, v in os.environ.items() if k not in PROVIDER_KEYS}
    if token is not None:
        env["JUDGE_SERVICE_TOKEN"] = token
    port = free_port()
    with tempfile.TemporaryDirectory() as folder:
        log_path = Path(folder) / "serve.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                serve_command(*args, "--log-level", "warning", port=port),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        service = Service(f"http://127.0.0.1:{port}", process, log_path)
        try:
            _wait_until_healthy(service, timeout)
            yield service
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server process (killed after 15 s) and reap it."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _wait_until_healthy(service: Service, timeout: float) -> None:
    wait_until_healthy(service.url, service.process, service.log, "judge serve", timeout)


def wait_until_healthy(
    url: str,
    process: subprocess.Popen[bytes],
    log: Callable[[], str],
    what: str,
    timeout: float = 60.0,
) -> None:
    """Until `url`/healthz answers 200; RuntimeError with the log if the process exits first
    or `timeout` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited {process.returncode}:\n{log()}")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not answer /healthz in {timeout} s:\n{log()}")
