"""Deterministic checks: what code can prove about a case, and the result record.

- `_structure`: one call's arguments (strict JSON, a known name, the tool's Draft 7 schema);
- `_values`: expected values, with flexible matching rules (`_rules`: `ArgumentRule`);
- `_arguments`: a call's arguments against its reference call, by argument mode;
- `_trajectory`: the whole path of calls against the reference, by match mode;
- `_env`: final state, by replaying the calls into an environment;
- `_grounding`: argument values that appear nowhere in the conversation;
- `_kinds`: the failure taxonomy (`FailureKind`);
- `_no_reference`: what decides a case without a reference (broken calls, `ask` / `no_call`);
- `_plain`: the comparison core, free of the models: structure, pairing, verdicts, and
  `check_plain`, `judge check`'s path for lean cases;
- `_check`: all of the above for one case, or a stream of cases (`_chunk`: lines of a file,
  as `judge check` and its workers read them);
- `_result`, `_outcome`: the result record (`CaseResult`) and the judge's part of it;
- `_summary`: counts per outcome and failure kind.

Imports `cases` and `judge._errors` only.
"""

# A compiled core module that imports another loads it natively, its `__file__` made up from
# the compiled group's place; `_dates` and `_numbers` are imported by compiled `_origins`
# first, and `judge.cases._lean` by compiled `_plain`, so they are imported here first, from
# their own files (as the other core modules are by their importers).
from judge.cases import _lean  # noqa: F401
from judge.checks import _dates, _numbers  # noqa: F401
