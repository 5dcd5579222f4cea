"""DeepScholar-bench protocol (Patel et al., arXiv 2508.20033 v2): related-work sections with citations.

- `items`: what each judge task must judge for a (task, report): organization, nugget_assign, relevance,
  support. `build_items(task, report, release_ctx, params)` returns all of them.
- `benchmark`: `BENCHMARK`, the spine's view (release kinds, judge steps, score) — reportbench.benchmarks.
- `tasks`: `citation_support`, Cite-P's at-least-one-claim judge task (registered on import).
- `sources`: title + abstract of every cited arXiv id (release corpus, cache, arXiv API in batches).
- `report_stats`: Table 6's report statistics; `labelling`: importance labels for an imported release.
- `metrics`: the seven metrics per report (`score_report`) and per system (`score_system`), paper
  definitions by default with `mode: code` switches for the authors' shipped code.
"""

from reportbench.protocols.deepscholar import tasks as _tasks  # noqa: F401  (registers citation_support)
from reportbench.protocols.deepscholar.benchmark import BENCHMARK
from reportbench.protocols.deepscholar.items import (
    DeepScholarParams,
    ReleaseContext,
    build_items,
    count_lookup_ids,
    nugget_items,
    organization_items,
    relevance_items,
    support_items,
)
from reportbench.protocols.deepscholar.metrics import METRIC_NAMES, SystemScores, score_report, score_system

__all__ = [
    "BENCHMARK",
    "METRIC_NAMES",
    "DeepScholarParams",
    "ReleaseContext",
    "SystemScores",
    "build_items",
    "count_lookup_ids",
    "nugget_items",
    "organization_items",
    "relevance_items",
    "score_report",
    "score_system",
    "support_items",
]
