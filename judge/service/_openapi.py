"""The OpenAPI documentation of the service's grading routes: their bodies and responses."""

from __future__ import annotations

from typing import Any

from judge.service._body import NDJSON

NO_JUDGE_RESPONSE: dict[int | str, dict[str, Any]] = {
    503: {"description": "The service was started without a judge."}
}


def openapi_body(what: str, *, judged: bool = False) -> dict[str, Any]:
    """The OpenAPI request body and responses of a grading route (`what` grades as it)."""
    array = {"type": "array", "items": {"$ref": "#/components/schemas/Case"}}
    results = {
        "type": "object",
        "required": ["results", "warnings"],
        "properties": {
            "results": {"type": "array", "items": {"$ref": "#/components/schemas/CaseResult"}},
            "warnings": {
                "type": "array",
                "items": {"type": "string"},
                "description": "What the cases hold that the case format does not know "
                "(`<source>:<line> case 'id': unknown field /mesages (did you mean "
                "/messages?)`), and duplicate ids. An NDJSON reply has none.",
            },
        },
    }
    responses: dict[str, Any] = {
        "200": {
            "description": f"One result per case, exactly as {what} writes them: "
            '`{"results": [...]}` for an array, NDJSON for NDJSON.',
            "content": {
                "application/json": {"schema": results},
                NDJSON: {"schema": {"$ref": "#/components/schemas/CaseResult"}},
            },
        },
        "400": {"description": "The body is not valid JSON."},
        "413": {"description": "The body is over the size limit."},
        "422": {"description": "The body is not an array of cases, or holds too many."},
    }
    if judged:
        responses["502"] = {
            "description": "The judge's endpoint refused (bad key, no credit). An NDJSON "
            "reply has begun already: it is cut short after the results sent."
        }
        responses["503"] = NO_JUDGE_RESPONSE[503]
    return {
        "requestBody": {
            "required": True,
            "description": "The cases: a JSON array, or NDJSON (one case per line).",
            "content": {
                "application/json": {"schema": array},
                NDJSON: {"schema": {"$ref": "#/components/schemas/Case"}},
            },
        },
        "responses": responses,
    }
