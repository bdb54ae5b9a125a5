"""The HTML calibration report: its content, and that it renders (headless Chromium)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

from judge.calibrate._record import CalibrationRecord, dimension_stats, fingerprint_sha256
from judge.calibrate._report import render_report
from tests.review_helpers import chromium


def record() -> CalibrationRecord:
    pairs = (
        [("correct", "correct")] * 20
        + [("correct", "incorrect")] * 5
        + [("incorrect", "correct")] * 10
        + [("incorrect", "incorrect")] * 15
    )
    stats = dimension_stats(pairs, {"judge_error": 2}, threshold=0.6)
    fingerprint = {"model": "m", "endpoint": "embedded"}
    return CalibrationRecord(
        created="2026-11-30T00:00:00+00:00",
        sample="sample.jsonl",
        results="r.jsonl",
        disagreements="d.jsonl",
        fingerprint=fingerprint,
        fingerprint_sha256=fingerprint_sha256(fingerprint),
        threshold=0.6,
        passed=False,
        cases=52,
        judge_errors=2,
        dimensions={"selection": stats, "arguments": stats},
        deterministic={"selection": stats},
    )


ROWS = [
    {
        "id": "c1 <script>",
        "dimension": "selection",
        "label": "correct",
        "verdict": "incorrect",
        "reasoning": "the <b>wrong</b> tool",
    }
]


def test_report_holds_the_numbers_matrices_and_escaped_disagreements() -> None:
    page = render_report(record(), ROWS)
    assert "NOT PASSED" in page
    assert page.count("data:image/png;base64,") == 3
    assert "0.400" in page  # kappa
    assert "c1 &lt;script&gt;" in page and "<script>" not in page
    assert "judge_error: 2" in page


def test_report_renders_in_headless_chromium() -> None:
    browser = chromium()
    from matplotlib import image

    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "report.html"
        shot = Path(folder) / "report.png"
        page.write_text(render_report(record(), ROWS), encoding="utf-8")
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={folder}/profile",
                "--window-size=1200,1000",
                f"--screenshot={shot}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        pixels = image.imread(shot)
        assert pixels.shape[0] >= 900 and pixels.shape[1] >= 1100
        # Not a blank page: the drawn matrices put many distinct colours on screen.
        assert len({tuple(p) for p in pixels[::7, ::7].reshape(-1, pixels.shape[2])}) > 20
