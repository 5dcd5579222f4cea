"""An unknown judge cost (`cost_usd = null`: no price for the model) is "—", never $0.0000 (issue 21 §2): in the
stage's usage summary and log line, the site's judge-usage table and the per-sample viewer."""

from __future__ import annotations

import pytest

from reportbench.judges.base import Judgment
from reportbench.judges.runner import format_usage, usage_summary
from reportbench.site.leaderboard_page import BenchmarkData, usage_html
from reportbench.site.samples import render_judgment

pytestmark = pytest.mark.core


def judgment(i: int, cost: float | None) -> Judgment:
    return Judgment(
        task="support",
        item_id=f"i{i}",
        judge_id="litellm:x/unpriced",
        value=1.0,
        raw_output="{}",
        cost_usd=cost,
        attempts=1,
    )


def test_unpriced_calls_have_unknown_cost_not_zero() -> None:
    s = usage_summary([judgment(0, None), judgment(1, None)])
    assert s["cost_usd"] is None and s["calls_unknown_cost"] == 2
    assert "cost unknown (+2 unpriced)" in format_usage(s) and "$0.0000" not in format_usage(s)
    # a known price stays a number (a partly priced run: the known part, with the unpriced count beside it)
    s = usage_summary([judgment(0, 0.002), judgment(1, None)])
    assert s["cost_usd"] == pytest.approx(0.002) and "(+1 unpriced)" in format_usage(s)
    # the offline judge is known to be free
    assert usage_summary([judgment(0, 0.0)])["cost_usd"] == 0.0


def test_site_usage_table_and_viewer_show_unknown_cost_as_dash() -> None:
    usage = {"usage/s.main.json": {"steps": {"support": {**usage_summary([judgment(0, None)]), "model": "x"}}}}
    html = usage_html(BenchmarkData(benchmark="b", release="r", metrics_rel=".", leaderboard={}, usage=usage))
    assert "0.0000" not in html and '<span class="na">—</span>' in html
    rec = {**judgment(0, None).model_dump(), "_step": "support", "_member": "main", "_ids": {}}
    viewer = render_judgment(1, rec, None)
    assert "$0.0000" not in viewer and "cost —" in viewer
    rec["cost_usd"] = 0.0123
    assert "$0.0123" in render_judgment(1, rec, None)
