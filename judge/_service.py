"""The HTTP service: `create_app` builds a FastAPI app that checks and grades cases exactly as
`judge check` and `judge grade` do, one result per case in the CLI's result format.

    POST /v1/check, /v1/grade   a JSON array of cases -> {"results": [...]}, in case order;
                                NDJSON in -> NDJSON out, each result as soon as it is ready
    GET  /v1/rubrics            the judge's rubrics and fingerprint
    GET  /healthz               liveness (never behind the token)

With a token (`JUDGE_SERVICE_TOKEN`), every other request needs `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

import orjson
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Receive, Scope, Send

from judge._case import Case
from judge._check import check_case, invalid_case_result
from judge._client import JudgeEndpointError
from judge._env import EnvironmentFactory
from judge._errors import CaseError
from judge._grade import Judge
from judge._match import Match
from judge._result import CaseResult
from judge._schema import SchemaName, json_schema
from judge._service_body import NDJSON, Batch, Limits, read_batch
from judge._structure import SchemaCache

TOKEN_ENV = "JUDGE_SERVICE_TOKEN"
OPEN_PATHS = frozenset(("/healthz",))
_CHUNK = 64  # NDJSON check results per write
_log = logging.getLogger("judge.service")


def create_app(
    *,
    judge: Judge | None = None,
    token: str | None = None,
    limits: Limits | None = None,
    match: Match | None = None,
    env: EnvironmentFactory | None = None,
) -> FastAPI:
    """The service. `judge` grades `/v1/grade` (none: that endpoint answers 503); it is
    entered once when the app starts and closed when it stops. `token` (default: the
    `JUDGE_SERVICE_TOKEN` environment variable) turns bearer auth on. `match` and `env`
    set how `/v1/check` grades trajectories, as `judge check --match/--env` (a judge has its
    own)."""
    checker = _Checker(match, env)
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    limits = limits or Limits()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if judge is None:
            yield
            return
        async with judge:
            yield

    app = FastAPI(
        title="judge",
        version=version("tool-call-judge"),
        summary="Grade the tool calls of LLM agents.",
        lifespan=lifespan,
    )
    if token:
        app.add_middleware(BearerAuth, token=token)

    source_query = Query(
        "request",
        description="Names the input in `InvalidCase` messages and fallback ids "
        "(`<source>:<line>`); pass the file name to get exactly the CLI's results.",
    )

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, str]:
        """Liveness; open even when a token is required."""
        return {"status": "ok"}

    @app.get("/v1/rubrics", tags=["judge"])
    async def rubrics() -> dict[str, Any]:
        """The rubrics `/v1/grade` uses, and the judge's fingerprint (what a calibration
        record is bound to)."""
        if judge is None:
            raise HTTPException(503, "this service runs no judge")
        found = judge.rubrics
        return {
            "rubrics": [
                {
                    "name": r.name,
                    "dimension": r.dimension,
                    "version": r.version,
                    "sha256": r.sha256,
                    "labels": list(r.labels),
                }
                for r in found.all
            ],
            "judge": judge.fingerprint(),
            "trusted": judge.trusted,
        }

    @app.post("/v1/check", tags=["grading"], openapi_extra=_openapi_body("`judge check`"))
    async def check(request: Request, source: str = source_query) -> Response:
        """Deterministic checks, as `judge check`."""
        batch = await read_batch(request, limits, source)
        if batch.ndjson:
            return StreamingResponse(checker.stream(batch), media_type=NDJSON)
        body = await run_in_threadpool(checker.all, batch)
        return Response(body, media_type="application/json")

    @app.post("/v1/grade", tags=["grading"], openapi_extra=_openapi_body("`judge grade`"))
    async def grade(request: Request, source: str = source_query) -> Response:
        """Deterministic checks and the LLM judge, as `judge grade` (same options, cache and
        calibration gate as the service was started with)."""
        if judge is None:
            raise HTTPException(503, "this service runs no judge")
        batch = await read_batch(request, limits, source)
        if batch.ndjson:
            return StreamingResponse(_grade_stream(judge, batch), media_type=NDJSON)
        try:
            results = await _grade_all(judge, batch)
        except JudgeEndpointError as exc:
            raise HTTPException(502, f"the judge endpoint refused: {exc}") from None
        return Response(_results_body(results), media_type="application/json")

    _publish_schemas(app)
    return app


class BearerAuth:
    """Refuses every request but `OPEN_PATHS` without `Authorization: Bearer <token>`; the
    token is compared in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        header = dict(scope["headers"]).get(b"authorization", b"")
        scheme, _, given = header.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token):
            await self.app(scope, receive, send)
            return
        detail = "wrong bearer token" if header else "missing bearer token"
        response = JSONResponse(
            {"detail": f"{detail}: send Authorization: Bearer <{TOKEN_ENV}>"},
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await response(scope, receive, send)


class _Checker:
    """The deterministic checks of `/v1/check`, with the service's match settings."""

    def __init__(self, match: Match | None, env: EnvironmentFactory | None) -> None:
        self.match = match
        self.env = env

    def one(self, item: Case | CaseError, schemas: SchemaCache) -> bytes:
        result = (
            invalid_case_result(item)
            if isinstance(item, CaseError)
            else check_case(item, schemas=schemas, match=self.match, env=self.env)
        )
        return orjson.dumps(result.to_json_dict())

    def all(self, batch: Batch) -> bytes:
        schemas = SchemaCache()
        return b'{"results":[' + b",".join(self.one(i, schemas) for i in batch.items()) + b"]}"

    def stream(self, batch: Batch) -> Iterator[bytes]:
        # A sync iterator: Starlette runs it in a worker thread, so the event loop stays free.
        schemas = SchemaCache()
        lines: list[bytes] = []
        for item in batch.items():
            lines.append(self.one(item, schemas))
            if len(lines) == _CHUNK:
                yield b"\n".join(lines) + b"\n"
                lines = []
        if lines:
            yield b"\n".join(lines) + b"\n"


async def _grade_all(judge: Judge, batch: Batch) -> list[CaseResult]:
    """Every result, in case order; cases that did not load keep their place."""
    items = await run_in_threadpool(lambda: list(batch.items()))  # parsing is CPU work
    cases = [item for item in items if isinstance(item, Case)]
    graded = iter(await judge.grade(cases))
    return [
        invalid_case_result(item) if isinstance(item, CaseError) else next(graded) for item in items
    ]


async def _grade_stream(judge: Judge, batch: Batch) -> AsyncIterator[bytes]:
    """Each result as soon as it is ready (completion order, as `judge grade` writes them)."""
    invalid: list[CaseResult] = []

    def cases() -> Iterator[Case]:
        for item in batch.items():
            if isinstance(item, CaseError):
                invalid.append(invalid_case_result(item))
            else:
                yield item

    def flush() -> bytes:
        lines = b"".join(
            orjson.dumps(r.to_json_dict(), option=orjson.OPT_APPEND_NEWLINE) for r in invalid
        )
        invalid.clear()
        return lines

    try:
        async for result in judge.iter_grade(cases()):
            yield flush() + orjson.dumps(result.to_json_dict(), option=orjson.OPT_APPEND_NEWLINE)
    except JudgeEndpointError as exc:
        # The status line is sent already: end the stream early (the client sees the cut).
        _log.error("the judge endpoint refused; stream cut short: %s", exc)
        raise
    if invalid:
        yield flush()


def _results_body(results: list[CaseResult]) -> bytes:
    return orjson.dumps({"results": [r.to_json_dict() for r in results]})


def _openapi_body(what: str) -> dict[str, Any]:
    array = {"type": "array", "items": {"$ref": "#/components/schemas/Case"}}
    results = {
        "type": "object",
        "required": ["results"],
        "properties": {
            "results": {"type": "array", "items": {"$ref": "#/components/schemas/CaseResult"}}
        },
    }
    return {
        "requestBody": {
            "required": True,
            "description": "The cases: a JSON array, or NDJSON (one case per line).",
            "content": {
                "application/json": {"schema": array},
                NDJSON: {"schema": {"$ref": "#/components/schemas/Case"}},
            },
        },
        "responses": {
            "200": {
                "description": f"One result per case, exactly as {what} writes them: "
                '`{"results": [...]}` for an array, NDJSON for NDJSON.',
                "content": {
                    "application/json": {"schema": results},
                    NDJSON: {"schema": {"$ref": "#/components/schemas/CaseResult"}},
                },
            },
            "400": {"description": "The body is not valid JSON."},
            "401": {"description": "A token is required and was missing or wrong."},
            "413": {"description": "The body is over the size limit."},
            "422": {"description": "The body is not an array of cases, or holds too many."},
        },
    }


def _publish_schemas(app: FastAPI) -> None:
    """Put the published case and result schemas into the OpenAPI document."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        components = document.setdefault("components", {}).setdefault("schemas", {})
        published: tuple[tuple[SchemaName, str], ...] = (("case", "Case"), ("result", "CaseResult"))
        for name, title in published:
            schema = _rebase(json_schema(name))
            for key, value in schema.pop("$defs", {}).items():
                components.setdefault(key, value)
            schema.pop("$schema", None)
            components[title] = schema
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _rebase(schema: dict[str, Any]) -> dict[str, Any]:
    text = orjson.dumps(schema).replace(b'"#/$defs/', b'"#/components/schemas/')
    rebased: dict[str, Any] = orjson.loads(text)
    return rebased
