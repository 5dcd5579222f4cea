"""Report adapters: read a system's output (any supported format) into a typed `Report`.

    from reportbench.reports import load_report
    report = load_report("runs/storm/0", task_id="2506.02838v1", system="storm")

Inline citations are resolved only through the report's own reference list or links.
"""

import reportbench.reports.formats  # noqa: E402, F401, I001 - registers the built-in adapters (base._REGISTRY)
from reportbench.reports.arxiv_ids import arxiv_id_from_url, extract_arxiv_ids
from reportbench.reports.base import (
    AUTO_DETECT_ORDER,
    DEFAULT_MAX_BYTES,
    ReportAdapter,
    ReportParseError,
    detect_format,
    get_adapter,
    list_formats,
    load_report,
    register_adapter,
)
from reportbench.reports.discover import DiscoveredReports, discover_reports
from reportbench.reports.sentences import build_sentences, split_sentences

__all__ = [
    "AUTO_DETECT_ORDER",
    "DEFAULT_MAX_BYTES",
    "DiscoveredReports",
    "ReportAdapter",
    "ReportParseError",
    "arxiv_id_from_url",
    "build_sentences",
    "detect_format",
    "discover_reports",
    "extract_arxiv_ids",
    "get_adapter",
    "list_formats",
    "load_report",
    "register_adapter",
    "split_sentences",
]
