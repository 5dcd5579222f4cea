"""Every metric of every installed benchmark says what a value needs (its evidence) and which reason code it
gets without it; every reason code is documented in docs/reading-scores.md (issue 21 §2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reportbench.benchmarks import get_benchmark, installed_benchmarks
from reportbench.metrics.registry import REASON_CODES, get_metric, reason_code

pytestmark = pytest.mark.core


def test_every_metric_declares_its_evidence() -> None:
    benchmarks = installed_benchmarks()
    assert set(benchmarks) >= {"deepscholar", "deer", "researcherbench", "researchqa", "liveresearchbench"}
    for b in benchmarks:
        for name in get_benchmark(b).metric_names:
            spec = get_metric(name, b)
            assert spec.needs and spec.no_evidence in REASON_CODES, spec.key


def test_every_reason_code_is_documented(repo_root: Path) -> None:
    doc = (repo_root / "docs" / "reading-scores.md").read_text()
    for code in REASON_CODES:
        assert f"| `{code}` |" in doc, code
    for b in ("deepscholar", "deer", "researcherbench", "researchqa", "liveresearchbench"):
        assert "(reading-scores.md)" in (repo_root / "docs" / f"{b}.md").read_text(), b


def test_reason_code_reads_protocol_spellings() -> None:
    assert reason_code("not_checked: none of 3 cited URL(s) was fetched") == "not_checked"
    assert reason_code("no_counts_for_report_sources") == "no_counts"
    assert reason_code("judgment_failed") == "failed"
    assert reason_code("no checklist for this task") == "undefined"
    assert reason_code(None) == "undefined"
