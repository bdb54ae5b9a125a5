"""Throughput of `judge check` as a whole process, side by side with the seed guide's reference
loop (also a whole process) on the same N-case file: judge with `--jobs 1` pinned to one core,
and with `--jobs 2` on two; where judge's time goes, stage by stage; plus DeepEval's
ToolCorrectnessMetric and agentevals' strict trajectory match in-process where they install.

    python bench/check_throughput.py [--cases 50000] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = (REPO / ".." / "shared" / "datasets" / "bfcl_single_turn.jsonl").resolve()
TARGET_RATIO = 2.0
THIRD_PARTY_MAX_CASES = 2000
NOT_INSTALLED = "not installed (pip install deepeval / agentevals to include it)"
THIRD_PARTY = {  # worker name: (label, what is timed)
    "deepeval": ("DeepEval ToolCorrectnessMetric", "measure() calls, async_mode=False"),
    "agentevals": ("agentevals trajectory (strict)", "evaluator calls"),
}

# The seed guide's reference loop, run as its own process: stdlib json, a new Draft7Validator per
# call, plain list equality for selection and argument values, one result line out per case.
REFERENCE_LOOP = """\
import json
import sys

from jsonschema import Draft7Validator

with open(sys.argv[1], encoding="utf-8") as src, open(sys.argv[2], "w", encoding="utf-8") as out:
    for line in src:
        case = json.loads(line)
        tools = {t["function"]["name"]: t["function"].get("parameters", {}) for t in case["tools"]}
        calls = (case.get("response") or {}).get("tool_calls") or []
        expected = case.get("expected_calls")
        parsed = []
        schema_valid = True if calls else None
        for call in calls:
            name = call["function"]["name"]
            try:
                args = json.loads(call["function"]["arguments"])
            except (TypeError, ValueError):
                args, schema_valid = None, False
            else:
                if name not in tools or not Draft7Validator(tools[name]).is_valid(args):
                    schema_valid = False
            parsed.append({"name": name, "arguments": args})
        selection = values = passed = None
        if expected is not None:
            selection = [c["name"] for c in parsed] == [c["name"] for c in expected]
            values = parsed == expected
            passed = selection and values and schema_valid is not False
        out.write(json.dumps({"id": case["id"], "tool_selection": selection,
                              "schema_valid": schema_valid, "argument_values": values,
                              "passed": passed}) + "\\n")
"""


@dataclass(frozen=True)
class Measurement:
    """One runner's best time over `cases` cases; `seconds` is None when it was skipped."""

    name: str
    cases: int
    seconds: float | None
    note: str = ""

    @property
    def rate(self) -> float | None:
        return self.cases / self.seconds if self.seconds else None


