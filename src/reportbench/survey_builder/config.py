"""Typed view of the `live_researchqa:` params (conf/live_researchqa/*.yaml) that every survey-builder stage reads.

Why: the build runs unattended against rate-limited APIs and a paid generator; a typo in a knob must fail at
start-up with the key's name. Field names mirror the YAML keys. HTTP settings are the DeepScholar live
builder's own model, so both pipelines share one cache and one politeness policy.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator

from reportbench import builder_kit
from reportbench.builder_kit import HttpParams
from reportbench.builder_kit import Strict as _Strict
from reportbench.config import ConfigError

DEFAULT_BLACKLIST: tuple[str, ...] = (
    "question", "survey", "abstract", "introduction", "contribution", "related", "result", "discussion",
    "conclusion", "limitation", "appendix", "appendices", "appendixes", "supplementary", "supplemental",
    "supplement", "material", "acknowledgement", "future", "direction", "summary", "suggestion", "table", "tab.",
    "tbl.", "figure", "fig.", "plot",
)  # fmt: skip


class SourcesParams(_Strict):
    max_surveys: int | None = Field(None, ge=1, description="download at most this many e-prints (debugging)")
    max_source_mb: float = Field(50.0, gt=0)


class LatexParams(_Strict):
    cite_style: Literal["broad", "authors"] = "broad"
    split_level: Literal["section", "subsection"] = "section"


class SectionParams(_Strict):
    title_blacklist: list[str] = Field(default_factory=lambda: list(DEFAULT_BLACKLIST))
    min_sentences: int = Field(3, ge=0)
    min_chars: int = Field(800, ge=0)
    max_chars: int = Field(300_000, ge=1)
    min_citations: int = Field(3, ge=0)


class KeywordFilter(_Strict):
    past_tense: list[str] = Field(default_factory=lambda: ["did", "was", "were"])
    referring: list[str] = Field(default_factory=lambda: ["questionnaire", "literature", "the paper", "this study"])


class QueryParams(_Strict):
    min_support_sentences: int = Field(3, ge=1)
    min_self_containment: int = Field(7, ge=1, le=10)
    max_answer_variability: int = Field(4, ge=1, le=10)
    min_answer_chars: int = Field(800, ge=0)
    keyword_filter: KeywordFilter = Field(default_factory=KeywordFilter)
    min_queries_per_field: int = Field(50, ge=1)


class RubricParams(_Strict):
    information: int = Field(4, ge=0)
    depth: int = Field(2, ge=0)
    citation: int = Field(2, ge=0)
    top_k: int = Field(8, ge=1, le=8, description="the ResearchQA release holds at most 8 items per query")
    min_items: int = Field(1, ge=1)
    hallucination_check: bool = True
    title_threshold: float = Field(90.0, ge=0, le=100)
    title_batch_size: int = Field(8, ge=1, le=25)
    title_min_words: int = Field(3, ge=1)


class SplitParams(_Strict):
    test_per_field: int = Field(50, ge=1)
    valid_per_field: int = Field(10, ge=0)
    seed: int = 0


class CostParams(_Strict):
    price_in_per_mtok: float = Field(0.40, ge=0)
    price_out_per_mtok: float = Field(1.60, ge=0)


class SurveyConfig(builder_kit.BuildConfig):
    """Everything under `live_researchqa:` in params.yaml (name, created_at, licence, description, window:
    BuildConfig)."""

    generator_model: str | None = None
    fields: list[str] | None = None
    work_types: list[str] = Field(default_factory=lambda: ["review", "article", "preprint"], min_length=1)
    title_keywords: list[str] = Field(min_length=1)
    arxiv_source_id: str | None = "S4306400194"
    languages: list[str] | None = Field(default_factory=lambda: ["en"], description="OpenAlex language codes")
    max_per_field: int | None = Field(200, ge=1)
    per_page: int = Field(100, ge=1, le=200)
    survey_check: bool = True
    domain_map: dict[str, str] = Field(default_factory=dict)
    sources: SourcesParams = Field(default_factory=SourcesParams)
    latex: LatexParams = Field(default_factory=LatexParams)
    sections: SectionParams = Field(default_factory=SectionParams)
    queries: QueryParams = Field(default_factory=QueryParams)
    rubrics: RubricParams = Field(default_factory=RubricParams)
    splits: SplitParams = Field(default_factory=SplitParams)
    cost: CostParams = Field(default_factory=CostParams)
    http: HttpParams = Field(default_factory=HttpParams)

    @field_validator("fields")
    @classmethod
    def _field_ids(cls, v: list[str] | None) -> list[str] | None:
        if v is None:
            return None
        for f in v:
            if not re.fullmatch(r"(https://openalex\.org/)?fields/\d+", f):
                raise ValueError(f"{f!r} is not an OpenAlex field id like fields/17")
        return list(dict.fromkeys(f.removeprefix("https://openalex.org/") for f in v))


class SurveyConfigError(ConfigError):
    """The `live_researchqa:` params are missing or invalid; the message names the key."""


def load_survey_config(params: dict[str, Any]) -> SurveyConfig:
    return builder_kit.load_section(params, "live_researchqa", SurveyConfig, SurveyConfigError)


def work_dir(cfg: SurveyConfig, root: Path = Path(".")) -> Path:
    return builder_kit.work_dir("live_researchqa", cfg.name, root)
