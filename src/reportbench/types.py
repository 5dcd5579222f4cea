"""Typed records shared by every protocol: tasks, reports, sources, citations, nuggets.

These are the nouns of docs/architecture.md. Adapters produce `Report`s, releases hold `Task`s,
`ExemplarRef`s and `Nugget`s, judges consume them and produce `Judgment`s (see judges/records.py).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ARXIV_VERSION_RE = re.compile(r"v\d+$")


def strip_arxiv_version(arxiv_id: str) -> str:
    """'2408.14476v2' -> '2408.14476'. Ids are compared version-stripped everywhere."""
    return ARXIV_VERSION_RE.sub("", arxiv_id.strip())


def system_label(system: str, variant: str | None) -> str:
    """`storm [encoder: hashed]`: a system's name with its variant tag (reportbench.agents.variant), the way every
    output that shows a score names it; the name alone when the system is the agent as published."""
    return f"{system} [{variant}]" if variant else system


class Record(BaseModel):
    """Base for all records: immutable-ish, no unknown fields, clear validation errors."""

    model_config = ConfigDict(extra="forbid", frozen=False)


class Source(Record):
    """A document a report cites or links: one entry of its reference list, or a bare link."""

    key: str = Field(description="the label the report uses for it: '4' for [4], or the URL for a bare link")
    title: str | None = None
    url: str | None = None
    arxiv_id: str | None = Field(default=None, description="version-stripped arXiv id, if any")
    doi: str | None = None
    abstract: str | None = Field(default=None, description="abstract or snippet the report's system supplied")
    raw: str | None = Field(default=None, description="the reference-list line as written")


class Sentence(Record):
    """One sentence of the report body, with the source keys its inline citations point to."""

    index: int
    text: str = Field(description="the sentence as written, citation markers included")
    claim: str = Field(description="the sentence with citation markers removed (what a judge sees)")
    citation_keys: list[str] = Field(default_factory=list, description="Source.key values, in order")
    section: str | None = Field(default=None, description="the heading this sentence sits under")


class Report(Record):
    """A system's output for one task, as the harness read it.

    `body` is the text that is judged (reference list removed). Citations are resolved only through the
    report's own reference list or links, never through the order of a system's context list.
    """

    report_id: str
    task_id: str
    system: str
    format: str = Field(description="adapter name that parsed it")
    path: str | None = None
    body: str
    sentences: list[Sentence] = Field(default_factory=list)
    sources: dict[str, Source] = Field(default_factory=dict, description="Source.key -> Source")
    unresolved_citations: list[str] = Field(
        default_factory=list, description="inline markers that match no reference-list entry or link"
    )
    warnings: list[str] = Field(default_factory=list)

    @property
    def cited_keys(self) -> list[str]:
        """Distinct source keys cited inline, first-appearance order."""
        seen: dict[str, None] = {}
        for s in self.sentences:
            for k in s.citation_keys:
                seen.setdefault(k, None)
        return list(seen)

    @property
    def retrieved_arxiv_ids(self) -> list[str]:
        """S in the DeepScholar paper: distinct version-stripped arXiv ids linked or cited in the report."""
        seen: dict[str, None] = {}
        for src in self.sources.values():
            if src.arxiv_id:
                seen.setdefault(strip_arxiv_version(src.arxiv_id), None)
        return list(seen)


class Task(Record):
    """One benchmark task: what the system is asked, and what it is compared against.

    `abstract`, `published_date` and `exemplar` are DeepScholar's (the other benchmarks have none or only a
    date); the DeepScholar importer and the release validator still require them for DeepScholar releases.
    Domains, categories and subjects go in `categories`.
    """

    task_id: str = Field(description="stable id; for DeepScholar-bench the paper's versioned arXiv id")
    title: str
    abstract: str | None = None
    published_date: str | None = Field(
        default=None, description="ISO 8601; systems must not use sources published after it"
    )
    categories: list[str] = Field(default_factory=list)
    task_prompt: str = Field(description="the exact prompt given to systems")
    exemplar: str | None = Field(default=None, description="the human-written reference answer (DeepScholar: LaTeX)")
    exemplar_raw: str | None = None


class ExemplarRef(Record):
    """A reference the exemplar cites (one row of citations.csv)."""

    task_id: str
    ref_key: str = Field(description="BibTeX cite key in the exemplar")
    position: int = Field(description="first-appearance order of the key in the exemplar")
    title: str | None = None
    arxiv_id: str | None = Field(default=None, description="version-stripped")
    abstract: str | None = None
    authors: str | None = None
    year: int | None = None
    doi: str | None = None
    url: str | None = None
    is_important: bool | None = Field(default=None, description="None when the release has no labels")


NuggetImportance = Literal["vital", "okay"]
NuggetAssignment = Literal["support", "partial_support", "not_support", "failed"]


class Nugget(Record):
    """An atomic fact of the exemplar (nuggetizer), with its self-assignment against the exemplar."""

    task_id: str
    index: int = Field(description="position in the stored list (vital first)")
    text: str
    importance: NuggetImportance
    self_assignment: NuggetAssignment | None = None


class RubricItem(Record):
    """One rubric/checklist item: ResearcherBench's weighted binary items, ResearchQA's graded items, LRB's
    checklists, DEER's hierarchical C/Q factors. The key is (task_id, item_id); aggregation is the protocol's.

    `task_id` "*" marks an item shared by every task (DEER's factors, LRB's presentation criteria p1..p10).
    """

    task_id: str = Field(description="the task it belongs to, or '*' for items every task shares")
    item_id: str = Field(description="id used in prompts and parsers: 'q3', 'C1-1', '7'")
    index: int = Field(description="order within the task (LRB: numeric checklist order, q2 before q10)")
    text: str
    weight: float = 1.0
    kind: str | None = Field(default=None, description="LRB coverage|presentation; DEER C|Q; ResearchQA types")
    group: list[str] = Field(default_factory=list, description="hierarchy path, e.g. DEER dimension/sub/element")
    meta: str | None = Field(default=None, description="JSON with anything else (citation metadata, ...)")
