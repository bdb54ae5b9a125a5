"""Deterministic checks: what code can prove about a case, and the result record.

- `_structure`: one call's arguments (strict JSON, a known name, the tool's Draft 7 schema);
- `_values`: expected values, with flexible matching rules (`_rules`: `ArgumentRule`);
- `_arguments`: a call's arguments against its reference call, by argument mode;
- `_trajectory`: the whole path of calls against the reference, by match mode (`_path_faults`:
  what its `MissingCall` and `WrongOrder` failures say; `_match_targets`: settings that name
  nothing in a case's tools, an `InvalidCase`);
- `_env`: final state, by replaying the calls into an environment (`_mcp`: an MCP server as
  one; `_mcp_stdio`: a stdio server's connection; `_mcp_leader`: the watchdog that ends its
  process group);
- `_grounding`: argument values that appear nowhere in the conversation;
- `_origins`, `_injection`: where each argument value came from, and prompt-injection evidence
  (`_places`: the places a value is said in, indexed once; `_markers`, `_passages`: what reads
  as instructions; `_budget`: the time a case may take; `_evidence`: both, for a result);
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
