"""`judge review`: label a sample in the browser against the judge's verdicts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from judge._errors import InputError, JudgeError
from judge.calibrate._labels import user_name
from judge.cli._common import (
    refuser,
    stack_options,
    strict_interval_option,
)
from judge.cli._judge_options import judge_options, make_judge
from judge.cli._paths import refuse_overlaps
from judge.cli._service import allow_host_option

if TYPE_CHECKING:
    from judge.calibrate._review import Review
    from judge.calibrate._review_align import ReviewAlign
    from judge.cases._case import Case
    from judge.judging._aligned import AlignedSpec

_refuse = refuser("judge review")


_review_options = stack_options(
    click.option(
        "--results",
        type=click.Path(exists=True, dir_okay=False),
        help="Read the judge's results on SAMPLE (`judge grade` output, or what `judge "
        "calibrate --results-out` wrote): its verdicts are shown, drive the queue's order and "
        "are measured against the labels.",
    ),
    click.option("--port", type=click.IntRange(0, 65535), default=8100, show_default=True),
    click.option(
        "--host",
        default="127.0.0.1",
        show_default=True,
        help="Address to listen on; any but loopback needs JUDGE_SERVICE_TOKEN.",
    ),
    click.option(
        "--record",
        default="calibration.json",
        show_default=True,
        type=click.Path(dir_okay=False),
        help="Where the page's button writes the calibration record.",
    ),
    click.option(
        "--aligned-out",
        type=click.Path(dir_okay=False),
        help="Where the page's align button writes the aligned spec (as `judge align -o`; "
        "default: <record stem>.aligned.json beside --record).",
    ),
    click.option(
        "--min-kappa",
        type=click.FloatRange(-1, 1),
        default=0.6,
        show_default=True,
        help="The record's threshold, as `judge calibrate --min-kappa`.",
    ),
    strict_interval_option("As `judge calibrate --strict-interval`."),
    click.option(
        "--low-confidence",
        type=click.FloatRange(0, 1),
        default=0.7,
        show_default=True,
        help="Verdicts under this confidence are queued with the uncertain ones.",
    ),
    click.option(
        "--reviewer",
        default=user_name,
        help="The name kept with each label (default: your user name; the page can set its own).",
    ),
    allow_host_option,
    click.option("--open", "open_browser", is_flag=True, help="Open the page in a browser."),
    click.option(
        "--log-level",
        type=click.Choice(["critical", "error", "warning", "info", "debug"]),
        default="warning",
        show_default=True,
    ),
    click.option(
        "--policy",
        type=click.Path(exists=True, dir_okay=False),
        help="Your labelling rule in your own words (a text file): the align button measures "
        "it, as `judge align --policy` does.",
    ),
    judge_options,
)


@click.command("review")
@click.argument("sample", type=click.Path(exists=True, dir_okay=False))
@_review_options
def review_command(
    sample: str,
    results: str | None,
    port: int,
    host: str,
    record: str,
    aligned_out: str | None,
    min_kappa: float,
    strict: bool,
    low_confidence: float,
    reviewer: str | None,
    open_browser: bool,
    log_level: str,
    allow_hosts: tuple[str, ...],
    policy: str | None,
    **options: Any,
) -> None:
    """Serve a review app for SAMPLE: one case at a time as the judge saw it, labelled with
    the keyboard, each answer written to SAMPLE at once; the judge's agreement with the
    labels as you go, and a button that writes the calibration record from them. The judge
    options name the judge that gave --results (the record is bound to it); nothing is
    asked of it but by the align button, which fits an aligned spec as `judge align` does."""
    import uvicorn

    from judge.calibrate._review_align import aligned_beside
    from judge.service._review import create_review_app
    from judge.service._token import TOKEN_ENV, service_token

    token = service_token()
    _refuse_unsafe(sample, host, token)
    aligned_out = aligned_out or str(aligned_beside(record))
    refuse_overlaps(aligned_out=aligned_out)
    rule = _read_policy(policy)
    review, cases = _read_review(
        sample,
        results,
        options,
        low_confidence=low_confidence,
        min_kappa=min_kappa,
        strict=strict,
        record=record,
        reviewer=reviewer,
    )
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    judged = sum(1 for c in cases if c.id in review.results)
    click.echo(
        f"judge review: {len(cases)} cases of {sample}"
        + (f", {judged} with verdicts from {results}" if results else "")
        + f": open {url}"
        + (f"#token=<{TOKEN_ENV}>" if token else ""),
        err=True,
    )
    app = create_review_app(
        review, token=token, hosts=allow_hosts, aligner=_aligner(review, options, aligned_out, rule)
    )
    if open_browser:
        import threading
        import webbrowser

        threading.Timer(1.0, webbrowser.open, [url]).start()
    uvicorn.run(app, host=host, port=port, log_level=log_level)


def _refuse_unsafe(sample: str, host: str, token: str | None) -> None:
    """Exit 2 for a sample the labels cannot be written into, or for an address beyond
    loopback without a token."""
    from judge.service._token import token_refusal

    if sample.lower().endswith(".parquet"):
        _refuse("labels are written into the sample line by line: give it as JSON Lines")
    if (why := token_refusal(host, token)) is not None:
        if token is None:
            why += " so that only those who hold it can read and label the sample"
        _refuse(why)


def _read_review(
    sample: str,
    results: str | None,
    options: dict[str, Any],
    *,
    low_confidence: float,
    min_kappa: float,
    strict: bool,
    record: str,
    reviewer: str | None,
) -> tuple[Review, list[Case]]:
    """The review of `sample` and its cases, read now (exit 2 when they cannot be)."""
    from judge.calibrate._review import Review

    def judge_for(answers: bool) -> Any:
        return make_judge({**options, "answers": answers})

    try:
        judge_for(False)  # bad judge options fail now, not at the button
        review = Review(
            sample,
            results,
            judge_for=judge_for,
            low_confidence=low_confidence,
            min_kappa=min_kappa,
            strict=strict,
            record=record,
            reviewer=reviewer,
        )
        _, cases = review.read()
        review.agreement()  # the statistics libraries load now, not at the first label
    except (InputError, JudgeError, ValueError) as exc:
        _refuse(str(exc))
    return review, cases


def _read_policy(policy: str | None) -> str | None:
    """The policy's text (exit 2, naming the file, when it is empty or too long)."""
    if policy is None:
        return None
    from judge.cli._align import read_policy

    try:
        return read_policy(policy)
    except InputError as exc:
        _refuse(str(exc))


def _aligner(
    review: Review, options: dict[str, Any], output: str, policy: str | None
) -> ReviewAlign:
    """The align button's action: the review's judge, base (align fits from it)."""
    from judge.calibrate._review_align import ReviewAlign

    if options.get("aligned"):
        why = "the judge is given --aligned: align fits a spec from the base judge"
        return ReviewAlign(review, None, output, unavailable=why)

    def judge_with(answers: bool, spec: AlignedSpec | None) -> Any:
        return make_judge({**options, "answers": answers, "aligned": spec})

    return ReviewAlign(review, judge_with, output, policy=policy)


COMMANDS = (review_command,)
