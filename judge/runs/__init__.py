"""Multi-model runs: the same cases, with the same settings, sent to several candidate models.

- `_preflight`: what each candidate supports, and the one set of settings they all get;
- `_runner`: every model, case and run, each response stored and graded: `_request` (one
  request), `_agent_loop` (an agent run, over `_agent`), `_batches` (provider batches),
  `_grading` (grading a record, and the pool jobs run in);
- `_records`: the runs file (append-only, resumable); `_resume`: which stored records are
  still those of their cases (content hashes), for `run` and `regrade`;
- `_repeats`: pass^k and pass@k;
- `_compare`: pass rates with intervals (`_intervals`), breakdowns, paired differences between
  models, and the regression gate;
- `_failing`: structural error rates per candidate, and the runs it failed;
- `_report`: the comparison as terminal tables and an HTML page (`_report_cases`: what
  failed).

Imports `calibrate` and the layers below it.
"""
