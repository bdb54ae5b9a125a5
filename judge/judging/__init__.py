"""The LLM judge: rubric questions to a judge model, for what needs context.

- `_rubric`: rubrics as data (Jinja with a TOML header), rendered in `_sandbox`;
- `_prompt`: the data a rubric is rendered with; `_aligned`: what an aligned spec (the user's
  labelling policy, their labelled examples) adds to a dimension's prompt;
- `_questions`: what is asked about a case (and about each of its `$judge` values), and what
  is decided without asking;
- `_replies`: the JSON Schemas the judge's replies must fit (a value's verdict: yes or no);
- `_identity`: what a judge is: its provenance, the cache keys and bodies of what it asks;
- `_asker`: asking (the chat client, the cache, samples, logprobs, replies from a batch);
- `_reading`: a reply read into verdicts with their confidence (`_confidence`: logprobs);
- `_scored`, `_probing`, `_hidden`, `_linear_probe`: one-token questions, decided by the
  rubric's weights or a probe on the embedded model's hidden state;
- `_answering`: a case's questions answered (samples, majority, the probe);
- `_assemble`: a case's outcome (calibrated confidence, abstention, escalation, agreement);
- `_decide`: verdicts combined from several answers, agreement with the checks;
- `_judged_values`: the judge's yes or no on each `$judge` value taken into the checks' result;
- `_cache`: the persistent verdict cache; `_resume`: an interrupted run's finished results;
- `_batch`, `_plan`, `_parallel`: provider batches, dry runs, bounded concurrency;
- `_grade`: the facade (`Judge`): checks first, then the questions, with provenance.

Imports `checks`, `endpoints`, `cases` and `judge._errors`.
"""
