"""The review app in a real browser: headless Chromium (the system's, driven by Playwright)
against a real `judge review` process: label with the keyboard, reload, see the labels kept and
kappa move, and a case's `<script>` shown as text, never run."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.chat_server import serving
from tests.review_helpers import (
    INJECTED,
    chromium,
    clean_env,
    file_labels,
    grade_sample,
    judge_args,
    keep_screenshot,
    review_process,
    scripted_judge,
    write_sample,
)


@pytest.fixture
def reviewing(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A `judge review` process on a graded sample: its URL, the sample and the judge
    options the results were graded with."""
    with serving(scripted_judge) as server:
        sample = write_sample(tmp_path / "sample.jsonl")
        results = grade_sample(server.url, tmp_path, sample)
        options = judge_args(server.url, tmp_path)
        with review_process(str(sample), "--results", str(results), *options) as running:
            yield running.url, sample, options


def test_a_reviewer_labels_with_the_keyboard_and_kappa_follows(
    reviewing: tuple[str, Path, list[str]], tmp_path: Path
) -> None:
    executable = chromium()
    from matplotlib import image
    from playwright.sync_api import sync_playwright

    url, sample, options = reviewing
    queue = [c["id"] for c in httpx.get(f"{url}/api/queue").json()["cases"]]
    judged = {
        i: httpx.get(f"{url}/api/cases/{i}").json()["judge"]["selection"]["verdict"]
        for i in queue[:3]
    }
    keys = {"correct": "1", "incorrect": "2"}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(url + "/")
            kappa = page.locator('#agreement [data-dimension="selection"] .kappa')
            kappa.wait_for()
            before = kappa.inner_text()
            assert before != "n/a"

            # label the first three cases of the queue as the judge did, with the keyboard
            for position, case_id in enumerate(queue[:3]):
                page.wait_for_function(
                    "id => document.querySelector('#case-id')?.textContent === id", arg=case_id
                )
                page.keyboard.press(keys[judged[case_id]])
                chosen = f'input[name="selection"][value="{judged[case_id]}"]:checked'
                page.wait_for_selector(chosen)
                assert file_labels(sample)[case_id]["selection"] == judged[case_id]
                if position < 2:
                    page.keyboard.press("j")
            agreement = httpx.get(f"{url}/api/agreement").json()["dimensions"]["selection"]
            after = f"{agreement['kappa']:.2f}"
            assert after != before
            page.wait_for_function(
                "k => document.querySelector(" + json.dumps(
                    '#agreement [data-dimension="selection"] .kappa') + ").textContent === k",
                arg=after,
            )  # fmt: skip

            # reload: the same case, its label kept (the queue is ordered afresh: agreeing
            # now, they have moved back); k goes to the one before it, a click to the first
            page.reload()
            page.wait_for_function(
                "id => document.querySelector('#case-id')?.textContent === id", arg=queue[2]
            )
            page.wait_for_selector(f'input[name="selection"][value="{judged[queue[2]]}"]:checked')
            now = [c["id"] for c in httpx.get(f"{url}/api/queue").json()["cases"]]
            assert now != queue and now.index(queue[2]) > 0
            page.keyboard.press("k")
            page.wait_for_function(
                "id => document.querySelector('#case-id')?.textContent === id",
                arg=now[now.index(queue[2]) - 1],
            )
            page.click(f'#queue li[data-id="{queue[0]}"]')
            page.wait_for_function(
                "id => document.querySelector('#case-id')?.textContent === id", arg=queue[0]
            )
            page.wait_for_selector(f'input[name="selection"][value="{judged[queue[0]]}"]:checked')
            assert kappa.inner_text() == after

            # the case whose text holds a script: shown as text, never run
            page.click('#queue li[data-id="x-script"]')
            page.wait_for_function(
                "() => document.querySelector('#case-id')?.textContent === 'x-script'"
            )
            assert INJECTED in page.inner_text("#case .messages")
            assert page.evaluate("window.__pwned") is None
            assert page.locator("#case script, #case img").count() == 0

            shot = tmp_path / "review.png"
            page.click(f'#queue li[data-id="{queue[0]}"]')  # a case with calls, for the picture
            page.wait_for_function(
                "id => document.querySelector('#case-id')?.textContent === id", arg=queue[0]
            )
            page.screenshot(path=str(shot))
            keep_screenshot(shot, "review.png")
            pixels = image.imread(shot)
            assert pixels.shape[0] >= 900 and pixels.shape[1] >= 1300
            # not blank: text, badges and panels put many colours on screen
            assert len({tuple(p) for p in pixels[::5, ::5].reshape(-1, pixels.shape[2])}) > 20
            assert errors == []
        finally:
            browser.close()

    # the labels the browser wrote are the ones judge calibrate measures
    record = tmp_path / "cal.json"
    subprocess.run(
        [sys.executable, "-m", "judge", "calibrate", str(sample), "-o", str(record), *options],
        capture_output=True, env=clean_env(), timeout=120,
    )  # fmt: skip
    measured = json.loads(record.read_text())["dimensions"]["selection"]["kappa"]
    assert f"{measured:.2f}" == after != before
