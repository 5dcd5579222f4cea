"""The judge layer shared by all protocols.

- `base`: the `Judgment` record and the `JudgeTask` spec (typed input, typed output, strict parser, offline rule).
- `factory`: `make_judge(task, cfg)`, which returns an async callable for the configured backend.
- `tasks/`: one module per judge task (support, relevance, organization, nugget_assign, ...).
- `llm`: the litellm backend; `client` (retries, concurrency, cost) and `cache` (response cache) under it.
- `offline`: the deterministic lexical backend (the default; judge card in docs/offline-judge.md).
- `runner`: runs a judge over many items with a progress bar; writes records and usage summaries.
"""
