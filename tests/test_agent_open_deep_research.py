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

from agent_stubs import STUB_ENV, ScriptedLLM, SearchStub, all_text, make_request, run_adapter

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
