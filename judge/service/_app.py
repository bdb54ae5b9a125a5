"""The HTTP service: `create_app` builds a FastAPI app that checks and grades cases exactly as
`judge check` and `judge grade` do, one result per case in the CLI's result format.

    POST /v1/check, /v1/grade   a JSON array of cases -> {"results": [...]}, in case order;
                                NDJSON in -> NDJSON out, each result as soon as it is ready
    POST /v1/estimate           graded results and hand labels -> prediction-powered rates
    GET  /v1/rubrics            the judge's rubrics and fingerprint
    GET  /healthz               liveness (never behind the token)

With a token (`JUDGE_SERVICE_TOKEN`), every other request needs `Authorization: Bearer <token>`;
without one, only requests addressed to a loopback name (or an allowed host) are answered.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from itertools import islice
from typing import Any

import orjson
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import Response, StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.types import Send

from judge._errors import CaseError
from judge.calibrate._estimate import Estimate
from judge.cases._case import Case
from judge.cases._json import dumps
from judge.cases._loading import Warn
from judge.cases._match import Match
from judge.cases._shared_tools import SharedTools
from judge.checks._check import iter_check
from judge.checks._env import EnvironmentFactory
from judge.checks._result import CaseResult
from judge.checks._structure import SchemaCache
from judge.endpoints._client import JudgeEndpointError
from judge.judging._grade import Judge
from judge.service._body import NDJSON, Batch, Limits, read_batch
from judge.service._estimate import add_estimate_route
from judge.service._guard import guard
from judge.service._openapi import NO_JUDGE_RESPONSE, openapi_body
from judge.service._schema import SchemaName, json_schema
from judge.service._token import TOKEN_ENV, service_token

OPEN_PATHS = frozenset(("/healthz",))
_CHUNK = 64  # NDJSON check results per write
_NO_JUDGE = "this service runs no judge"
_log = logging.getLogger("judge.service")


def create_app(
    *,
    judge: Judge | None = None,
    token: str | None = None,
    limits: Limits | None = None,
    match: Match | None = None,
    env: EnvironmentFactory | None = None,
    traces: str | None = None,
    tools: Any = None,
    hosts: Iterable[str] = (),
) -> FastAPI:
    """The service. `judge` grades `/v1/grade` (none: that endpoint answers 503); it is
    entered once when the app starts and closed when it stops. `token` (default: the
    `JUDGE_SERVICE_TOKEN` environment variable), stripped of surrounding whitespace, turns
    bearer auth on; without one, only requests addressed to a loopback name or to one of
    `hosts` are answered (421 otherwise). `match` and `env` set how `/v1/check` grades
    trajectories, as `judge check --match/--env` (a judge has its own). `traces` (a `judge
    import` format: `otel`, `langsmith`, `inspect`, `openai`) makes request bodies trace data,
    converted to cases as `judge import` converts them. `tools` (in any form a case's `tools`
    takes, or `SharedTools`) are offered to every case of a request that has none of its own,
    as `judge check --tools`."""
    token = service_token(token)
    shared = None if tools is None else SharedTools.of(tools)
    service = _Service(judge, limits or Limits(), match, env, traces, shared)
    app = FastAPI(
        title="judge",
        version=version("tool-call-judge"),
        summary="Grade the tool calls of LLM agents.",
        lifespan=_lifespan(judge),
    )
    guard(app, token, hosts=hosts, open_paths=OPEN_PATHS)  # no page elsewhere checks or grades
    _add_service_routes(app, judge)
    _add_grading_routes(app, service)
    add_estimate_route(app, service.limits)
    _publish_schemas(app, guarded=bool(token))
    return app


@dataclass(frozen=True)
class _Service:
    """What the grading routes share: the judge, the body limits, how `/v1/check` grades
    trajectories, and the trace format bodies are in."""

    judge: Judge | None
    limits: Limits
    match: Match | None
    env: EnvironmentFactory | None
    traces: str | None
    tools: SharedTools | None = None
    """Offered to every case that has none of its own."""
    schemas: SchemaCache = field(default_factory=SchemaCache)
    """Validators built once for the app, not once per request."""

    def items(self, batch: Batch, warn: Warn | None = None) -> Iterator[Case | CaseError]:
        """The cases of a request, offered the service's tools where they have none."""
        items = batch.items(warn)
        return items if self.tools is None else self.tools.offer(items)

    def checked(self, batch: Batch, warn: Warn | None = None) -> Iterator[CaseResult]:
        return iter_check(
            self.items(batch, warn), match=self.match, env=self.env, schemas=self.schemas
        )


