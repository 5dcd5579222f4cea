"""A judge step's usage names what its dollars are when nobody paid them: answers from a loopback endpoint (the
stub a docs example points `judge.api_base` at, or a self-hosted model) are priced at the model's list price, and
the usage metric, the log line and the site showed that figure as if it had been spent."""

from __future__ import annotations

from typing import Any

import pytest

from reportbench import pipeline
from reportbench.judges.base import Judgment

pytestmark = pytest.mark.core


def _judgments() -> list[Judgment]:
    return [
        Judgment(task="t", item_id=f"i{n}", judge_id="litellm:openai/gpt-4.1", model="openai/gpt-4.1", status="ok",
                 value=1.0, prompt_tokens=100, completion_tokens=10, cost_usd=0.0003, attempts=1)  # fmt: skip
        for n in range(3)
    ]


@pytest.mark.parametrize(
    ("cfg", "says_unpaid"),
    [
        ({"backend": "litellm", "api_base": "http://127.0.0.1:8765/v1", "name": "llm"}, True),
        ({"backend": "litellm", "api_base": "http://localhost:8000/v1", "name": "llm"}, True),
        ({"backend": "litellm", "api_base": "https://api.openai.com/v1", "name": "llm"}, False),
        ({"backend": "litellm", "name": "llm"}, False),
    ],
    ids=["stub", "localhost", "hosted", "provider-default"],
)
def test_loopback_answers_are_priced_but_said_unpaid(cfg: dict[str, Any], says_unpaid: bool) -> None:
    usage = pipeline._step_usage(_judgments(), {**cfg, "model": "openai/gpt-4.1"}, "coverage@b.s.main")
    assert usage["cost_usd"] == pytest.approx(0.0009)  # the figure stays: what these calls would cost
    if says_unpaid:
        assert usage["cost_basis"] == (
            f"the model's list price; answered by a loopback endpoint ({cfg['api_base']}): nothing was paid"
        )
    else:
        assert "cost_basis" not in usage


def test_site_usage_table_says_which_costs_nobody_paid() -> None:
    from reportbench.site.leaderboard_page import BenchmarkData, usage_html

    cfg = {"backend": "litellm", "api_base": "http://127.0.0.1:8765/v1", "name": "llm", "model": "openai/gpt-4.1"}
    stub = pipeline._step_usage(_judgments(), cfg, "coverage@b.s.main")
    paid = pipeline._step_usage(_judgments(), {**cfg, "api_base": "https://api.openai.com/v1"}, "coverage@b.t.main")
    usage = {"usage/s.main.json": {"steps": {"coverage": stub}}, "usage/t.main.json": {"steps": {"coverage": paid}}}
    html = usage_html(BenchmarkData(benchmark="b", release="r", metrics_rel=".", leaderboard={}, usage=usage))
    assert html.count("nothing was paid") == 1 and "cost usd of s.main coverage: the model&#x27;s list price" in html
    usage.pop("usage/s.main.json")
    html = usage_html(BenchmarkData(benchmark="b", release="r", metrics_rel=".", leaderboard={}, usage=usage))
    assert "nothing was paid" not in html and "nobody paid" not in html
