"""Typed view of the `live:` params (conf/live/*.yaml): one validated object every live stage reads.

Why: the live stages run unattended for hours against rate-limited APIs; a typo in a knob must fail at
start-up with the key's name, not after the listing has been fetched. Field names mirror the YAML keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from reportbench import builder_kit
from reportbench.builder_kit import HttpParams
from reportbench.builder_kit import Strict as _Strict
from reportbench.live_builder.latex import DEFAULT_SECTION_TITLES, LatexConfig

DEFAULT_VENUE_PATTERNS: tuple[str, ...] = (
    r"\baccepted\b.{0,40}\b(at|to|by|in|for)\b",
    r"\bto appear\b.{0,20}\b(at|in)\b",
    r"\bpublished\b.{0,20}\b(at|in|as)\b",
    r"\b(camera[- ]ready)\b",
)


class VenueFilter(_Strict):
    """Keep only papers whose arXiv comment matches one of `patterns` (case-insensitive regexes)."""

    enabled: bool = False
    patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_VENUE_PATTERNS))

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, v: list[str]) -> list[str]:
        for p in v:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"venue_filter pattern {p!r} is not a valid regex: {exc}") from exc
        return v


class LatexParams(_Strict):
    """The subset of `LatexConfig` exposed as params (None = the LaTeX module's default)."""

    keep_comments: bool = True
    section_titles: list[str] | None = None
    cite_style: Literal["broad", "authors"] = "broad"
    min_section_chars: int = Field(100, ge=0)

    def to_latex_config(self) -> LatexConfig:
        return LatexConfig(
            keep_comments=self.keep_comments,
            section_titles=list(self.section_titles or DEFAULT_SECTION_TITLES),
            cite_style=self.cite_style,
            min_section_chars=self.min_section_chars,
        )


class SourcesParams(_Strict):
    max_papers: int | None = Field(None, ge=1, description="download at most this many (debugging)")
    max_source_mb: float = Field(50.0, gt=0, description="larger e-prints are recorded as failed")


class FilterParams(_Strict):
    max_words: int | None = Field(1000, ge=1, description="related-work words (whitespace split), inclusive")
    min_citations: int = Field(5, ge=0, description="distinct cite keys in the section")
    require_all_keys_resolved: bool = True
    require_titles: bool = Field(True, description="every resolved bib entry has a title")


class RecoverParams(_Strict):
    title_threshold: float = Field(90.0, ge=0, le=100, description="rapidfuzz ratio of normalised titles")
    arxiv_title_search: bool = True
    openalex_title_search: bool = True
    counts: bool = Field(True, description="fetch OpenAlex cited_by_count (Document Importance)")
    arxiv_batch_size: int = Field(100, ge=1, le=200)
    openalex_batch_size: int = Field(50, ge=1, le=100)
    title_batch_size: int = Field(8, ge=1, le=25)
    title_min_words: int = Field(3, ge=1, description="shorter titles are searched one per request")


class LabelParams(_Strict):
    important_refs: bool = True
    nuggets: bool = True
    max_nuggets: int = Field(30, ge=1)
    window: int = Field(10, ge=1, description="nuggets per score/assign call (nuggetizer)")


class LiveConfig(builder_kit.BuildConfig):
    """Everything under `live:` in params.yaml (name, created_at, licence, description, window: BuildConfig)."""

    name_key: ClassVar[str] = "live.name "

    categories: list[str] = Field(default_factory=lambda: ["cs.CL"], min_length=1)
    max_per_category: int | None = Field(200, ge=1)
    page_size: int = Field(100, ge=1, le=2000)
    v1_only: bool = True
    venue_filter: VenueFilter = Field(default_factory=VenueFilter)
    latex: LatexParams = Field(default_factory=LatexParams)
    sources: SourcesParams = Field(default_factory=SourcesParams)
    filter: FilterParams = Field(default_factory=FilterParams)
    recover: RecoverParams = Field(default_factory=RecoverParams)
    label: LabelParams = Field(default_factory=LabelParams)
    http: HttpParams = Field(default_factory=HttpParams)

    @field_validator("categories")
    @classmethod
    def _categories(cls, v: list[str]) -> list[str]:
        for c in v:
            if not re.fullmatch(r"[a-z-]+(\.[A-Za-z-]+)?", c):
                raise ValueError(f"live.categories: {c!r} is not an arXiv category like cs.CL")
        return list(dict.fromkeys(v))


class LiveConfigError(ValueError):
    """The `live:` params are missing or invalid; the message names the key."""


def load_live_config(params: dict[str, Any]) -> LiveConfig:
    """Validate `params['live']` with messages that name the offending `live.*` key."""
    return builder_kit.load_section(params, "live", LiveConfig, LiveConfigError)


def work_dir(cfg: LiveConfig, root: Path = Path(".")) -> Path:
    """live/work/<name>: intermediate stage outputs."""
    return builder_kit.work_dir("live", cfg.name, root)
