"""Cases: what is graded, read from JSON Lines, DataFrames, plain objects or BFCL files.

- `_form`: the format's vocabulary (labels, behaviours, matchers, match modes), model-free;
- `_case`: the case model (messages, tools, response, expected calls, labels, match settings);
- `_lean`: the common line form read straight into msgspec structs (`_lean_form`), for the
  check path;
- `_calls`: every accepted response shape normalised to one `Response` of `ToolCall`s;
- `_text_calls`: calls written as JSON text in a reply's content;
- `_match`: the match settings a case or a run may carry (trajectory and argument modes);
- `_hash`: a case's content hash, what resuming an output compares;
- `_shared_tools`: tools given once for every case without its own (`--tools FILE`);
- `_loading`: readers that never stop at a bad line (`CaseError` in its place);
- `_file_form`: what a case file's bytes hold, before any case is read: JSON Lines, or one
  JSON document read as its cases; refused when not UTF-8;
- `_bfcl`: the Berkeley Function Calling Leaderboard's own files as cases;
- `_json`: strict, exact JSON in (integers of any size) and out, for every reader and writer;
  JSON kinds and pointers for messages;
- `_files`: opening case files, whole-file replacement, and the per-user cache folder.

The bottom layer: imports only `judge._errors`.
"""
