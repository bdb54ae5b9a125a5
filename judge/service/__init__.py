"""The HTTP service and the published schemas.

- `_app`: `create_app`, a FastAPI app that checks and grades as the CLI does (`_openapi`:
  its documented bodies);
- `_body`: a batch of cases from a request (a JSON array or NDJSON), within limits;
- `_guard`: who the service and the review app answer (a token's holders, or else loopback and
  allowed Host names), and no write another site sends (`_origin`);
- `_schema`: the JSON Schemas of the case, result and calibration formats;
- `_review`: `create_review_app`, the review app of `judge review` (its page in `review/`).

Imports `runs` and the layers below it.
"""
