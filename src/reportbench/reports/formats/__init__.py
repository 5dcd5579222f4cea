"""Built-in report adapters; importing this package registers them (see base.AUTO_DETECT_ORDER)."""

from reportbench.reports.formats import (  # noqa: F401  (imported for their registration side effect)
    deepresearcher,
    deepscholar_base,
    markdown,
    openai_deep_research,
    openscholar,
    searchai,
    storm,
)
