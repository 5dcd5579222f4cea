"""`reportbench ls`: every installed benchmark, its metrics (direction, aggregation) and judge tasks are listed."""

from __future__ import annotations

import pytest

from reportbench.cli import main

pytestmark = pytest.mark.core


def test_ls_lists_benchmarks_metrics_and_tasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "benchmarks"]) == 0
    assert "deepscholar" in capsys.readouterr().out
    assert main(["ls", "metrics", "--benchmark", "deepscholar"]) == 0
    out = capsys.readouterr().out
    assert "deepscholar/citation_precision" in out and "↑" in out
    assert main(["ls", "tasks"]) == 0
    assert "prompts/deepscholar/support.yaml" in capsys.readouterr().out
