"""The offline backend: deterministic lexical rules standing in for an LLM judge (judge card:
docs/offline-judge.md).

Why it exists: `dvc repro` and CI must run end to end with no key and no network, and a cheap floor
baseline is useful in calibration. Why it must not be trusted: it measures lexical support, not
entailment, and rewards extractive copying. Never publish leaderboards from it.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reportbench.bounds import InputTooLargeError
from reportbench.judges.base import JudgeInput, JudgeTask, Judgment, dump_parsed
from reportbench.judges.lexical import SupportParams
from reportbench.prompts import PromptError, load_prompt

OFFLINE_JUDGE_ID = "offline-lexical-v1"
SEMANTIC_JUDGE_ID = "offline-lexsem-v1/minilm-l6-v2-onnx-int8"

# Starting points chosen on small dev splits (self-authored pairs; half of the DeepScholar papers), see
# docs/offline-judge.md. Not fitted against an LLM judge: recalibrate before reading anything into them.
DEFAULT_OFFLINE_PARAMS: dict[str, dict[str, Any]] = {
    # S(h, w) = sqrt(recall) · (w·tfidf_cos + (1−w)·token_set) · (1 − guard), max over windows.
    "lexical": {
        "tfidf_weight": 0.5,  # share of TF-IDF cosine (vs rapidfuzz token_set) in the lexical similarity
        "window_sentences": 2,  # windows of 1..N consecutive source sentences
        "number_guard": 1.0,  # claim quantity absent from the source
        "negation_guard": 1.0,  # negation-cue count differs between claim and window
        "absolute_guard": 0.5,  # claim says first/all/only/always/best..., the source never does
    },
    "support": {"threshold": 0.27},  # supported if S >= threshold
    # support if S >= support, partial if >= partial; max_window_scores bounds one item's work (bounds.py)
    "nugget_assign": {"support": 0.27, "partial": 0.18, "max_window_scores": 200_000},
    "relevance": {"score2": 0.45, "score1": 0.30},  # graded by the combined lexical relevance r
    "organization": {"redundancy_cosine": 0.8, "max_headings": 4, "max_sentences": 1000},  # bounds.py
    "nugget_create": {"min_words": 6, "split_min_words": 5, "dedupe_ratio": 90.0},
    "nugget_score": {"top_terms": 15, "min_top_terms": 3},  # vital if cited or >= min of the top terms
    # judge=offline_semantic (judges/semantic.py): MiniLM cosine combined with the lexical score L = sqrt(rec)·tfidf.
    # Off here; conf/judge/offline_semantic.yaml turns it on with the set fitted on the probe's fit half.
    "semantic": {
        "enabled": False,
        "lexical_weight": 0.7,
        "cosine_floor": 0.6,
        "candidates": 2,
        "cascade": True,
        "cascade_low": 0.05,
        "cascade_high": 0.25,
    },
    "important_reference": {
        "min_mentions": 2,  # cited in >= this many related-work sentences -> important
        "overlap": 0.20,  # cited once and lexical overlap with the paper >= this -> important
        "overlap_unlocated": 0.45,  # never located in the related work, but overlap >= this -> important
    },
}


# resource bounds (reportbench.bounds), kept out of judge_id
BOUND_PARAMS = frozenset({"max_sentences", "max_window_scores"})


def resolve_params(overrides: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Defaults deep-merged with `overrides` (same two-level shape); unknown names are errors.

    A typo in a threshold name must fail loudly, not silently keep the default.
    """
    merged = copy.deepcopy(DEFAULT_OFFLINE_PARAMS)
    for section, values in (overrides or {}).items():
        if section not in merged:
            raise ValueError(f"unknown offline param section {section!r}; known: {sorted(merged)}")
        if not isinstance(values, Mapping):
            raise ValueError(f"offline params [{section}] must be a mapping, got {type(values).__name__}")
        for key, value in values.items():
            if key not in merged[section]:
                raise ValueError(f"unknown offline param {section}.{key}; known: {sorted(merged[section])}")
            merged[section][key] = value
    return merged


def support_params(params: Mapping[str, Any]) -> SupportParams:
    lex = resolve_params({"lexical": params.get("lexical", {})})["lexical"]
    sem = resolve_params({"semantic": params.get("semantic", {})})["semantic"]
    semantic = tuple(sorted((k, v) for k, v in sem.items() if k != "enabled")) if sem["enabled"] else None
    return SupportParams(
        semantic=semantic,
        tfidf_weight=float(lex["tfidf_weight"]),
        window_sentences=int(lex["window_sentences"]),
        number_guard=float(lex["number_guard"]),
        negation_guard=float(lex["negation_guard"]),
        absolute_guard=float(lex["absolute_guard"]),
    )


