"""`POST /v1/estimate`: the judge-only, labels-only and prediction-powered rates of graded
results (`judge.calibrate._estimate`), as `judge estimate --format json` writes them.

The body: `{"results": [...], "labels": [...], "confidence": 0.95, "assume_random": false}`,
the results as `judge grade` writes them, the labels cases with `labels` (keyed by id)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from judge._errors import InputError
from judge.calibrate._estimate import estimate
from judge.cases._case import Case
from judge.checks._result import CaseResult
from judge.service._body import Limits, check_count, read_json


class EstimateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    results: list[CaseResult]
    labels: list[Case] = Field(default_factory=list)
    confidence: float = Field(0.95, gt=0.0, lt=1.0)
    assume_random: bool = False


ESTIMATE_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "Graded results (as `judge grade` writes them) and hand labels on some "
        "of them (cases with `labels`, keyed by id; each with `meta.inclusion_probability`, "
        "or `assume_random`).",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["results"],
                    "properties": {
                        "results": {
                            "type": "array",
                            "items": {"$ref": "#/components/schemas/CaseResult"},
                        },
                        "labels": {"type": "array", "items": {"$ref": "#/components/schemas/Case"}},
                        "confidence": {"type": "number", "default": 0.95},
                        "assume_random": {"type": "boolean", "default": False},
                    },
                }
            }
        },
    },
    "responses": {
        "200": {
            "description": "Per dimension and for `passed`: the judge-only, labels-only and "
            "PPI++ rates, as `judge estimate --format json` writes them.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Estimate"}}},
        },
        "400": {"description": "The body is not valid JSON."},
        "413": {"description": "The body is over the size limit."},
        "422": {
            "description": "The body is not such an object, holds too many results or labels, "
            "or the labels are refused (on cases the results lack, given twice, of a design "
            "unknown without `assume_random`)."
        },
    },
}


def add_estimate_route(app: FastAPI, limits: Limits) -> None:
    @app.post("/v1/estimate", tags=["estimates"], openapi_extra=ESTIMATE_OPENAPI)
    async def estimate_route(request: Request) -> Response:
        """Prediction-powered estimates of the rates of graded results, as `judge estimate`."""
        data = await read_json(request, limits)
        if not isinstance(data, dict):
            raise HTTPException(422, "the body must be a JSON object with `results` and `labels`")
        for key in ("results", "labels"):
            if isinstance(data.get(key), list):
                check_count(len(data[key]), limits)
        body = await run_in_threadpool(_estimated, data)
        return Response(body, media_type="application/json")


def _estimated(data: dict[str, Any]) -> bytes:
    try:
        asked = EstimateRequest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = "/".join(str(part) for part in first["loc"])
        raise HTTPException(422, f"{where}: {first['msg']}") from None
    try:
        found = estimate(asked.results, asked.labels, asked.confidence, asked.assume_random)
    except InputError as exc:
        raise HTTPException(422, str(exc).splitlines()[0]) from None
    return found.model_dump_json().encode()
