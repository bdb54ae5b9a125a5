"""`judge review`: the review app, a page and the JSON API it is a client of.

    GET  /                       the page (HTML, CSS and a script shipped in the package)
    GET  /api/queue              case ids in review order, each with why it is there; the
                                 progress; filters as query parameters (group, tool, failure,
                                 state, meta.KEY)
    GET  /api/cases/{id}         the case as the judge saw it, its findings, the judge's
                                 verdicts and the labels so far (ETag: their revision)
    PUT  /api/labels/{id}        {"selection", "arguments", "answer", "note"}: written to the
                                 sample file before the reply (If-Match: the revision read)
    GET  /api/agreement          kappa, its interval and the confusion matrix per dimension
    POST /api/calibration        write the calibration record from the labels so far
    GET  /api/align              whether the align action can run (labels against the minimum),
                                 whether it runs now, and the last run's figures
    POST /api/align              `judge align`'s fitting on the labels so far, in a worker
                                 thread, one run at a time (409 while one runs): writes the
                                 aligned spec; per dimension kappa before and after, held out

With a token (`JUDGE_SERVICE_TOKEN`), `/api/*` needs `Authorization: Bearer <token>`; the page
itself holds no data and is open. Without one, only loopback host names (and allowed hosts)
are answered (a page elsewhere cannot reach the app through a DNS name that points at
127.0.0.1): the service's rule, `judge.service._guard`.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterable
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, Header, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field

from judge._errors import CaseError, InputError, JudgeError
from judge.calibrate._review import RecordRefused, Review
from judge.calibrate._review_align import AlignBusy, ReviewAlign, aligned_beside
from judge.cases._json import pointer
from judge.service._guard import guard

STATIC = Path(__file__).parent / "review"
_NO_STORE = {"Cache-Control": "no-store"}


class LabelBody(BaseModel):
    """A label write: the fields given are set (null clears one), the others left as they
    are."""

    model_config = ConfigDict(extra="forbid")

    selection: Literal["correct", "incorrect"] | None = None
    arguments: Literal["correct", "incorrect", "not_applicable"] | None = None
    answer: Literal["correct", "incorrect"] | None = None
    note: str | None = Field(default=None, max_length=10_000)


def create_review_app(
    review: Review,
    *,
    token: str | None = None,
    hosts: Iterable[str] = (),
    aligner: ReviewAlign | None = None,
) -> FastAPI:
    """The review app over `review`. `token` guards the API; without one, only requests
    addressed to a loopback name or to one of `hosts` are answered. `aligner`: the align
    action (without one, it is refused: no judge to align)."""
    app = FastAPI(
        title="judge review",
        version=version("tool-call-judge"),
        summary="Review the judge's verdicts and label cases.",
        docs_url="/api/docs",
        openapi_url="/api/openapi.json",
    )
    guard(app, token, hosts=hosts, guarded_prefix="/api/")  # no page elsewhere labels
    app.add_exception_handler(RequestValidationError, _invalid)  # type: ignore[arg-type]
    _add_page_routes(app)
    _add_case_routes(app, review)
    _add_calibration_routes(app, review)
    _add_align_routes(app, aligner or ReviewAlign(review, None, aligned_beside(review.record_path)))
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _add_page_routes(app: FastAPI) -> None:
    """The page, and liveness."""

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=_NO_STORE)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}


def _add_case_routes(app: FastAPI, review: Review) -> None:
    """The queue, a case, and its labels."""

    @app.get("/api/queue")
    def queue(request: Request) -> JSONResponse:
        """Case ids in review order (disagreement with the judge, then its doubt, then
        flips between samples, then the rest), each with why it is there."""
        try:
            found = review.queue(dict(request.query_params))
        except (InputError, CaseError, OSError) as exc:  # (a CaseError is a ValueError)
            raise _unreadable(review, exc) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return JSONResponse(found, headers=_NO_STORE)

    @app.get("/api/cases/{case_id:path}")
    def case(case_id: str) -> JSONResponse:
        """The case, its structural findings, the judge's verdicts and the labels so far."""
        try:
            found = review.case(case_id)
        except KeyError:
            raise HTTPException(404, f"no case {case_id!r} in {review.sample}") from None
        except (InputError, CaseError, OSError) as exc:
            raise _unreadable(review, exc) from None
        return JSONResponse(found, headers={**_NO_STORE, "ETag": f'"{found["revision"]}"'})

    @app.put("/api/labels/{case_id:path}")
    def label(
        case_id: str,
        body: LabelBody,
        if_match: str | None = Header(default=None),
        x_judge_reviewer: str | None = Header(default=None),
    ) -> JSONResponse:
        """Set a case's labels and note; written to the sample file before the reply. With
        `If-Match` (the revision read), a reply whose `conflict` is set says someone else
        had changed the case meanwhile: the last write wins."""
        changes: dict[str, str | None] = body.model_dump(include=body.model_fields_set)
        if not changes:
            raise HTTPException(422, "nothing to write: give selection, arguments, answer or note")
        seen = if_match.strip().strip('"') if if_match else None
        reviewer = (x_judge_reviewer or "").strip()[:100] or review.reviewer
        try:
            written = review.label(case_id, changes, reviewer=reviewer, seen=seen)
        except KeyError:
            raise HTTPException(404, f"no case {case_id!r} in {review.sample}") from None
        except (InputError, CaseError, OSError) as exc:  # (a CaseError is a ValueError)
            raise _unreadable(review, exc) from None
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None
        return JSONResponse(written, headers={**_NO_STORE, "ETag": f'"{written["revision"]}"'})