def section_params(params: Mapping[str, Any], section: str) -> dict[str, Any]:
    """One task's thresholds with defaults filled in (task rules may be called with {} in tests)."""
    return resolve_params({section: params.get(section, {})})[section]


class OfflineJudge:
    """`Judge` protocol implementation that applies `task.offline` (no model, no network, no cache)."""

    judge_id = OFFLINE_JUDGE_ID

    def __init__(self, task: JudgeTask, cfg: Mapping[str, Any] | None = None) -> None:
        cfg = cfg or {}
        self.task = task
        self.params = resolve_params(cfg.get("offline") or {})
        # The threshold set is part of the judge's identity: records from `offline` and `offline_strict`
        # (or any -S judge.offline... ablation) must be distinguishable.
        # The semantic section enters the digest only when it is on, so lexical judge ids stay as they were.
        semantic_on = bool(self.params["semantic"]["enabled"])
        hashed = self.params if semantic_on else {k: v for k, v in self.params.items() if k != "semantic"}
        # size bounds decide whether an answer exists, never what it is: not part of the judge's identity
        hashed = {k: {n: x for n, x in v.items() if n not in BOUND_PARAMS} for k, v in hashed.items()}
        digest = hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:8]
        base = SEMANTIC_JUDGE_ID if semantic_on else OFFLINE_JUDGE_ID
        self.judge_id = f"{base}+thr-{digest}"
        cache_path = (cfg.get("runtime") or {}).get("cache_path")
        if semantic_on and cache_path:  # embeddings persist next to the response cache (operational, not a param)
            # lazy: +243 ms to import (python -X importtime)
            from reportbench.judges.semantic import configure_disk_cache

            configure_disk_cache(Path(cache_path).with_name("embeddings.sqlite"))
        try:
            template = load_prompt(task.prompt_id, cfg.get("prompts_dir", "prompts"))
            self.prompt_id: str | None = template.prompt_id
            self.prompt_hash: str | None = template.sha256
        except PromptError:
            self.prompt_id, self.prompt_hash = None, None

    async def __call__(self, item_id: str, inputs: JudgeInput, input_ids: dict[str, str]) -> Judgment:
        return self.judge_now(item_id, inputs, input_ids)

    def judge_now(self, item_id: str, inputs: JudgeInput, input_ids: dict[str, str]) -> Judgment:
        """The same Judgment as awaiting the judge, computed here: the rule never awaits, so the runner judges a
        stage's items in a plain loop (runner.run_judgments_sync) instead of an event loop and workers."""
        if not isinstance(inputs, self.task.input_model):
            raise TypeError(
                f"task {self.task.name!r} expects {self.task.input_model.__name__}, got {type(inputs).__name__}"
            )
        record: dict[str, Any] = {
            "task": self.task.name,
            "item_id": item_id,
            "input_ids": dict(input_ids),
            "judge_id": self.judge_id,
            "model": self.judge_id.split("+thr-")[0],
            "prompt_id": self.prompt_id,
            "prompt_hash": self.prompt_hash,
            "cache_hit": False,
            "attempts": 1,
            # No model call: tokens and dollars are known to be zero (not unknown), and latency is left at 0 so
            # offline judgment files are byte-identical across runs (DVC sees no change when nothing changed).
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
        }
        try:
            verdict = self.task.offline(inputs, self.params)
        except InputTooLargeError as exc:  # a size bound (reportbench.bounds): the item's value is undefined with
            # this reason (errors.failure_class: `undefined`), never a failure that a retry could change
            return Judgment(**record, status="failed", error=f"too_large: {exc}")
        except Exception as exc:  # a rule bug on odd input is recorded as a failure, never a crash
            return Judgment(
                **record,
                status="failed",
                error=f"internal: offline rule raised {type(exc).__name__}: {exc}",
            )
        output = verdict.output
        signals = ", ".join(f"{k}={v:.4f}" for k, v in verdict.signals.items())
        explanation = verdict.explanation + (f" [signals: {signals}]" if signals else "")
        return Judgment(
            **record,
            status="ok",
            value=output.value(),
            label=output.label(),
            parsed=dump_parsed(output),
            explanation=explanation,
        )