def build_cases(source: Path, n: int, dest: Path) -> int:
    """Write `n` cases to `dest` by cycling `source`, each copy with a unique id; return the
    number of source lines."""
    cases = [
        json.loads(line) for line in source.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    with dest.open("w", encoding="utf-8") as out:
        for i in range(n):
            case = dict(cases[i % len(cases)])
            case["id"] = f"{case['id']}#{i}"
            out.write(json.dumps(case) + "\n")
    return len(cases)


def interpreter_of(script: Path) -> str:
    """The Python on `script`'s shebang line (so the reference loop runs on judge's own
    interpreter and jsonschema), else this one."""
    first = script.read_bytes()[:512].split(b"\n", 1)[0].decode(errors="replace")
    found = first[2:].strip().split(" ")[0] if first.startswith("#!") else ""
    ok = Path(found).name.startswith("python") and Path(found).is_file()
    return found if ok else sys.executable


def pin() -> list[str]:
    """Prefix that pins a process to CPU 0, where `taskset` exists."""
    return ["taskset", "-c", "0"] if shutil.which("taskset") else []


def time_process(cmd: list[str], output: Path, n: int, env: dict[str, str] | None = None) -> float:
    """Run `cmd` (stdout discarded), check that it wrote `n` lines to `output`, return its
    wall time in seconds."""
    output.unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.run(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    with output.open("rb") as f:
        lines = sum(1 for _ in f)
    if lines != n:
        sys.exit(f"{' '.join(cmd)} wrote {lines} result lines, expected {n}")
    return elapsed


def bench_processes(
    judge: Path, cases: Path, tmp: Path, n: int, repeats: int, compiled: bool
) -> tuple[Measurement, Measurement, Measurement, Measurement | None]:
    """Best-of-`repeats` wall time of judge (`--jobs 1` pinned, `--jobs 2` unpinned) and of the
    reference loop (pinned), runs interleaved; with a compiled core, also judge `--jobs 1`
    reading the core's Python source (`JUDGE_CORE=source`)."""
    reference = tmp / "reference_loop.py"
    reference.write_text(REFERENCE_LOOP, encoding="utf-8")
    judge_cmd = [
        str(judge),
        "check",
        str(cases),
        "-o",
        str(tmp / "judge.jsonl"),
        "--format",
        "json",
        "--no-progress",
    ]
    one = [*pin(), *judge_cmd, "--jobs", "1"]
    two = [*judge_cmd, "--jobs", "2"]
    ref_cmd = [*pin(), interpreter_of(judge), str(reference), str(cases), str(tmp / "ref.jsonl")]
    source_env = {**os.environ, "JUDGE_CORE": "source"}
    times: dict[str, list[float]] = {"one": [], "two": [], "ref": [], "src": []}
    for _ in range(repeats):
        times["one"].append(time_process(one, tmp / "judge.jsonl", n))
        times["ref"].append(time_process(ref_cmd, tmp / "ref.jsonl", n))
        times["two"].append(time_process(two, tmp / "judge.jsonl", n))
        if compiled:
            times["src"].append(time_process(one, tmp / "judge.jsonl", n, source_env))
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    source = (
        Measurement(
            "judge check --jobs 1, source core",
            n,
            min(times["src"]),
            "JUDGE_CORE=source: the core not compiled",
        )
        if compiled
        else None
    )
    return (
        Measurement("judge check --jobs 1", n, min(times["one"]), "full semantics, one core"),
        Measurement(
            "reference loop (whole process)", n, min(times["ref"]), "new Draft7Validator per call"
        ),
        Measurement(
            "judge check --jobs 2",
            n,
            min(times["two"]),
            f"two processes ({cores} cores here)",
        ),
        source,
    )


def stage_seconds(cases: Path) -> dict[str, float]:
    """Where judge's time goes, in this process, on the path `judge check` takes for a line in
    the common form: parsing the line into structs, building the lean case from them (the
    tool sets, the checks `Case` would make), validating the arguments (the structural step),
    comparing with the expected calls (the rest of the check), writing the result line and
    counting it. A line in another form is read as a `Case` (timed as build, its check as
    compare)."""
    from judge.cases import _lean, _lean_form
    from judge.cases._json import dumps, loads
    from judge.cases._loading import parse_case
    from judge.checks import _check, _plain
    from judge.checks._structure import SchemaCache
    from judge.checks._summary import Tally

    spent = dict.fromkeys(("parse", "build", "validate", "compare", "write"), 0.0)
    # The validation step is timed on its own, beside the check that repeats it (a compiled
    # core calls it directly, so it cannot be timed from inside), and taken out of compare.
    schemas, tally, spare = SchemaCache(), Tally(), SchemaCache()
    clock = time.perf_counter
    with cases.open("rb") as lines, open(os.devnull, "wb") as sink:
        for number, line in enumerate(lines, start=1):
            t0 = clock()
            _lean_form.decoder.decode(line)
            t1 = clock()
            lean = _lean.read_lean(line)  # decodes again: its own share is the rest
            t2 = clock()
            if lean is not None:
                _plain.structure(lean.tool_calls, lean.tools, spare)
                validated = clock()
                data = _plain.check_plain(lean, schemas)
            else:
                case = parse_case(loads(line), source=str(cases), line=number)
                t2 = validated = clock()
                data = _check.check_case(case, schemas=schemas).to_json_dict()
            t3 = clock()
            sink.write(dumps(data) + b"\n")
            tally.add(data)
            t4 = clock()
            spent["parse"] += t1 - t0
            spent["build"] += t2 - t1 - (t1 - t0)
            spent["validate"] += validated - t2
            spent["compare"] += t3 - validated - (validated - t2)
            spent["write"] += t4 - t3
    return spent


def plain(value: Any) -> Any:
    """Expected values without judge's matchers: the first of `$any`, as other tools take."""
    if isinstance(value, dict):
        if "$any" in value:
            return plain(value["$any"][0]) if value["$any"] else None
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def called(case: dict[str, Any]) -> list[tuple[str, Any]]:
    """(name, arguments) of the response's calls; unparseable arguments stay text."""
    out: list[tuple[str, Any]] = []
    for call in (case.get("response") or {}).get("tool_calls") or []:
        fn = call["function"]
        try:
            out.append((fn["name"], json.loads(fn["arguments"])))
        except (TypeError, ValueError):
            out.append((fn["name"], fn["arguments"]))
    return out


def deepeval_seconds(cases: list[dict[str, Any]]) -> float:
    """Time ToolCorrectnessMetric.measure over prebuilt test cases (names and input parameters,
    no available_tools, so deterministic: the stub model raises if anything asks an LLM)."""
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.models import DeepEvalBaseLLM
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    class NoLLM(DeepEvalBaseLLM):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__("no-llm")

        def load_model(self) -> None:
            return None

        def generate(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("ToolCorrectnessMetric asked an LLM")

        async def a_generate(self, *args: Any, **kwargs: Any) -> str:
            raise RuntimeError("ToolCorrectnessMetric asked an LLM")

        def get_model_name(self) -> str:
            return "no-llm"

    metric = ToolCorrectnessMetric(
        evaluation_params=[ToolCallParams.INPUT_PARAMETERS],
        model=NoLLM(),
        async_mode=False,
        should_consider_ordering=True,
    )
    tests = [
        LLMTestCase(
            input=str(case["messages"][-1].get("content") or ""),
            actual_output="",
            tools_called=[
                ToolCall(
                    name=name, input_parameters=args if isinstance(args, dict) else {"_raw": args}
                )
                for name, args in called(case)
            ],
            expected_tools=[
                ToolCall(name=c["name"], input_parameters=plain(c["arguments"]))
                for c in case.get("expected_calls") or []
            ],
        )
        for case in cases
    ]
    start = time.perf_counter()
    for test in tests:
        metric.measure(test, _show_indicator=False)  # the indicator only prints
    return time.perf_counter() - start


def agentevals_seconds(cases: list[dict[str, Any]]) -> float:
    """Time the strict trajectory match over prebuilt OpenAI-style message lists."""
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    def trajectory(case: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [*case["messages"], {"role": "assistant", "content": "", "tool_calls": calls}]

    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="strict")
    pairs = [
        (
            trajectory(case, (case.get("response") or {}).get("tool_calls") or []),
            trajectory(
                case,
                [
                    {
                        "type": "function",
                        "function": {
                            "name": c["name"],
                            "arguments": json.dumps(plain(c["arguments"])),
                        },
                    }
                    for c in case.get("expected_calls") or []
                ],
            ),
        )
        for case in cases
    ]
    start = time.perf_counter()
    for outputs, reference in pairs:
        evaluator(outputs=outputs, reference_outputs=reference)
    return time.perf_counter() - start


def worker(tool: str, path: Path, n: int) -> None:
    """Child side: print {"seconds": ...} or {"skipped": ...} as one JSON line."""
    with path.open(encoding="utf-8") as f:
        cases = [json.loads(line) for _, line in zip(range(n), f, strict=False)]
    timer = deepeval_seconds if tool == "deepeval" else agentevals_seconds
    try:
        print(json.dumps({"seconds": timer(cases), "cases": len(cases)}))
    except ImportError as exc:
        if (exc.name or "").split(".")[0] != tool:
            raise  # installed, but not the API this script knows: report it as a failure
        print(json.dumps({"skipped": NOT_INSTALLED}))


def run_third_party(python: str, tool: str, cases: Path, tmp: Path, n: int) -> Measurement:
    """Run `worker` for `tool` under `python`, in the temp dir (DeepEval writes files there)."""
    label, timed = THIRD_PARTY[tool]
    env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "LANGSMITH_TRACING": "false"}
    cmd = [
        *pin(),
        python,
        str(Path(__file__).resolve()),
        "--worker",
        tool,
        "--source",
        str(cases),
        "--cases",
        str(n),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, env=env)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return Measurement(label, n, None, f"failed: {tail}")
    found = json.loads(lines[-1])
    if "skipped" in found:
        return Measurement(label, n, None, NOT_INSTALLED)
    return Measurement(
        label,
        int(found["cases"]),
        float(found["seconds"]),
        f"in-process: {timed} (no start-up, inputs prebuilt)",
    )


def row(m: Measurement) -> str:
    secs = f"{m.seconds:.3f}" if m.seconds else "-"
    rate = f"{m.rate:,.0f}" if m.rate else "-"
    return f"  {m.name:<34}{m.cases:>8,}{secs:>10}{rate:>10}  {m.note}"


def print_table(
    runs: tuple[Measurement, Measurement, Measurement],
    others: list[Measurement],
    ratios: tuple[float, float],
    stages: dict[str, float],
    header: str,
) -> None:
    one, ref, two = runs
    print(header)
    print(f"  {'runner':<34}{'cases':>8}{'seconds':>10}{'cases/s':>10}  note")
    print("\n".join(row(m) for m in (one, ref)))
    verdict = "met" if ratios[0] >= TARGET_RATIO else "NOT met"
    print(
        f"  {'ratio judge / reference':<34}{ratios[0]:>27.2f}x  target >= {TARGET_RATIO:.1f}x "
        f"on one core: {verdict}"
    )
    print(row(two))
    print(f"  {'ratio judge --jobs 2 / reference':<34}{ratios[1]:>27.2f}x")
    for m in others:
        print(row(m))
        if m.name.endswith("source core") and m.rate and ref.rate:
            print(f"  {'ratio source core / reference':<34}{m.rate / ref.rate:>27.2f}x")
    startup = (one.seconds or 0.0) - sum(stages.values())
    print(f"\nwhere judge --jobs 1 spends its {one.seconds:.2f} s (stages timed in-process):")
    for stage, seconds in [*stages.items(), ("start-up and the rest", startup)]:
        print(f"  {stage:<24}{seconds:>8.2f} s{seconds / (one.seconds or 1.0):>7.0%}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=50_000, help="cases in the file (50000)")
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="JSONL to cycle")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each; best counts (5)")
    parser.add_argument("--judge", type=Path, default=None, help="the judge executable")
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter for DeepEval / agentevals (default: this one)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--worker", choices=["deepeval", "agentevals"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.cases < 1 or args.repeats < 1:
        parser.error("--cases and --repeats must be at least 1")
    return args


def core_of(judge: Path) -> str:
    """How `judge`'s comparison core runs, in words (compiled by mypyc at install, or not)."""
    probe = "from judge import _core; print(_core.describe())"
    proc = subprocess.run([interpreter_of(judge), "-c", probe], capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def find_judge(given: Path | None) -> Path:
    """--judge, else judge beside this interpreter, in the repo's .venv, or on PATH."""
    candidates = (
        [given]
        if given
        else [
            Path(sys.executable).parent / "judge",
            REPO / ".venv" / "bin" / "judge",
            Path(shutil.which("judge") or "judge"),
        ]
    )
    found = next((p for p in candidates if p.is_file()), None)
    return found or sys.exit(f"judge executable not found: {candidates[0]} (pass --judge)")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        worker(args.worker, args.source, args.cases)
        return
    if not args.source.is_file():
        print(f"source cases not found: {args.source} (pass --source PATH)", file=sys.stderr)
        sys.exit(2)
    judge = find_judge(args.judge)
    with tempfile.TemporaryDirectory(prefix="judge-bench-") as tmp_name:
        tmp = Path(tmp_name)
        cases = tmp / "cases.jsonl"
        source_lines = build_cases(args.source, args.cases, cases)
        core = core_of(judge)
        judge_m, ref_m, jobs_m, source_m = bench_processes(
            judge, cases, tmp, args.cases, args.repeats, core.startswith("compiled")
        )
        stages = stage_seconds(cases)
        small = min(args.cases, THIRD_PARTY_MAX_CASES)
        others = [run_third_party(args.python, tool, cases, tmp, small) for tool in THIRD_PARTY]
        if source_m is not None:
            others.insert(0, source_m)
    ratio = (judge_m.rate or 0.0) / (ref_m.rate or 1.0)
    jobs_ratio = (jobs_m.rate or 0.0) / (ref_m.rate or 1.0)
    pinned = "pinned to CPU 0" if pin() else "not pinned (no taskset)"
    if args.json:
        print(
            json.dumps(
                {
                    "cases": args.cases,
                    "source": str(args.source),
                    "source_lines": source_lines,
                    "repeats": args.repeats,
                    "pinned": bool(pin()),
                    "judge": str(judge),
                    "core": core,
                    "runs": [
                        {**asdict(m), "cases_per_s": m.rate}
                        for m in [judge_m, ref_m, jobs_m, *others]
                    ],
                    "ratio": ratio,
                    "target_ratio": TARGET_RATIO,
                    "target_met": ratio >= TARGET_RATIO,
                    "jobs_2_ratio": jobs_ratio,
                    "stages_s": stages,
                },
                indent=2,
            )
        )
        return
    print_table(
        (judge_m, ref_m, jobs_m),
        others,
        (ratio, jobs_ratio),
        stages,
        f"judge check throughput: {args.cases:,} cases cycled from {args.source.name} "
        f"({source_lines} lines), best of {args.repeats}, {pinned}; core: {core}",
    )


if __name__ == "__main__":
    main()
