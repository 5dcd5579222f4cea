"""open_deep_research: the adapter runs LangChain's LangGraph agent from the wheel, offline.

The scripted LLM plays every node through its real protocol: structured output (json_schema) for the
research brief and page summaries, tool calls for the supervisor (ConductResearch / ResearchComplete) and
the researcher (tavily_search / ResearchComplete), plain text for compression and the final report, whose
`### Sources` list is built from the URLs the search stub returned. Checks: the Tavily client went to the
search stub, the Sources list became the references, the raw pages read are recorded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_stubs import STUB_ENV, ScriptedLLM, SearchStub, agent_python, all_text, make_request, run_adapter

pytestmark = pytest.mark.integration
NEEDS_AGENT_VENV = True  # run last: CI builds the venvs in the background meanwhile (tests/conftest.py)

KIND = "open_deep_research"
QUERY = "citation accuracy of research agents"


def _schema_name(body: dict[str, Any]) -> str:
    rf = body.get("response_format") or {}
    return str((rf.get("json_schema") or {}).get("name") or "")


def odr_script(body: dict[str, Any]) -> dict[str, Any]:
    """Plays open_deep_research's nodes (see the module docstring)."""
    schema = _schema_name(body)
    if schema == "ResearchQuestion":
        return {"content": json.dumps({"research_brief": "How do research agents keep citations accurate?"})}
    if schema == "Summary":
        return {"content": json.dumps({"summary": "Agents check citations.", "key_excerpts": "checks"})}
    tools = {t["function"]["name"] for t in body.get("tools") or []}
    has_tool_result = any(m.get("role") == "tool" for m in body.get("messages") or [])
    if "ConductResearch" in tools:
        if not has_tool_result:
            return {"tool_calls": [{"name": "ConductResearch", "arguments": {"research_topic": QUERY}}]}
        return {"tool_calls": [{"name": "ResearchComplete", "arguments": {}}]}
    if "tavily_search" in tools:
        if not has_tool_result:
            return {"tool_calls": [{"name": "tavily_search", "arguments": {"queries": [QUERY]}}]}
        return {"tool_calls": [{"name": "ResearchComplete", "arguments": {}}]}
    text = all_text(body)
    urls = list(dict.fromkeys(re.findall(r"https?://127\.0\.0\.1:\d+/page/\d", text)))
    if "Based on all the research conducted" in text:
        sources = "\n".join(f"[{i}] Stub source {i}: {u}" for i, u in enumerate(urls[:2], 1))
        return {"content": "# Keeping citations accurate\n\nAgents verify each citation [1]. "
                           f"Grounding reduces errors [2].\n\n### Sources\n{sources}\n"}
    return {"content": "Findings: agents verify citations. " + " ".join(urls)}


def test_open_deep_research_adapter_end_to_end(tmp_path: Path) -> None:
    with ScriptedLLM(odr_script) as llm, SearchStub() as search:
        result, stderr = run_adapter(KIND, make_request(llm, search, tmp_path), env=STUB_ENV)
        searched = [(p, b) for p, b in search.requests if p.endswith("/search")]
        summaries = sum(1 for b in llm.chat_bodies() if _schema_name(b) == "Summary")
        stub_base = search.base_url
    assert result["outcome"] == "ok", (result, stderr[-3000:])
    assert [p for p, _ in searched] == ["/tavily/search"]
    assert searched[0][1]["query"] == QUERY and searched[0][1].get("include_raw_content") is True
    assert result["queries"] == [QUERY]
    refs = {r["n"]: r for r in result["references"]}
    assert set(refs) == {1, 2}
    assert all(r["url"].startswith(stub_base + "/page/") for r in refs.values())
    assert refs[1]["title"] == "Stub source 1"
    report = result["report_markdown"]
    assert report.count("## References") == 1 and "### Sources" not in report
    assert result["pages_read"] == sorted(f"{stub_base}/page/{i}" for i in (1, 2, 3))  # raw content, summarised
    assert summaries == 3
    assert result["agent_version"].startswith("open-deep-research ")
    assert "sk-stub-llm-key" not in stderr + str(result)


def test_split_sources_keeps_numbers_and_drops_entries_without_url() -> None:
    import importlib.util

    from agent_stubs import ADAPTERS

    spec = importlib.util.spec_from_file_location("odr_adapter", ADAPTERS / f"{KIND}.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    body, refs, skipped = mod.split_sources(
        "# T\n\nA [2]. B [3].\n\n### Sources\n[2] Two: https://a.example/2\n- [3] Three - https://b.example/3.\n"
        "[4] No link here\n\n## Appendix\nkept\n"
    )
    assert [(r["n"], r["url"], r["title"]) for r in refs] == [(2, "https://a.example/2", "Two"),
                                                            (3, "https://b.example/3", "Three")]
    assert skipped == ["[4] No link here"]
    assert "### Sources" not in body and "## Appendix\nkept" in body


