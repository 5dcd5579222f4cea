"""Opt-in check of the survey listing against the real OpenAlex API (marker `live`): skips unless
`REPORTBENCH_LIVE_NETWORK=1` (OpenAlex asks for `OPENALEX_API_KEY` / `OPENALEX_MAILTO` for list queries).
Run with `pytest -m live tests/test_survey_builder_live.py`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.live


def test_openalex_lists_recent_surveys_with_an_arxiv_copy(repo_root: Path, tmp_path: Path) -> None:
    if os.environ.get("REPORTBENCH_LIVE_NETWORK") != "1":
        pytest.skip("set REPORTBENCH_LIVE_NETWORK=1 (and OPENALEX_API_KEY) to query OpenAlex")
    from reportbench.config import composed_params
    from reportbench.survey_builder.config import load_survey_config
    from reportbench.survey_builder.stages import open_session
    from reportbench.survey_builder.surveys import list_surveys

    params = composed_params(
        ["live_researchqa=default", "live_researchqa.max_per_field=5", "live_researchqa.fields=[fields/17]",
         "live_researchqa.window.start=2025-03-01", "live_researchqa.window.end=2025-03-31"],
        conf_dir=repo_root / "conf",
    )  # fmt: skip
    params["live_researchqa"]["http"]["cache_dir"] = str(tmp_path / "http")
    cfg = load_survey_config(params)
    with open_session(cfg, tmp_path) as session:
        listed, out = list_surveys(cfg, session, api_key=cfg.http.api_key(), mailto=cfg.http.mailto())
    assert not out.errors, out.errors
    assert listed or out.drops
    for s in listed:
        assert s.arxiv_id and s.subdomain == "Computer Science" and "2025-03-01" <= s.publication_date <= "2025-03-31"
