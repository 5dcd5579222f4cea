"""Output budgets per judge step: how many completion tokens each step's answer may take.

Why per step and not one `judge.max_tokens`: the answers differ by two orders of magnitude. The DEER authors'
own gpt-5.2 rubric answers for `csai/1` are 2,038-3,935 tokens per call, ResearcherBench claim extraction
exceeds 1,024 tokens for a fifth to two fifths of the sections of the longer systems, while a ResearchQA
pairwise verdict is a paragraph. A global 1,024 cut the long ones into invalid JSON (a NaN with a misleading
"parse" reason); a global 16k would make `reportbench estimate` price every short answer as a long one.

Each budget below names where it comes from: what the authors' code sends (`max_completion_tokens`,
`max_tokens`, a thinking budget), or, where they send no cap, the longest answers they published with
headroom for the reasoning tokens a reasoning model spends inside the same budget.

Precedence for one step (`resolve_budget`): `judge.output_budgets[<task>]` > `judge.max_tokens` (a global cap
the user set explicitly) > this table > `FALLBACK_BUDGET`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

FALLBACK_BUDGET = 4096
"""A step not in the table (a new task, a test task): generous for one structured verdict."""


@dataclass(frozen=True)
class Budget:
    tokens: int
    source: str


_DEER_RUBRIC = Budget(
    16384,
    "DEER: the authors send no cap with the rubric calls (eval/run_report_evaluation.py); their recorded "
    "gpt-5.2 answers for csai/1 are 2,038-3,935 tokens; 16,384 is their extractor's cap",
)

STEP_BUDGETS: dict[str, Budget] = {
    # -- DEER (seed 002; shared/specs/deer.md §2.2)
    "deer_request_fulfillment": _DEER_RUBRIC,
    "deer_analytical_soundness": _DEER_RUBRIC,
    "deer_structural_coherence": _DEER_RUBRIC,
    "deer_format_style": _DEER_RUBRIC,
    "deer_information_ethics": _DEER_RUBRIC,
    "deer_extract": Budget(16384, "DEER claim extractor: max_completion_tokens=16384 (specs/deer.md §2.2 step 4)"),
    "deer_verify": Budget(
        16384,
        "DEER verifier get_model_kwargs: max_tokens=4096 for plain models, max_completion_tokens=128000 for "
        "reasoning models (specs/deer.md §2.2 step 8); 16,384 leaves a reasoning model room",
    ),
    # -- ResearcherBench (seed 001)
    "researcherbench_rubric": Budget(
        8192, "ResearcherBench rubric: o3-mini, no cap sent (specs/researcherbench.md §3); reasoning tokens count"
    ),
    "researcherbench_rubric_compat": Budget(
        8192, "ResearcherBench rubric: o3-mini, no cap sent (specs/researcherbench.md §3); reasoning tokens count"
    ),
    "researcherbench_claims": Budget(
        16384,
        "ResearcherBench claim extraction: GPT-4.1, no cap sent; answers exceed 1,024 tokens for 20-43 % of the "
        "longer systems' sections (issue 22)",
    ),
    "researcherbench_verify": Budget(4096, "ResearcherBench verification: GPT-4.1, no cap sent; a short verdict"),
    # -- ResearchQA (seed 003)
    "researchqa_coverage": Budget(
        4096, "ResearchQA coverage: gpt-4.1-mini, no cap sent; one label line per rubric item (<= ~40 items)"
    ),
    "researchqa_pairwise": Budget(4096, "ResearchQA pairwise: no cap sent; a verdict and a justification"),
    # -- LiveResearchBench (seed 004)
    **{
        t: Budget(
            16384,
            "LiveResearchBench: Gemini thinking_budget=16000, OpenAI no cap (specs/liveresearchbench.md §2); "
            "per-item JSON over long checklists",
        )
        for t in (
            "lrb_presentation",
            "lrb_consistency",
            "lrb_coverage",
            "lrb_citation",
            "lrb_relevance",
            "lrb_support",
            "lrb_depth",
        )
    },
    # -- DeepScholar-bench (seed 000)
    **{
        t: Budget(4096, "DeepScholar nuggetizer LLMHandler: max_completion_tokens=4096 (specs/deepscholar.md)")
        for t in ("nugget_create", "nugget_score", "nugget_assign")
    },
    **{
        t: Budget(2048, "DeepScholar LOTUS operators: max_tokens 512 by default; our prompts add an explanation")
        for t in ("organization", "relevance", "support", "important_reference", "citation_support")
    },
}


def _explicit(cfg: Mapping[str, Any], key: str) -> Any:
    value = cfg.get(key)
    return None if value in (None, "", "null") else value


def resolve_budget(task: str, cfg: Mapping[str, Any] | None = None) -> tuple[int, str]:
    """(max completion tokens, where that number comes from) for one judge step under a judge config."""
    cfg = cfg or {}
    overrides = cfg.get("output_budgets") or {}
    if isinstance(overrides, Mapping) and _explicit(overrides, task) is not None:
        return int(overrides[task]), f"judge.output_budgets.{task}"
    if _explicit(cfg, "max_tokens") is not None:
        return int(cfg["max_tokens"]), "judge.max_tokens"
    step = STEP_BUDGETS.get(task)
    if step is not None:
        return step.tokens, step.source
    return FALLBACK_BUDGET, "reportbench.judges.budgets.FALLBACK_BUDGET"


def resolved_table(cfg: Mapping[str, Any] | None = None) -> dict[str, int]:
    """Every known step's budget under `cfg` (the part of the judge identity DVC reruns judge stages on)."""
    tasks = set(STEP_BUDGETS) | set((cfg or {}).get("output_budgets") or {})
    return {t: resolve_budget(t, cfg)[0] for t in sorted(tasks)}


def truncation_error(task: str, budget: int | None, source: str, finish_reason: str | None) -> str:
    """The failure reason of a cut answer, with the one-line fix (the step and the key to raise)."""
    if budget is None:  # no cap sent (the authors' exact request): the provider's own output limit cut it
        return (
            f"truncated: step {task} answer cut by the provider's output limit (finish_reason={finish_reason}; "
            f"no cap was sent: {source.split(':')[0]}); the answer cannot be longer with this model"
        )
    return (
        f"truncated: step {task} answer cut at {budget} completion tokens (finish_reason={finish_reason}; "
        f"budget from {source.split(':')[0]}); fix: raise judge.output_budgets.{task} (e.g. "
        f"-S '++judge.output_budgets.{task}={budget * 4}') and rerun"
    )


LENGTH_REASONS = frozenset({"length", "max_tokens", "MAX_TOKENS", "max_output_tokens"})
"""finish_reason / stop_reason values meaning "the output budget ran out" (OpenAI, Anthropic, Gemini)."""


def is_cut(finish_reason: str | None) -> bool:
    return finish_reason is not None and str(finish_reason) in LENGTH_REASONS
