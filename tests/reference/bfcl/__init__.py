"""bfcl-eval's AST checker (`bfcl_eval/`, vendored from bfcl-eval 2026.3.23, Apache-2.0) and
the agreement of `judge bfcl` + `judge check` with it."""
