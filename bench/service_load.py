"""Load on `judge serve`: N check requests from C concurrent clients against a real server
process on 127.0.0.1; reports throughput, latency percentiles and errors (target: none).

    python bench/service_load.py [--requests 10000] [--clients 32] [--cases-per-request 1] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.service_process import judge_service  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "cases.jsonl"


@dataclass
class Report:
    requests: int
    clients: int
    cases_per_request: int
    seconds: float
    requests_per_s: float
    cases_per_s: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    errors: int
    first_error: str | None


def bodies(cases_per_request: int) -> list[bytes]:
    """One request body per example case, each a JSON array of `cases_per_request` cases."""
    cases = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    return [
        json.dumps([cases[(i + k) % len(cases)] for k in range(cases_per_request)]).encode()
        for i in range(len(cases))
    ]


async def load(url: str, requests: int, clients: int, cases_per_request: int) -> Report:
    payloads = bodies(cases_per_request)
    latencies: list[float] = []
    errors: list[str] = []
    next_request = iter(range(requests))
    connector = aiohttp.TCPConnector(limit=clients)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            for i in next_request:
                start = time.perf_counter()
                try:
                    async with session.post(
                        url + "/v1/check", data=payloads[i % len(payloads)], headers=headers
                    ) as reply:
                        body = await reply.read()
                        if reply.status != 200:
                            errors.append(f"HTTP {reply.status}: {body[:200]!r}")
                        elif len(json.loads(body)["results"]) != cases_per_request:
                            errors.append(f"wrong number of results: {body[:200]!r}")
                except (aiohttp.ClientError, OSError, ValueError) as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")
                latencies.append(time.perf_counter() - start)

        began = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(clients)))
        seconds = time.perf_counter() - began
    cuts = statistics.quantiles(latencies, n=100)
    return Report(
        requests=requests,
        clients=clients,
        cases_per_request=cases_per_request,
        seconds=round(seconds, 3),
        requests_per_s=round(requests / seconds, 1),
        cases_per_s=round(requests * cases_per_request / seconds, 1),
        p50_ms=round(cuts[49] * 1000, 2),
        p99_ms=round(cuts[98] * 1000, 2),
        max_ms=round(max(latencies) * 1000, 2),
        errors=len(errors),
        first_error=errors[0] if errors else None,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--cases-per-request", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    options = parser.parse_args()
    with judge_service(
        "--no-cache", "--model", "unused", "--base-url", "http://127.0.0.1:9/v1"
    ) as (service):
        report = asyncio.run(
            load(service.url, options.requests, options.clients, options.cases_per_request)
        )
    data: dict[str, Any] = asdict(report)
    if options.json:
        print(json.dumps(data, indent=2))
    else:
        print(
            f"judge serve, POST /v1/check: {report.requests:,} requests "
            f"({report.cases_per_request} case each) from {report.clients} clients\n"
            f"  {report.seconds:.2f} s, {report.requests_per_s:,.0f} requests/s, "
            f"{report.cases_per_s:,.0f} cases/s\n"
            f"  latency p50 {report.p50_ms:.1f} ms, p99 {report.p99_ms:.1f} ms, "
            f"max {report.max_ms:.1f} ms\n"
            f"  errors: {report.errors}"
            + (f" (first: {report.first_error})" if report.errors else "")
        )
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
