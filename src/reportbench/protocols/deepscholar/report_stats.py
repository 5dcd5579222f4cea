"""Paper Table 6: report statistics per system (characters, words, sentences, references, inline citations).

Definitions (spec deepscholar.md §5; the only ones that reproduce the paper's exemplar figures):
- characters = len(body), words = whitespace-split tokens of the body -- on the exemplar as shipped
  (`clean_latex_related_works`, comments kept) these give 4381.75 and 497.92 per section (paper: 4381, 497);
- sentences = the harness's sentence split of the body (the paper's 28 is not reproducible; spec §5; for the
  exemplar, LaTeX comments are not sentences: 21.75 per section);
- unique_refs = distinct citation keys cited inline; inline_citations = key occurrences per sentence summed.
Means and medians are over the system's reports (tasks without a report are not counted).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from reportbench.types import Report

STAT_NAMES = ("chars", "words", "sentences", "unique_refs", "inline_citations")


def report_stats(report: Report) -> dict[str, int]:
    return {
        "chars": len(report.body),
        "words": len(report.body.split()),
        "sentences": len(report.sentences),
        "unique_refs": len(report.cited_keys),
        "inline_citations": sum(len(s.citation_keys) for s in report.sentences),
    }


def system_report_stats(reports: Iterable[Report]) -> dict[str, Any]:
    """{"n_reports", "<stat>": {"mean", "median"}} over the reports (means rounded to 2 decimals)."""
    rows = [report_stats(r) for r in reports]
    out: dict[str, Any] = {"n_reports": len(rows)}
    for name in STAT_NAMES:
        vals = [r[name] for r in rows]
        out[name] = (
            {"mean": round(statistics.fmean(vals), 2), "median": float(statistics.median(vals))}
            if vals
            else {"mean": None, "median": None}
        )
    return out