def _lifespan(judge: Judge | None) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan: the judge entered when it starts, closed when it stops."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if judge is None:
            yield
            return
        async with judge:
            yield

    return lifespan


def _add_service_routes(app: FastAPI, judge: Judge | None) -> None:
    """`/healthz` and `/v1/rubrics`."""

    @app.get("/healthz", tags=["service"])
    async def healthz() -> dict[str, str]:
        """Liveness; open even when a token is required."""
        return {"status": "ok"}

    @app.get("/v1/rubrics", tags=["judge"], responses=NO_JUDGE_RESPONSE)
    async def rubrics() -> dict[str, Any]:
        """The rubrics `/v1/grade` uses, and the judge's fingerprint (what a calibration
        record is bound to)."""
        if judge is None:
            raise HTTPException(503, _NO_JUDGE)
        used = set(judge.provenance().rubrics)
        return {
            "rubrics": [
                {
                    "name": r.name,
                    "dimension": r.dimension,
                    "version": r.version,
                    "sha256": r.sha256,
                    "labels": list(r.labels),
                }
                for r in judge.rubrics.all
                if r.ref in used
            ],
            "judge": judge.fingerprint(),
            "trusted": judge.trusted,
        }


def _add_grading_routes(app: FastAPI, service: _Service) -> None:
    """`/v1/check` and `/v1/grade`."""
    judge, limits, traces = service.judge, service.limits, service.traces
    source_query = Query(
        "request",
        description="Names the input in `InvalidCase` messages and fallback ids "
        "(`<source>:<line>`); pass the file name to get exactly the CLI's results.",
    )

    @app.post("/v1/check", tags=["grading"], openapi_extra=openapi_body("`judge check`"))
    async def check(request: Request, source: str = source_query) -> Response:
        """Deterministic checks, as `judge check`."""
        batch = await read_batch(request, limits, source, traces)
        if batch.ndjson:
            # A sync iterator: Starlette runs it in a worker thread, off the event loop.
            return StreamingResponse(_chunks(service.checked(batch)), media_type=NDJSON)
        warned: list[str] = []
        body = await run_in_threadpool(
            lambda: _results_body(service.checked(batch, warned.append), warned, batch.source)
        )
        return Response(body, media_type="application/json", headers=_skipped(batch))

    @app.post(
        "/v1/grade",
        tags=["grading"],
        openapi_extra=openapi_body("`judge grade`", judged=True),
    )
    async def grade(request: Request, source: str = source_query) -> Response:
        """Deterministic checks and the LLM judge, as `judge grade` (same options, cache and
        calibration gate as the service was started with)."""
        if judge is None:
            raise HTTPException(503, _NO_JUDGE)
        batch = await read_batch(request, limits, source, traces)
        warned: list[str] = []
        warn = None if batch.ndjson else warned.append  # (an NDJSON reply has no place for them)
        # Reading the cases is CPU work, as are their checks: neither holds the event loop.
        items = await run_in_threadpool(lambda: list(service.items(batch, warn)))
        if batch.ndjson:
            return _GradeStream(judge.iter_grade(items))
        try:
            results = await judge.grade(items)
        except JudgeEndpointError as exc:
            raise HTTPException(502, f"the judge endpoint refused: {exc}") from None
        body = await run_in_threadpool(_results_body, results, warned, batch.source)
        return Response(body, media_type="application/json", headers=_skipped(batch))


