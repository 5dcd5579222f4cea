"""Live release builder: turn fresh arXiv e-print sources into exemplars (LaTeX side).

`safe_extract` unpacks untrusted e-print bytes without letting them write outside a target folder;
`latex` finds the main file, the related-work section, its cite keys and their bibliography entries.
"""

from reportbench.live_builder.latex import (
    BibEntry,
    ExtractedPaper,
    LatexConfig,
    clean_section,
    extract_cite_keys,
    extract_paper,
    find_related_work,
    parse_bbl,
    parse_bib,
    remove_comments,
)
from reportbench.live_builder.safe_extract import (
    ExtractionError,
    ExtractLimits,
    ExtractResult,
    SkippedMember,
    extract_source,
)

__all__ = [
    "BibEntry",
    "ExtractLimits",
    "ExtractResult",
    "ExtractedPaper",
    "ExtractionError",
    "LatexConfig",
    "SkippedMember",
    "clean_section",
    "extract_cite_keys",
    "extract_paper",
    "extract_source",
    "find_related_work",
    "parse_bbl",
    "parse_bib",
    "remove_comments",
]
