"""Batch mode through the real stages: ResearcherBench's three chained judge steps (rubric, claim extraction,
verification of the extracted claims) in batch mode give every judgment, derived table and metric of the
online run, and a second batch run over the same cache sends nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reportbench.stub_server import stub_server_thread
from spine_helpers import run_benchmark
from test_researcherbench_stub import _params, _snapshot, responder

pytestmark = [
    pytest.mark.integration,
    pytest.mark.filterwarnings("ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"),
]


def _run(repo_root: Path, out: Path, mode: str, server: Any) -> Path:
    params = _params(repo_root, server.base_url, max_retries=2)
    params["judge"]["runtime"].update(
        {
            "mode": mode,
            "cache_path": str(out / "cache" / "judge.sqlite"),
            "batch": {"poll_interval_s": 0.05, "quiet_s": 0.05},
        }
    )
    return run_benchmark(params, "researcherbench", out)


def test_batch_mode_metrics_equal_the_online_run(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(repo_root)
    with stub_server_thread(responder=responder, batch_delay_s=0.1) as s:
        online = _snapshot(_run(repo_root, tmp_path / "online", "online", s))
        online_calls = s.counts["requests"]
        s.reset_counts()
        batch = _snapshot(_run(repo_root, tmp_path / "batch", "batch", s))
        assert s.counts["requests"] == 0 and s.counts["batch_lines"] == online_calls
        # one batch per judge step and system (the steps are chained: claims feed verification)
        assert s.counts["batches_created"] >= 3
        assert batch == online
        s.reset_counts()
        again = _snapshot(_run(repo_root, tmp_path / "batch", "batch", s))
        assert s.counts["batches_created"] == 0 and s.counts["requests"] == 0
        assert again == online
