"""The `judge` command line: parse options, call the library, print.

- `_main`: the command group and `judge check` (the only command imported at start-up);
- `_common`: exit codes, option helpers, printing;
- `_paths`: the one output rule (no file written over an input or another output);
- `_matching`: the trajectory match options;
- `_judge_options`: the options that fix a judge, and the calibration gate;
- `_jobs`: `judge check --jobs N`, the worker processes;
- `_grade`, `_data`, `_run`, `_service`, `_rubric`, `_local`, `_train`, `_review`, `_init`,
  `_estimate`:
  the other commands, each imported when it runs (`_starter`: what `judge init` writes).

The top layer: may import every other.
"""

from judge.cli._main import main

__all__ = ["main"]
