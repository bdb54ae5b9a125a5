"""The LLM judge: rubric questions to a judge model, for what needs context.

- `_rubric`: rubrics as data (Jinja with a TOML header), rendered in a sandbox;
- `_prompt`: the data a rubric is rendered with;
- `_questions`: what is asked about a case, and what is decided without asking;
- `_replies`: the JSON Schemas the judge's replies must fit;
- `_decide`: verdicts combined from several answers, agreement with the checks;
- `_cache`: the persistent verdict cache;
- `_resume`: keeping the finished results of an interrupted run;
- `_grade`: the pipeline (`Judge`): checks first, then the questions, with provenance.

Imports `checks`, `endpoints`, `cases` and `judge._errors`.
"""
