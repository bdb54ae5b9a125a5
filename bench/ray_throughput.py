"""Cases per second of `judge.ray.check` on a local Ray cluster with 1 and 2 worker CPUs, beside
`judge check --jobs 1` and `--jobs 2` on the same file, and what starting the cluster costs.

    .venv/bin/python bench/ray_throughput.py                 # 50,000 cases
    .venv/bin/python bench/ray_throughput.py --cases 5000 --json

The case file is built as `check_throughput.py` builds it. Each Ray figure is a fresh
`ray.init(num_cpus=N)`: start-up timed apart, then reading the file as text, checking it in
`map_batches` tasks and bringing every result row back to the driver (as `judge check --ray`
writes them); the `judge check` figures are whole processes writing a result file.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from check_throughput import DEFAULT_SOURCE, build_cases, find_judge  # noqa: E402


def ray_seconds(cases: Path, cpus: int) -> tuple[float, float, int]:
    """(start-up s, check s, results) on a fresh local cluster of `cpus` CPUs."""
    code = f"""
import json, logging, time, ray, ray.data
import judge.ray
start = time.perf_counter()
ray.init(num_cpus={cpus}, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
ray.data.DataContext.get_current().enable_progress_bars = False
ray.data.DataContext.get_current().execution_options.preserve_order = True
up = time.perf_counter() - start
start = time.perf_counter()
ds = ray.data.read_text({str(cases)!r}, drop_empty_lines=True, override_num_blocks={cpus * 4})
checked = judge.ray.check(ds, column="text")
n = sum(b.num_rows for b in checked.iter_batches(batch_size=None, batch_format="pyarrow"))
print(json.dumps({{"up": up, "seconds": time.perf_counter() - start, "n": n}}))
ray.shutdown()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return found["up"], found["seconds"], found["n"]


def check_seconds(judge: Path, cases: Path, out: Path, jobs: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [str(judge), "check", str(cases), "-o", str(out), "--jobs", str(jobs), "--no-progress"],
        capture_output=True,
    )
    if done.returncode not in (0, 1):  # 1: some case failed its checks, as expected here
        raise RuntimeError(f"judge check exited {done.returncode}: {done.stderr.decode()}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=50_000)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not args.source.exists():
        print(f"no source file at {args.source}", file=sys.stderr)
        sys.exit(2)
    logging.disable(logging.WARNING)
    judge = find_judge(None)
    with tempfile.TemporaryDirectory(prefix="judge-ray-") as folder:
        tmp = Path(folder)
        cases = tmp / "cases.jsonl"
        build_cases(args.source, args.cases, cases)
        figures = {}
        for jobs in (1, 2):
            seconds = check_seconds(judge, cases, tmp / "out.jsonl", jobs)
            figures[f"judge check --jobs {jobs}"] = {"seconds": seconds, "up": 0.0}
        for cpus in (1, 2):
            up, seconds, n = ray_seconds(cases, cpus)
            assert n == args.cases, f"{n} results for {args.cases} cases"
            figures[f"judge.ray.check, {cpus} worker CPU{'s' if cpus > 1 else ''}"] = {
                "seconds": seconds,
                "up": up,
            }
    if args.json:
        print(json.dumps({"cases": args.cases, "runs": figures}, indent=2))
        return
    print(f"{args.cases:,} cases from {args.source.name}")
    print(f"  {'runner':<36}{'seconds':>9}{'cases/s':>10}{'start-up s':>12}")
    for name, found in figures.items():
        rate = args.cases / found["seconds"]
        print(f"  {name:<36}{found['seconds']:>9.2f}{rate:>10,.0f}{found['up']:>12.2f}")


if __name__ == "__main__":
    main()
