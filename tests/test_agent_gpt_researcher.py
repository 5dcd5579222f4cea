"""gpt_researcher: the adapter runs GPTResearcher from the wheel offline (search, scrape, embed, write).

The scripted LLM answers gpt-researcher's prompts (agent choice JSON, sub-query list, the report); the
search stub serves Tavily results whose pages the `bs` scraper fetches from loopback; embeddings come from
the scripted server. Checks: the Tavily retriever went to the proxy URL, inline markdown-link citations to
retrieved URLs became numbered markers with a reference list, links to other URLs were left alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_stubs import STUB_ENV, ScriptedLLM, SearchStub, all_text, last_user_text, make_request, run_adapter

pytestmark = pytest.mark.integration
NEEDS_AGENT_VENV = True  # run last: CI builds the venvs in the background meanwhile (tests/conftest.py)

KIND = "gpt_researcher"
QUERIES = ["how agents verify citations", "grounding research reports"]


def gptr_script(body: dict[str, Any]) -> dict[str, Any]:
    """Plays the LLM behind gpt-researcher's prompts (picked by their wording)."""
    p = last_user_text(body)
    if p.startswith("task:"):
        return {"content": json.dumps({"server": "Research Agent", "agent_role_prompt": "You are a researcher."})}
    if "search queries to research the following task" in p:
        return {"content": json.dumps(QUERIES)}
    urls = list(dict.fromkeys(re.findall(r"https?://127\.0\.0\.1:\d+/page/\d", all_text(body))))
    if len(urls) >= 2:
        return {"content": "# Keeping citations accurate\n\nAgents verify each citation "
                           f"([Stub, 2026]({urls[0]})). Grounding reduces errors, see [this note]({urls[1]}). "
                           "Background: [unrelated](https://example.org/other).\n\n## References\n\n"
                           f"- Stub (2026). {urls[0]}\n"}
    return {"content": "stub"}


def test_gpt_researcher_adapter_end_to_end(tmp_path: Path) -> None:
    with ScriptedLLM(gptr_script) as llm, SearchStub() as search:
        # COMPRESSION_THRESHOLD 0: the embedding path, as for real pages (> 8000 chars); gpt-researcher 0.15.1's
        # fast path for small contexts prints every source as "Source: None" (docs/agents.md)
        request = make_request(llm, search, tmp_path, options={"settings": {"COMPRESSION_THRESHOLD": "0"}})
        result, stderr = run_adapter(KIND, request, env=STUB_ENV)
        searched = [p for p, _ in search.requests if p.endswith("/search")]
        pages = [p for p, _ in search.requests if p.startswith("/page/")]
        embedded = [p for p, _ in llm.requests if p.endswith("/embeddings")]
        stub_base = search.base_url
    assert result["outcome"] == "ok", (result, stderr[-3000:])
    assert searched and set(searched) == {"/tavily/search"}
    assert set(QUERIES) <= set(result["queries"])
    assert pages and embedded  # the scraper read pages from loopback; compression embedded them
    assert set(result["pages_read"]) <= {f"{stub_base}/page/{i}" for i in (1, 2, 3)} and result["pages_read"]
    report = result["report_markdown"]
    refs = {r["n"]: r["url"] for r in result["references"]}
    assert set(refs) == {1, 2}
    assert "Agents verify each citation [1]." in report
    assert "see this note [2]." in report
    assert "[unrelated](https://example.org/other)" in report  # never mapped: the agent did not retrieve it
    assert report.count("## References") == 1 and "- Stub (2026)" not in report
    assert result["agent_version"].startswith("gpt-researcher ")
    assert "sk-stub-llm-key" not in stderr + str(result)