def _add_calibration_routes(app: FastAPI, review: Review) -> None:
    """Agreement so far, and the calibration record."""

    @app.get("/api/agreement")
    def agreement() -> JSONResponse:
        """Per dimension: `n`, `kappa`, `ci_low`, `ci_high`, `confusion` (and the rest of
        `judge calibrate`'s figures) for the judge's results against the labels so far."""
        try:
            return JSONResponse(review.agreement(), headers=_NO_STORE)
        except (InputError, CaseError, OSError) as exc:
            raise _unreadable(review, exc) from None

    @app.post("/api/calibration")
    def calibration() -> JSONResponse:
        """Write the calibration record from the labels so far (409 when the results cannot
        be bound to one judge)."""
        try:
            return JSONResponse(review.write_record(), headers=_NO_STORE)
        except RecordRefused as exc:
            raise HTTPException(409, str(exc)) from None
        except (InputError, CaseError, OSError) as exc:
            raise _unreadable(review, exc) from None


def _add_align_routes(app: FastAPI, aligner: ReviewAlign) -> None:
    """The align action: its state, and a run."""

    @app.get("/api/align")
    def align_state() -> JSONResponse:
        """`ready` (and `reason` when not), `labels` per dimension against `minimum`,
        `running`, the spec's `path`, and the `last` run's figures."""
        try:
            return JSONResponse(aligner.status(), headers=_NO_STORE)
        except (InputError, CaseError, OSError) as exc:
            raise _unreadable(aligner.review, exc) from None

    @app.post("/api/align")
    async def align() -> JSONResponse:
        """Fit the aligned spec on the labels so far (as `judge align`) and write it; per
        dimension the held-out kappa before and after, their intervals, every candidate's and
        the choice. 409 while a run is under way, 422 for too few labels, 502 when the
        judge cannot be asked."""
        try:
            found = await asyncio.to_thread(aligner.run)  # the server answers meanwhile
        except AlignBusy as exc:
            raise HTTPException(409, str(exc)) from None
        except OSError as exc:
            raise HTTPException(409, f"{aligner.output}: {exc.strerror or exc}") from None
        except (InputError, CaseError) as exc:
            raise HTTPException(422, str(exc)) from None
        except JudgeError as exc:
            raise HTTPException(502, f"the judge cannot be asked: {exc}") from None
        return JSONResponse(found, headers=_NO_STORE)


def _unreadable(review: Review, exc: Exception) -> HTTPException:
    """The sample (or where a record goes) cannot be read or written now: edited meanwhile
    into something that is not a sample, removed, or a folder without write access."""
    detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return HTTPException(409, f"{review.sample}: {detail}")


async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 naming each problem's place and reason, never the value sent: FastAPI's own reply
    echoes it, and a NaN or a lone surrogate cannot be written as JSON (that was a 500)."""
    errors = [_problem(error) for error in exc.errors()]
    detail = "; ".join(f"{e['in']} {e['pointer'] or '/'}: {e['message']}" for e in errors)
    return JSONResponse({"detail": detail, "errors": errors}, status_code=422)


def _problem(error: dict[str, Any]) -> dict[str, str]:
    """One validation problem as JSON can always hold it: where (`body`, `header`...), the
    JSON pointer, pydantic's message, and what was wrong with a value that cannot be shown."""
    where, *path = error.get("loc") or ("body",)
    message = str(error.get("msg", "invalid"))
    value = error.get("input")
    if isinstance(value, float) and not math.isfinite(value):
        message += f" (got {json.dumps(value)}, which JSON does not allow)"
    elif isinstance(value, str) and (lone := next((c for c in value if _lone(c)), None)):
        message += f" (it holds a lone surrogate, \\u{ord(lone):04x}, which is not text)"
    return {
        "in": _safe(str(where)),
        "pointer": _safe(pointer(path)),
        "type": _safe(str(error.get("type", ""))),
        "message": _safe(message),
    }


def _lone(char: str) -> bool:
    return "\ud800" <= char <= "\udfff"


def _safe(text: str) -> str:
    """`text` with what UTF-8 cannot hold (a lone surrogate in a key) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
