"""Opt-in checks against the real services (marker `live`). Each skips unless its key or switch is set:

- `REPORTBENCH_LIVE_MODEL` (a litellm model string) plus that provider's key, e.g. OPENAI_API_KEY;
- `REPORTBENCH_LIVE_NETWORK=1` for arXiv (no key needed);
- `OPENALEX_API_KEY` for OpenAlex citation counts.
Run with `pytest -m live`.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.live


def test_llm_judge_answers_one_support_item(repo_root: Path, tmp_path: Path) -> None:
    model = os.environ.get("REPORTBENCH_LIVE_MODEL")
    if not model:
        pytest.skip("set REPORTBENCH_LIVE_MODEL (and the provider's API key) to run")
    from reportbench.judges.factory import make_judge
    from reportbench.judges.tasks import get_task

    cfg = {
        "backend": "litellm",
        "model": model,
        "temperature": 0.0,
        "seed": 0,
        "max_tokens": 256,
        "structured_output": "auto",
        "prompts_dir": str(repo_root / "prompts"),
        "runtime": {"cache_path": str(tmp_path / "judge.sqlite"), "max_retries": 2, "timeout_s": 60},
    }
    task = get_task("support")
    judge = make_judge(task, cfg)
    inputs = task.input_model(
        claim="The Transformer dispenses with recurrence and relies entirely on attention.",
        reference="Title: Attention Is All You Need\nWe propose a new simple network architecture, the Transformer, "
        "based solely on attention mechanisms, dispensing with recurrence and convolutions entirely.",
    )
    judgment = asyncio.run(judge("live-1", inputs, {"test": "live"}))
    assert judgment.ok, judgment.error
    assert judgment.value == 1.0


def test_arxiv_lookup_by_id_through_our_session() -> None:
    if os.environ.get("REPORTBENCH_LIVE_NETWORK") != "1":
        pytest.skip("set REPORTBENCH_LIVE_NETWORK=1 to query arXiv")
    import arxiv

    from reportbench.net import make_session

    client = arxiv.Client(num_retries=2)
    client._session = make_session()  # timeouts, retries and the 3 s pacing (the client has none)
    result = next(client.results(arxiv.Search(id_list=["1706.03762"])))
    assert "Attention" in result.title


def test_openalex_count_for_an_arxiv_paper(tmp_path: Path) -> None:
    if not os.environ.get("OPENALEX_API_KEY"):
        pytest.skip("set OPENALEX_API_KEY to query OpenAlex")
    from reportbench.citations import CitationCountStore, lookup_counts

    result = lookup_counts(["1706.03762"], store=CitationCountStore(tmp_path / "c.sqlite"), offline=False)
    count = result.counts["1706.03762"]
    assert count is not None and count > 1000
