"""Model endpoints: any OpenAI-compatible server, or the model embedded in the package.

- `_endpoint`: which endpoint answers (URL, model, key), from flags or the environment;
- `_retry`: the one retry policy, and the classifier that decides what is retried;
- `_client`: the judge's client (structured output, one request through that policy), over
  `_http` (a JSON POST without the SDK's objects) and `_reply` (a completion's JSON read);
- `_candidates`: the candidates' client (the model list, a chat request as returned);
- `_batch`, `_batch_client`: provider batches (their files, state and requests);
- `_local`: the embedded default model, served by llama.cpp inside the process.

Imports `cases` and `judge._errors` only. Its modules load the OpenAI SDK: nothing on the path
of `judge check` imports them.
"""
