"""Judge overhead against a loopback chat server (in a child process) that answers every request
after a fixed latency: requests per second as a fraction of the ideal (concurrency / latency),
with DeepEval's ArgumentCorrectnessMetric and Phoenix's ToolSelectionEvaluator on the same server
and cases.

    python bench/judge_overhead.py [--cases 2000] [--concurrency 64] [--latency 0.1] [--json]
                                   [--python PATH]   # an interpreter with deepeval / phoenix
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from importlib import import_module
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.chat_server import ChatServer, Reply, answer, completion, serving  # noqa: E402

DEFAULT_SOURCE = (REPO / ".." / "shared" / "datasets" / "bfcl_single_turn.jsonl").resolve()
JUDGE_MODEL = "bench"  # the handler answers this model with judge verdicts, others generically
THIRD_PARTY_MODEL = "gpt-4.1-mini"  # a name DeepEval knows to support structured outputs
TARGET_RATIO = 0.9
WORKER_TIMEOUT_S = 1200
SERVER_TIMEOUT_S = 30  # for the server process to start, answer a command, or exit
NOT_INSTALLED = "not installed (pip install deepeval / arize-phoenix-evals to include it)"
THIRD_PARTY = {  # worker name: (label, top-level module, what is timed)
    "deepeval": ("DeepEval ArgumentCorrectness", "deepeval", "evaluate(), max_concurrent={c}"),
    "phoenix": (
        "Phoenix ToolSelectionEvaluator",
        "phoenix",
        "async_evaluate_dataframe(concurrency={c}), rate limiter raised",
    ),
}


@dataclass(frozen=True)
class Measurement:
    """One runner over `cases` cases; `seconds` is None when it was skipped or failed."""

    name: str
    cases: int
    seconds: float | None
    requests: int = 0
    prompt_chars: int = 0
    prompt_tokens: int = 0
    note: str = ""

    @property
    def rate(self) -> float | None:
        return self.cases / self.seconds if self.seconds else None

    @property
    def request_rate(self) -> float | None:
        return self.requests / self.seconds if self.seconds else None

    def per_case(self, total: int) -> float | None:
        return total / self.cases if self.seconds and self.cases else None


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def prompt_chars(body: dict[str, Any]) -> int:
    return sum(len(text_of(m.get("content"))) for m in body.get("messages") or [])


def prompt_tokens(body: dict[str, Any]) -> int:
    """Estimated at four characters a token over the messages and the structured-output spec."""
    spec = json.dumps([body.get("response_format"), body.get("tools")])
    return (prompt_chars(body) + len(spec)) // 4


def instance(schema: Any, defs: dict[str, Any], depth: int = 0) -> Any:
    """A small value that fits a JSON Schema: "ok", the first enum value, 1, true, one array
    item when minItems > 0, every property of an object."""
    if not isinstance(schema, dict) or depth > 32:
        return None
    if "$ref" in schema:
        return instance(defs.get(str(schema["$ref"]).rsplit("/", 1)[-1]), defs, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        if schema.get(key):
            return instance(schema[key][0], defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: instance(v, defs, depth + 1) for k, v in props.items()}
    if kind == "array":
        wanted = int(schema.get("minItems") or 0)
        return [instance(schema.get("items"), defs, depth + 1) for _ in range(min(wanted, 1))]
    return {"string": "ok", "integer": 1, "number": 1, "boolean": True}.get(str(kind))


def generic(body: dict[str, Any]) -> Any:
    """What another library parses: an instance of the requested schema (response_format
    json_schema, or a forced tool), else a guess from the prompt (DeepEval's JSON prompts)."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        schema = fmt["json_schema"]["schema"]
        return instance(schema, schema.get("$defs") or schema.get("definitions") or {})
    if body.get("tools"):
        schema = body["tools"][0]["function"].get("parameters") or {}
        return instance(schema, schema.get("$defs") or {})
    prompt = "".join(text_of(m.get("content")) for m in body.get("messages") or [])
    if '"verdicts"' in prompt:
        return {"verdicts": [{"verdict": "yes", "reason": "ok"}]}
    return {"reason": "ok"} if '"reason"' in prompt else {"label": "correct", "explanation": "ok"}


def handler(latency: float) -> Callable[[dict[str, Any]], Reply]:
    """The server's default: a valid reply for whoever asked, after `latency` seconds, with
    usage.prompt_tokens estimated from the request."""

    def reply(body: dict[str, Any]) -> Reply:
        if body.get("model") == JUDGE_MODEL:
            out = answer(body)
        else:
            text = json.dumps(generic(body))
            tool = bool(body.get("tools")) and not body.get("response_format")
            out = Reply(body=completion(None, tool_arguments=text) if tool else completion(text))
        out.body["usage"]["prompt_tokens"] = prompt_tokens(body)
        out.delay = latency
        return out

    return reply


def usable(case: dict[str, Any]) -> bool:
    """A response with calls, each naming a listed tool with arguments that parse as JSON."""
    names = {t["function"]["name"] for t in case.get("tools") or []}
    calls = (case.get("response") or {}).get("tool_calls") or []
    try:
        return bool(calls) and all(
            c["function"]["name"] in names
            and isinstance(json.loads(c["function"]["arguments"]), dict)
            for c in calls
        )
    except (KeyError, TypeError, ValueError):
        return False


def synthetic(i: int) -> dict[str, Any]:
    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    call = {"name": "get_weather", "arguments": json.dumps({"city": f"City {i}"})}
    return {
        "id": f"weather-{i}",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "description": "Weather in a city.",
                    "parameters": params,
                },
            }
        ],
        "messages": [{"role": "user", "content": f"What is the weather in City {i}?"}],
        "response": {
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": call}],
        },
    }


