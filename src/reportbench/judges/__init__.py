"""The judge layer shared by all protocols.

- `base`: the `Judgment` record, the `JudgeTask` spec (typed input, typed output, strict parser, offline rule),
  and `make_judge(task, cfg)` which returns an async callable for the configured backend.
- `tasks/`: one module per judge task (support, relevance, organization, nugget_assign, ...).
- `llm`: the litellm backend (cache, retries, bounded concurrency, cost) — `client.py` holds the raw client.
- `offline`: the deterministic lexical backend (the default; see its judge card).
"""