def _skipped(batch: Batch) -> dict[str, str]:
    """`X-Judge-Skipped-Records`: how many trace records of the body could not be read (the
    first reason in `X-Judge-Skipped-First`)."""
    if not batch.skipped:
        return {}
    first = batch.skipped[0].encode("ascii", "replace").decode()[:300]
    return {"X-Judge-Skipped-Records": str(len(batch.skipped)), "X-Judge-Skipped-First": first}


class _GradeStream(StreamingResponse):
    """Judge results as NDJSON, each as soon as it is ready (completion order, as `judge
    grade` writes them). When the judge's endpoint refuses, the error is logged and the
    stream ends without its last (empty) chunk: the client sees a cut body, not one that
    looks complete."""

    def __init__(self, results: AsyncIterator[CaseResult]) -> None:
        self.cut = False
        super().__init__(self._lines(results), media_type=NDJSON)

    async def _lines(self, results: AsyncIterator[CaseResult]) -> AsyncIterator[bytes]:
        try:
            async for result in results:
                yield _line(result)
        except JudgeEndpointError as exc:
            self.cut = True
            _log.error("the judge endpoint refused; NDJSON stream cut short: %s", exc)

    async def stream_response(self, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await send({**start, "headers": self.raw_headers})
        async for chunk in self.body_iterator:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        if not self.cut:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


def _chunks(results: Iterator[CaseResult]) -> Iterator[bytes]:
    """NDJSON lines, `_CHUNK` results per write."""
    while lines := [_line(r) for r in islice(results, _CHUNK)]:
        yield b"".join(lines)


def _line(result: CaseResult) -> bytes:
    return dumps(result.to_json_dict()) + b"\n"


def _results_body(results: Iterable[CaseResult], warned: list[str], source: str) -> bytes:
    """`{"results": [...], "warnings": [...]}`: the warnings are what the cases hold that the
    format does not know, and ids an earlier case of the request had (filled as the results
    are made, so read after them)."""
    written = [r.to_json_dict() for r in results]
    first: dict[str, int] = {}
    for position, data in enumerate(written, start=1):
        seen = first.setdefault(data["id"], position)
        if seen != position:
            where, then = f"{source}:{position}", f"{source}:{seen}"
            warned.append(f"{where} case {data['id']!r}: duplicate id (first at {then})")
    return dumps({"results": written, "warnings": warned})


def _publish_schemas(app: FastAPI, *, guarded: bool) -> None:
    """Put the published case and result schemas into the OpenAPI document and, with a
    token, the bearer scheme on every operation it guards (so /docs can send it)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        document = build()
        components = document.setdefault("components", {})
        schemas = components.setdefault("schemas", {})
        published: tuple[tuple[SchemaName, str], ...] = (("case", "Case"), ("result", "CaseResult"))
        for name, title in published:
            _publish(schemas, json_schema(name), title)
        _publish(schemas, Estimate.model_json_schema(), "Estimate")
        if guarded:
            components["securitySchemes"] = {
                "HTTPBearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": f"The token the service was started with ({TOKEN_ENV}).",
                }
            }
            for path, operations in document["paths"].items():
                if path in OPEN_PATHS:
                    continue
                for operation in operations.values():
                    operation["security"] = [{"HTTPBearer": []}]
                    operation["responses"]["401"] = {
                        "description": "The bearer token is missing or wrong."
                    }
        app.openapi_schema = document
        return document

    app.openapi = openapi  # type: ignore[method-assign]


def _publish(schemas: dict[str, Any], found: dict[str, Any], title: str) -> None:
    schema = _rebase(found)
    for key, value in schema.pop("$defs", {}).items():
        schemas.setdefault(key, value)
    schema.pop("$schema", None)
    schemas[title] = schema


def _rebase(schema: dict[str, Any]) -> dict[str, Any]:
    text = orjson.dumps(schema).replace(b'"#/$defs/', b'"#/components/schemas/')
    rebased: dict[str, Any] = orjson.loads(text)
    return rebased