def load_cases(source: Path, n: int) -> tuple[list[dict[str, Any]], str]:
    """The first `n` usable cases of `source` (cycled, unique ids), or synthetic ones."""
    found: list[dict[str, Any]] = []
    if source.is_file():
        with source.open(encoding="utf-8") as f:
            found = [c for c in (json.loads(line) for line in f if line.strip()) if usable(c)]
    if not found:
        return [synthetic(i) for i in range(n)], f"SYNTHETIC weather cases ({source} absent)"
    cases = [
        {**found[i % len(found)], "id": f"{found[i % len(found)]['id']}#{i}"} for i in range(n)
    ]
    return cases, f"{source.name} ({len(found)} usable cases, cycled)"


class Traffic(NamedTuple):
    """What the server saw in one phase: chat requests, their prompt characters and estimated
    prompt tokens, and the most requests it held at once."""

    requests: int
    chars: int
    tokens: int
    peak: int


def traffic(server: ChatServer, start: int) -> tuple[int, int, int]:
    """Requests, prompt characters and estimated prompt tokens the server saw since `start`."""
    seen = [s for s in server.seen[start:] if s.path.endswith("/chat/completions")]
    return (
        len(seen),
        sum(prompt_chars(s.body) for s in seen),
        sum(prompt_tokens(s.body) for s in seen),
    )


