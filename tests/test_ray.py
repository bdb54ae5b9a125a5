"""`judge.ray` and `--ray` on a local Ray cluster (`ray.init(num_cpus=2)`): the same results as
one process, bad rows as `InvalidCase`, a refusing endpoint failing only its cases, the
calibration gate applied once before any request."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from judge import Judge, check, load_cases
from judge.cases._parquet import iter_rows
from tests.chat_server import ChatServer, Reply, answer, serving
from tests.review_helpers import clean_env

ray = pytest.importorskip("ray")
import judge.ray  # noqa: E402

# Ray warns about its own deprecated settings, and leaves sockets to its workers.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "cases.jsonl"
DATASETS = sorted((REPO.parent / "shared" / "datasets").glob("*.jsonl"))
SHARED = DATASETS[0] if DATASETS else EXAMPLES


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)  # fmt: skip
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    try:
        yield
    finally:
        ray.shutdown()


def results(ds: Any) -> list[dict[str, Any]]:
    return [json.loads(row["result"]) for row in ds.iter_rows()]


def test_check_on_ray_equals_judge_check_on_a_shared_dataset(tmp_path: Path) -> None:
    expected = tmp_path / "expected.jsonl"
    subprocess.run([sys.executable, "-m", "judge", "check", str(SHARED), "-o", str(expected)],
                   capture_output=True, env=clean_env(), timeout=300)  # fmt: skip
    lines = ray.data.read_text(str(SHARED), drop_empty_lines=True)
    found = judge.ray.check(lines, column="text", batch_size=256)
    rows = list(found.iter_rows())
    assert [r["result"] for r in rows] == expected.read_text().splitlines()
    assert [r["id"] for r in rows] == [
        json.loads(x)["id"] for x in expected.read_text().splitlines()
    ]


def test_rows_that_are_case_objects(tmp_path: Path) -> None:
    cases = [json.loads(x) for x in EXAMPLES.read_text().splitlines()]
    found = results(judge.ray.check(ray.data.from_items(cases)))
    assert found == [r.to_json_dict() for r in check(load_cases(str(EXAMPLES)))]


def test_a_bad_row_is_an_invalid_case_result() -> None:
    rows = ray.data.from_items(
        [{"text": "{not json"}, {"text": json.dumps({"id": "x", "tools": 3})}]
    )
    found = results(judge.ray.check(rows, column="text"))
    assert [f["failures"][0]["kind"] for f in found] == ["InvalidCase", "InvalidCase"]
    assert found[1]["id"] == "x" and "tools" in found[1]["failures"][0]["message"]


def refusing(body: dict[str, Any]) -> Reply:
    """A judge endpoint that refuses (401) the requests about one case."""
    if "arrived broken" in json.dumps(body["messages"]):
        return Reply(status=401, body={"error": {"message": "bad key"}})
    return answer(body)


def test_grade_on_ray_equals_one_process_and_a_refusal_fails_only_its_cases() -> None:
    with serving() as server:
        options: dict[str, Any] = {"base_url": server.url, "model": "m", "cache": False}
        lines = ray.data.read_text(str(EXAMPLES))
        found = results(
            judge.ray.grade(lines, column="text", judge=options, actors=2, batch_size=3)
        )

        async def alone() -> list[dict[str, Any]]:
            async with Judge(**options) as one:
                return [r.to_json_dict() for r in await one.grade(load_cases(str(EXAMPLES)))]

        import asyncio

        assert found == asyncio.run(alone())
        assert server.max_in_flight <= 2 * 8

    with serving(refusing) as server:
        options = {"base_url": server.url, "model": "m", "cache": False}
        found = results(judge.ray.grade(ray.data.read_text(str(EXAMPLES)), column="text",
                                        judge=options, actors=2, batch_size=1))  # fmt: skip
    statuses = {r["id"]: r["judge"]["status"] for r in found}
    refused = [r for r in found if r["judge"]["status"] == "judge_error"]
    assert refused and len(refused) < len(found)  # the others were judged: the job went on
    assert all("rejected the API key" in r["judge"]["error"] for r in refused)
    assert "ok" in statuses.values()


def test_the_calibration_gate_is_applied_once_before_any_request(tmp_path: Path) -> None:
    record = tmp_path / "cal.json"
    record.write_text(json.dumps({
        "created": "2026-12-01T00:00:00+00:00", "sample": "s", "results": "r",
        "disagreements": "d", "fingerprint": {"model": "other"}, "fingerprint_sha256": "0",
        "threshold": 0.6, "passed": True, "cases": 10, "judge_errors": 0, "dimensions": {},
    }))  # fmt: skip
    from judge.calibrate._record import GateRefusal

    with serving() as server:
        options: dict[str, Any] = {"base_url": server.url, "model": "m", "cache": False}
        with pytest.raises(GateRefusal, match="measured for another judge"):
            judge.ray.grade(ray.data.read_text(str(EXAMPLES)), column="text", judge=options,
                            calibration=str(record))  # fmt: skip
        lines = ray.data.read_text(str(EXAMPLES))
        forced = results(judge.ray.grade(lines, column="text", judge=options,
                                         calibration=str(record), force=True))  # fmt: skip
        assert {r["judge"]["trusted"] for r in forced if r["judge"]["status"] == "ok"} == {False}


def test_judge_check_and_grade_with_ray_write_json_lines_and_parquet(
    server: ChatServer, tmp_path: Path
) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "judge", *args], capture_output=True,
                              text=True, env=clean_env(), timeout=300)  # fmt: skip

    plain = run("check", str(EXAMPLES), "-o", str(tmp_path / "plain.jsonl"))
    on_ray = run("check", str(EXAMPLES), "--ray", "-o", str(tmp_path / "ray.parquet"))
    assert on_ray.returncode == plain.returncode, on_ray.stderr
    expected = [json.loads(x) for x in (tmp_path / "plain.jsonl").read_text().splitlines()]
    assert list(iter_rows(tmp_path / "ray.parquet")) == [
        {k: v for k, v in r.items() if v is not None} for r in expected
    ]
    options = ["--base-url", server.url, "--model", "m", "--no-cache"]
    graded = run("grade", str(EXAMPLES), "--ray", "-o", str(tmp_path / "graded.jsonl"), *options)
    assert graded.returncode in (0, 1), graded.stderr
    as_parquet = run("grade", str(EXAMPLES), "--ray", "-o", str(tmp_path / "g.parquet"), *options)
    assert as_parquet.returncode == graded.returncode, as_parquet.stderr
    assert "Traceback" not in as_parquet.stderr and "judged ok" in as_parquet.stdout
    assert len(list(iter_rows(tmp_path / "g.parquet"))) == len(expected)
    rows = [json.loads(x) for x in (tmp_path / "graded.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [r["id"] for r in expected]  # input order
    assert {r["judge"]["status"] for r in rows} <= {"ok", "skipped"}


def test_judge_check_with_ray_reads_parquet_with_rays_reader(tmp_path: Path) -> None:
    from judge.cases._parquet import jsonl_to_parquet

    cases = tmp_path / "cases.parquet"
    jsonl_to_parquet(EXAMPLES, cases)
    found = results(judge.ray.check(ray.data.read_parquet(str(cases))))
    assert found == [r.to_json_dict() for r in check(load_cases(str(EXAMPLES)))]


def test_rays_parquet_reader_keeps_what_this_packages_parquet_says(tmp_path: Path) -> None:
    from judge.cases._parquet import jsonl_to_parquet

    rows = [json.loads(x) for x in EXAMPLES.read_text().splitlines()][:2]
    rows[0] |= {"id": "a", "expected_answer": "Paris"}
    rows[1] |= {"id": 2, "expected_answer": ["Paris", "sunny"]}  # mixed shapes: JSON text
    source = tmp_path / "mixed.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    jsonl_to_parquet(source, tmp_path / "mixed.parquet")
    path = str(tmp_path / "mixed.parquet")  # (Ray's reader drops the file's metadata)
    found = results(
        judge.ray.check(
            ray.data.read_parquet(path), json_columns=judge.ray.parquet_json_columns(path)
        )
    )
    assert [r["id"] for r in found] == ["a", "2"]
    assert found == [r.to_json_dict() for r in check(load_cases(str(source)))]


def test_grade_on_ray_with_a_calibration_gives_what_judge_grade_gives(tmp_path: Path) -> None:
    from tests.review_helpers import judge_args, sample_rows, scripted_judge

    rows = sample_rows()
    for row in rows[10:12]:  # ten labelled pairs on each dimension: a kappa to gate on
        row["labels"] = {"selection": "correct", "arguments": "correct"}
    sample = tmp_path / "sample.jsonl"
    sample.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with serving(scripted_judge) as server:
        options = judge_args(server.url, tmp_path)
        record = tmp_path / "cal.json"
        run = subprocess.run(
            [sys.executable, "-m", "judge", "calibrate", str(sample), "-o", str(record),
             "--min-kappa", "-1", *options],
            capture_output=True, text=True, env=clean_env(), timeout=120,
        )  # fmt: skip
        assert record.exists(), run.stderr
        alone = tmp_path / "alone.jsonl"
        subprocess.run(
            [sys.executable, "-m", "judge", "grade", str(sample), "-o", str(alone),
             "--calibration", str(record), *options],
            capture_output=True, env=clean_env(), timeout=120,
        )  # fmt: skip
        graded = results(judge.ray.grade(
            ray.data.read_text(str(sample)), column="text", calibration=str(record),
            judge={"base_url": server.url, "model": "m", "cache_dir": str(tmp_path / "cache")},
        ))  # fmt: skip
    expected = {r["id"]: r["judge"] for r in map(json.loads, alone.read_text().splitlines())}
    assert {r["id"]: r["judge"] for r in graded} == expected
    assert {j["trusted"] for j in expected.values()} == {True}


def test_read_text_without_column_grades_the_case_json_of_each_line() -> None:
    # Regression: the only column, `text`, was ignored: every line an empty case graded null.
    found = results(judge.ray.check(ray.data.read_text(str(EXAMPLES))))
    assert found == [r.to_json_dict() for r in check(load_cases(str(EXAMPLES)))]


def test_an_only_column_of_text_that_is_no_case_is_refused_with_the_reason(
    tmp_path: Path,
) -> None:
    lines = tmp_path / "lines.jsonl"
    case = {"id": "ok", "messages": [{"role": "user", "content": "hi"}]}
    lines.write_text("\n".join([json.dumps(case), "{not json", "[1, 2]", '"a case"']) + "\n")
    found = results(judge.ray.check(ray.data.read_text(str(lines))))
    assert found[0]["id"] == "ok" and not found[0]["failures"]
    refused = [f["failures"][0] for f in found[1:]]
    assert [r["kind"] for r in refused] == ["InvalidCase"] * 3
    assert "column 'text' holds text that is not JSON" in refused[0]["message"]
    assert "column 'text' holds a JSON array, not a case object" in refused[1]["message"]
    assert "column 'text' holds a JSON string, not a case object" in refused[2]["message"]


@pytest.mark.parametrize(
    "as_text", [pytest.param(True, id="json-text"), pytest.param(False, id="objects")]
)
def test_fallback_ids_never_repeat_across_blocks(as_text: bool) -> None:
    # Regression: ids were the row's position in its batch, `<ray>:1`, `<ray>:2` per block.
    cases = [{"messages": [{"role": "user", "content": f"q{i}"}]} for i in range(6)]
    ds = ray.data.from_items([json.dumps(c) for c in cases] if as_text else cases,
                             override_num_blocks=3)  # fmt: skip
    ids = [r["id"] for r in results(judge.ray.check(ds))]
    assert len(set(ids)) == len(cases) and all(i.startswith("<ray> task ") for i in ids)
    assert [r["id"] for r in results(judge.ray.check(ds, batch_size=1))] == ids  # stable


def test_two_rows_with_one_id_are_reported(tmp_path: Path, capsys: Any) -> None:
    from judge.checks._summary import Summary
    from judge.cli._ray import write_results

    rows = [json.dumps({"id": name, "messages": []}) for name in ("x", "y", "x", "x")]
    ds = judge.ray.check(ray.data.from_items(rows, override_num_blocks=2))
    assert judge.ray.repeated_ids(ds) == {"x": 3}
    write_results([ds], str(tmp_path / "out.jsonl"), Summary(), "check")
    assert (
        "judge check: 1 id is held by more than one case: 'x' (3 rows)" in capsys.readouterr().err
    )