# the LiveResearchBench demo's recorded pages (its `fetch_seeds`): what the agent must read, offline
DEMO_PAGES = Path(__file__).resolve().parents[1] / "data" / "demo" / "liveresearchbench" / "pages.jsonl"
DEMO_URLS = ["https://lumen-market.example/report-2025", "https://brew-prices.example/tracker",
             "https://dead-link.example/damping"]  # the last one is recorded as a 404: no text to read
PAGE_ONLY = "The Lumen teapot market reached 120 million dollars in 2025."  # in the page, never in a snippet


class DemoSearch(SearchStub):
    """A Tavily that returns the demo's recorded URLs with snippets only (no `raw_content` of its own), like a
    backend whose answer holds no page text: the page must come from the spine's fetch path."""

    def results(self, query: str, k: int) -> list[dict[str, Any]]:
        return [{"title": f"Result {i}", "url": u, "content": f"A short snippet {i} about teapots.", "score": 0.9}
                for i, u in enumerate(DEMO_URLS[:k], 1)]

    def _page_text(self, url: str) -> None:  # type: ignore[override]
        return None


def odr_demo_script(body: dict[str, Any]) -> dict[str, Any]:
    """odr_script with the demo's URLs in the final report's Sources."""
    text = all_text(body)
    if _schema_name(body) or body.get("tools") or "Based on all the research conducted" not in text:
        return odr_script(body)
    urls = [u for u in DEMO_URLS if u in text][:2]
    sources = "\n".join(f"[{i}] Demo source {i}: {u}" for i, u in enumerate(urls, 1))
    return {"content": f"# Lumen teapots\n\nThe market reached 120 million dollars [1].\n\n### Sources\n{sources}\n"}


def test_odr_on_the_lrb_demo_reads_the_recorded_pages_main_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: ODR asks Tavily for `include_raw_content` and summarises each page; the search proxy answers with
    the page's main text through the spine's fetch path (the demo's recorded pages, offline), so the text reaches
    the agent's summariser, and `pages_read` (the adapter's) equals the pages the proxy fetched. Before: the proxy
    answered with the snippet, every result counted as a page read (the 404 too) and the page text never arrived."""
    import os
    import shutil

    from reportbench.agents.runner import run_agent_system
    from reportbench.types import Task

    py = Path(os.path.abspath(agent_python(KIND)))
    home = tmp_path / "agents" / KIND  # a fresh agents home: no earlier run's record is resumed
    home.mkdir(parents=True)
    (home / "venv").symlink_to(py.parent.parent, target_is_directory=True)
    shutil.copy(py.parent.parent.parent / "lock.txt", home / "lock.txt")
    monkeypatch.setenv("REPORTBENCH_AGENTS_HOME", str(home.parent))
    task = Task(task_id="demomarketLumenTea01", title="",
                task_prompt="What is the size of the fictional Lumen teapot market in 2025?")  # fmt: skip
    with ScriptedLLM(odr_demo_script) as llm, DemoSearch() as search:
        spec = {
            "kind": KIND, "model": "openai/stub-agent", "api_base": llm.base_url, "benchmark": "liveresearchbench",
            "price": {"input_per_mtok": 1.0, "output_per_mtok": 2.0},
            "search": {"backend": "tavily", "api_base": f"{search.base_url}/tavily", "max_results": 3},
            "budget": {"llm_calls": 200, "search_calls": 50, "wall_s": 600}, "concurrency": 1,
            # what the pipeline hands an agent stage: the `fetch` params and the benchmark's recorded pages
            "_fetch": {"config": {"cache_path": str(tmp_path / "pages.sqlite")}, "seeds": [str(DEMO_PAGES)]},
        }  # fmt: skip
        run_agent_system("odr", spec, [task], tmp_path / "run")
        summarised = [all_text(b) for b in llm.chat_bodies() if _schema_name(b) == "Summary"]
        asked = [b for p, b in search.requests if p.endswith("/search")]
    record = json.loads((tmp_path / "run" / "agent" / f"{task.task_id}.json").read_text())
    assert record["outcome"] == "ok", record
    assert asked and all(b.get("include_raw_content") for b in asked)  # the proxy asked the backend for pages
    assert any(PAGE_ONLY in t for t in summarised), summarised  # the page's main text reached the agent
    fetched = [p["url"] for p in record["pages_fetched"] if "text_chars" in p]
    assert sorted(set(fetched)) == sorted(DEMO_URLS[:2]) and {p["source"] for p in record["pages_fetched"]} == {"seed"}
    assert record["pages_read"] == sorted(set(fetched))  # pages, not snippets: the 404 is not read
    assert record["usage"]["pages_fetched"] == len(fetched) and record["usage"]["pages_unread"] >= 1