def serve_child(conn: Connection, latency: float) -> None:
    """Server process: serve `handler(latency)` on 127.0.0.1, send the port, then answer the
    parent's commands until "stop" or until the parent goes away. "reset" starts a phase (and
    resets the peak in flight); "stats" sends the phase's `Traffic` fields as a tuple."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's; it stops this one
    with conn, serving(handler(latency)) as server:
        conn.send(server.port)
        first = 0
        while True:
            try:
                command = conn.recv()
            except (EOFError, OSError):
                return
            if command == "reset":
                first = len(server.seen)
                server.max_in_flight = server.in_flight
                conn.send(None)
            elif command == "stats":
                conn.send((*traffic(server, first), server.max_in_flight))
            else:  # "stop"
                conn.send(None)
                return


class ServerProcess:
    """The loopback server (`serve_child`) in a spawned child process, so that its CPU work
    does not compete with the judge for the GIL; driven over a pipe."""

    def __init__(self, latency: float) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(
            target=serve_child, args=(child, latency), name="judge-overhead-server", daemon=True
        )
        self._proc.start()
        child.close()
        try:
            self.port = int(self._receive("start"))
        except BaseException:
            self.kill()
            raise

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _receive(self, command: str) -> Any:
        try:
            if self._conn.poll(SERVER_TIMEOUT_S):
                return self._conn.recv()
        except (EOFError, OSError):
            pass
        raise RuntimeError(
            f"loopback server process: no answer to {command!r} in "
            f"{SERVER_TIMEOUT_S} s (exit code {self._proc.exitcode})"
        )

    def _ask(self, command: str) -> Any:
        try:
            self._conn.send(command)
        except OSError as exc:
            raise RuntimeError(
                f"loopback server process gone ({exc}; exit code {self._proc.exitcode})"
            ) from exc
        return self._receive(command)

    def reset(self) -> None:
        """Start a phase: `stats` counts from here."""
        self._ask("reset")

    def stats(self) -> Traffic:
        """What the server saw since the last `reset`."""
        return Traffic(*(int(v) for v in self._ask("stats")))

    def stop(self) -> None:
        """Ask the server process to exit, and wait for it (`kill` if it does not)."""
        if self._proc.is_alive():
            self._ask("stop")
            self._proc.join(SERVER_TIMEOUT_S)

    def kill(self) -> None:
        """Terminate the server process if it is still running (idempotent)."""
        if self._proc.is_alive():
            self._proc.terminate()
            self._proc.join(5)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
        self._conn.close()


@contextmanager
def server_process(latency: float) -> Iterator[ServerProcess]:
    """A `ServerProcess`, stopped cleanly on the way out, or terminated if anything failed."""
    server = ServerProcess(latency)
    try:
        yield server
        server.stop()
    finally:
        server.kill()


def run_judge(server: ServerProcess, cases: list[dict[str, Any]], concurrency: int) -> Measurement:
    from judge.judging._grade import Judge

    async def grade() -> tuple[float, list[Any]]:
        async with Judge(
            base_url=server.url,
            model=JUDGE_MODEL,
            api_key="x",
            concurrency=concurrency,
            cache=False,
            timeout=30,
        ) as judge:
            start = time.perf_counter()
            results = await judge.grade(cases)
            return time.perf_counter() - start, list(results)

    server.reset()
    seconds, results = asyncio.run(grade())
    requests, chars, _, _ = server.stats()
    outcomes = [r.judge for r in results if r.judge is not None]
    used = sum(o.usage.requests for o in outcomes)
    tokens = sum(o.usage.prompt_tokens for o in outcomes)
    bad = sum(o.status != "ok" for o in outcomes) + len(results) - len(outcomes)
    note = f"usage: {used:,} requests" + (f"; {bad} cases not ok" if bad else "; all ok")
    return Measurement("judge (Judge.grade)", len(cases), seconds, requests, chars, tokens, note)


def deepeval_worker(cases: list[dict[str, Any]], url: str, concurrency: int) -> dict[str, Any]:
    from deepeval import evaluate
    from deepeval.evaluate.configs import AsyncConfig, CacheConfig, DisplayConfig
    from deepeval.metrics import ArgumentCorrectnessMetric
    from deepeval.models import GPTModel
    from deepeval.test_case import LLMTestCase, ToolCall

    model = GPTModel(model=THIRD_PARTY_MODEL, base_url=url, api_key="x")
    tests = [
        LLMTestCase(
            input=text_of(c["messages"][-1].get("content")),
            actual_output="",
            tools_called=[
                ToolCall(
                    name=t["function"]["name"],
                    input_parameters=json.loads(t["function"]["arguments"]),
                )
                for t in c["response"]["tool_calls"]
            ],
        )
        for c in cases
    ]
    metric = ArgumentCorrectnessMetric(model=model)
    start = time.perf_counter()
    result = evaluate(
        tests,
        [metric],
        async_config=AsyncConfig(max_concurrent=concurrency),
        display_config=DisplayConfig(
            show_indicator=False, print_results=False, inspect_after_run=False
        ),
        cache_config=CacheConfig(write_cache=False),
    )
    seconds = time.perf_counter() - start
    failed = sum(any(m.error for m in t.metrics_data or []) for t in result.test_results)
    return {"seconds": seconds, "cases": len(tests), "failed": failed}


def phoenix_worker(cases: list[dict[str, Any]], url: str, concurrency: int) -> dict[str, Any]:
    import pandas as pd

    evals, metrics = import_module("phoenix.evals"), import_module("phoenix.evals.metrics")
    # Phoenix's adaptive rate limiter starts at 5 requests/s; raise it so the server sets the pace
    llm = evals.LLM(
        provider="openai",
        model=THIRD_PARTY_MODEL,
        base_url=url,
        api_key="x",
        initial_per_second_request_rate=10_000,
    )
    rows = [
        {
            "input": "\n".join(f"{m['role']}: {text_of(m.get('content'))}" for m in c["messages"]),
            "available_tools": json.dumps(c["tools"]),
            "tool_selection": "\n".join(
                f"{t['function']['name']}({t['function']['arguments']})"
                for t in c["response"]["tool_calls"]
            ),
        }
        for c in cases
    ]
    frame = pd.DataFrame(rows)
    evaluator = metrics.ToolSelectionEvaluator(llm=llm)
    start = time.perf_counter()
    out = asyncio.run(
        evals.async_evaluate_dataframe(
            frame, [evaluator], concurrency=concurrency, hide_tqdm_bar=True
        )
    )
    seconds = time.perf_counter() - start
    scored = [c for c in out.columns if str(c).endswith("_score")]
    failed = int(out[scored[0]].isna().sum()) if scored else len(rows)
    return {"seconds": seconds, "cases": len(rows), "failed": failed}


def worker(tool: str, path: Path, url: str, concurrency: int) -> None:
    """Child side: print {"seconds", "cases", "failed"} or {"skipped"} as the last line."""
    cases = json.loads(path.read_text(encoding="utf-8"))
    run = deepeval_worker if tool == "deepeval" else phoenix_worker
    try:
        found = run(cases, url, concurrency)
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in (THIRD_PARTY[tool][1], "pandas"):
            raise  # installed, but not the API this script knows: report it as a failure
        found = {"skipped": NOT_INSTALLED}
    print("\n" + json.dumps(found), flush=True)


def run_third_party(
    python: str, tool: str, server: ServerProcess, cases: Path, n: int, concurrency: int, tmp: Path
) -> Measurement:
    """Run `worker` for `tool` under `python` (in the temp dir, where DeepEval writes files);
    count what reached the server meanwhile."""
    label, _, timed = THIRD_PARTY[tool]
    env = {
        **os.environ,
        "DEEPEVAL_TELEMETRY_OPT_OUT": "YES",
        "DEEPEVAL_NO_INSPECT_PROMPT": "1",
        "PHOENIX_COLLECTOR_ENDPOINT": "",
        "OTEL_SDK_DISABLED": "true",
    }
    cmd = [
        python,
        str(Path(__file__).resolve()),
        "--worker",
        tool,
        "--source",
        str(cases),
        "--url",
        server.url,
        "--concurrency",
        str(concurrency),
    ]
    server.reset()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            timeout=WORKER_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return Measurement(label, n, None, note=f"failed: no result in {WORKER_TIMEOUT_S} s")
    except OSError as exc:
        return Measurement(label, n, None, note=f"failed: cannot run {python}: {exc.strerror}")
    requests, chars, tokens, _ = server.stats()
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines or not lines[-1].startswith("{"):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Measurement(label, n, None, note=f"failed: {tail[:120]}")
    found = json.loads(lines[-1])
    if "skipped" in found:
        return Measurement(label, n, None, note=NOT_INSTALLED)
    failed = f"; {found['failed']} cases failed" if found["failed"] else "; all scored"
    return Measurement(
        label,
        int(found["cases"]),
        float(found["seconds"]),
        requests,
        chars,
        tokens,
        timed.format(c=concurrency) + failed,
    )


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def row(m: Measurement) -> str:
    return (
        f"  {m.name:<31}{m.cases:>6,}{fmt(m.seconds, '.2f'):>8}{fmt(m.rate, ',.1f'):>9}"
        f"{fmt(m.request_rate, ',.0f'):>7}{fmt(m.per_case(m.requests), '.2f'):>7}"
        f"{fmt(m.per_case(m.prompt_chars), ',.0f'):>8}"
        f"{fmt(m.per_case(m.prompt_tokens), ',.0f'):>8}"
        f"  {m.note}"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2000, help="cases to grade (2000)")
    parser.add_argument("--concurrency", type=int, default=64, help="requests in flight (64)")
    parser.add_argument("--latency", type=float, default=0.1, help="server delay, seconds (0.1)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="JSONL of cases")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter for DeepEval / Phoenix (default: this one)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--worker", choices=sorted(THIRD_PARTY), help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cases < 1 or args.concurrency < 1 or args.latency <= 0:
        parser.error("--cases and --concurrency must be at least 1, --latency above 0")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args.worker, args.source, args.url, args.concurrency)
        return
    cases, origin = load_cases(args.source, args.cases)
    ideal = args.concurrency / args.latency
    with (
        server_process(args.latency) as server,
        tempfile.TemporaryDirectory(prefix="judge-overhead-") as tmp_name,
    ):
        tmp = Path(tmp_name)
        judge_m = run_judge(server, cases, args.concurrency)
        peak = server.stats().peak
        (tmp / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        others = [
            run_third_party(
                args.python, tool, server, tmp / "cases.json", len(cases), args.concurrency, tmp
            )
            for tool in THIRD_PARTY
        ]
    ratio = (judge_m.request_rate or 0.0) / ideal
    verdict = "met" if ratio >= TARGET_RATIO else "NOT met"
    if args.json:
        print(
            json.dumps(
                {
                    "cases": args.cases,
                    "concurrency": args.concurrency,
                    "latency_s": args.latency,
                    "source": origin,
                    "ideal_requests_per_s": ideal,
                    "judge_peak_in_flight": peak,
                    "runs": [
                        {
                            **asdict(m),
                            "cases_per_s": m.rate,
                            "requests_per_s": m.request_rate,
                            "requests_per_case": m.per_case(m.requests),
                            "prompt_chars_per_case": m.per_case(m.prompt_chars),
                            "prompt_tokens_per_case": m.per_case(m.prompt_tokens),
                        }
                        for m in [judge_m, *others]
                    ],
                    "ratio": ratio,
                    "target_ratio": TARGET_RATIO,
                    "target_met": ratio >= TARGET_RATIO,
                },
                indent=2,
            )
        )
        return
    print(
        f"judge overhead: {args.cases:,} cases from {origin}; loopback server answers after "
        f"{args.latency * 1000:.0f} ms; concurrency {args.concurrency}"
    )
    print(
        f"  {'runner':<31}{'cases':>6}{'seconds':>8}{'cases/s':>9}{'req/s':>7}{'req/c':>7}"
        f"{'chars/c':>8}{'tok/c':>8}  note"
    )
    print(row(judge_m))
    print(
        f"  judge requests/s / ideal ({args.concurrency} / {args.latency:g} s = {ideal:,.0f}/s):"
        f" {ratio:.3f}  target >= {TARGET_RATIO}: {verdict}  (peak in flight: {peak})"
    )
    print("\n".join(row(m) for m in others))
    print(
        "  chars/c: prompt characters per case; tok/c: prompt tokens per case, estimated by the "
        "server at 4 characters a token over messages and schema (judge: from its usage)"
    )


if __name__ == "__main__":
    main()
