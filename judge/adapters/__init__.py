"""Adapters that run `judge`'s deterministic checks inside other harnesses.

Each lives in its own module and imports its harness only there, so `import judge` never needs
any of them:

- `judge.adapters.pytest`: `assert_tool_calls(...)`, an assertion with a readable message;
- `judge.adapters.promptfoo`: `get_assert(output, context)`, a promptfoo Python assertion;
- `judge.adapters.openevals`: `create_tool_call_evaluator(...)`, an openevals / LangSmith
  evaluator `(inputs, outputs, reference_outputs) -> {key, score, comment}`;
- `judge.adapters.inspect`: `tool_call_scorer()`, an Inspect AI scorer.
"""
