"""The HTTP service and the published schemas.

- `_app`: `create_app`, a FastAPI app that checks and grades as the CLI does;
- `_body`: a batch of cases from a request (a JSON array or NDJSON), within limits;
- `_schema`: the JSON Schemas of the case, result and calibration formats.

Imports `runs` and the layers below it.
"""
