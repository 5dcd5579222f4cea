"""`make_judge(task, cfg)`: the one place that turns the `judge:` config group into a Judge.

Backends are imported lazily so that the offline path never imports litellm (3.5 s) and this module
works before every backend module exists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reportbench.judges.base import Judge, JudgeTask
from reportbench.judges.prompt_modes import PromptsConfigError, authors_record_ids, prompts_mode

BACKENDS = ("litellm", "offline")


class JudgeConfigError(ValueError):
    """The judge config names an unknown backend or is missing something required."""


def make_judge(task: JudgeTask | str, cfg: Mapping[str, Any], **kwargs: Any) -> Judge:
    """A Judge for `task` (a JudgeTask, or a task name resolved by `reportbench.judges.tasks.get_task`).

    `cfg["backend"]`: "litellm" -> LLMJudge(task, cfg, **kwargs); "offline" -> OfflineJudge(task, cfg).
    `cfg["prompts"]`: "ours" (default, prompts/*.yaml) or "authors" (the benchmark authors' exact messages
    and parser from a prompt pack, handed in by reportbench.prompt_packs.judging; docs/prompt-packs.md).
    Extra keyword arguments (prompts_dir, cache, client) go to LLMJudge only.
    """
    if isinstance(task, str):
        from reportbench.judges.tasks import get_task  # lazy: +567 ms to import (python -X importtime)

        task = get_task(task)
    backend = str(cfg.get("backend", "offline"))
    try:
        prompts_mode(cfg)
    except PromptsConfigError as exc:
        raise JudgeConfigError(str(exc)) from None
    if backend == "litellm":
        from reportbench.judges.llm import LLMJudge  # lazy: +217 ms to import (python -X importtime)

        if not cfg.get("model"):
            raise JudgeConfigError("judge.backend=litellm needs judge.model (any litellm model string)")
        return LLMJudge(task, cfg, **kwargs)
    if backend == "offline":
        from reportbench.judges.offline import OfflineJudge  # lazy: +69 ms to import (python -X importtime)

        judge = OfflineJudge(task, cfg)
        if str(cfg.get("prompts") or "ours") == "authors":
            # The offline rule ignores prompts, but its records still say which pack was configured.
            judge.prompt_id, judge.prompt_hash = authors_record_ids(task)
        return judge
    raise JudgeConfigError(f"unknown judge.backend {backend!r}; expected one of {BACKENDS}")
